package compile

import "github.com/chockhq/chock/internal/benchgen"

// genPolicy is the generated policy the tests share with the benchmarks
// (BenchmarkCompilePrepareVsOPABuild here, eval's decision benchmarks).
func genPolicy(n int) string { return benchgen.Policy(n) }
