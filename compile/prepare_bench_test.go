package compile_test

import (
	"context"
	"github.com/chockhq/chock/internal/stockopa"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/internal/benchgen"
	"github.com/chockhq/chock/internal/rounds"
)

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCompilePrepareVsOPABuild interleaves, round by round, the
// compile and prepare of a 10,000-rule policy (compile.Compile and
// eval.FromOutput: every query prepared, the probe asked) with `opa build`
// of the same modules and data (the opa command built from go.mod's
// version), each in the CPU time it takes (user and system; opa's as a
// child process). The policy is decoded once, beforehand.
func BenchmarkCompilePrepareVsOPABuild(b *testing.B) {
	opa := stockopa.Binary(b)
	c, ds := config.Load("gen.zon", []byte(benchgen.Policy(10000)))
	if ds.HasErrors() {
		b.Fatal(ds)
	}
	first, err := compile.Compile(compile.Input{Config: c})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	rego := filepath.Join(dir, "rego")
	if err := first.WriteRego(rego); err != nil {
		b.Fatal(err)
	}
	first = nil
	ctx := context.Background()
	var chockWall, opaWall []float64
	r := rounds.Run(b, 5,
		func() float64 {
			runtime.GC()
			t0, w0 := cpuTime(), time.Now()
			res, err := compile.Compile(compile.Input{Config: c})
			if err != nil {
				b.Fatal(err)
			}
			e, err := eval.FromOutput(ctx, res)
			if err != nil {
				b.Fatal(err)
			}
			used := cpuTime() - t0
			chockWall = append(chockWall, time.Since(w0).Seconds())
			runtime.KeepAlive(e)
			return used.Seconds()
		},
		func() float64 {
			cmd := exec.Command(opa, "build", "-b", rego, "-o", filepath.Join(dir, "opa.tar.gz"))
			w0 := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("opa build: %v\n%s", err, out)
			}
			opaWall = append(opaWall, time.Since(w0).Seconds())
			return (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		})
	b.ReportMetric(r.Ratio, "chock/opa-build")
	b.ReportMetric(r.A*1000, "chock-cpu-ms")
	b.ReportMetric(r.B*1000, "opa-build-cpu-ms")
	b.ReportMetric(rounds.Median(chockWall)*1000, "chock-wall-ms")
	b.ReportMetric(rounds.Median(opaWall)*1000, "opa-build-wall-ms")
	b.ReportMetric(float64(r.N), "rounds")
}
