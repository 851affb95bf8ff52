package compile

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/chockhq/chock/internal/benchgen"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

func genPolicy(n int) string { return benchgen.Policy(n) }

func benchActions(n int) []string { return benchgen.Actions(n) }

func compileGen(b *testing.B, n int) (Input, *Output) {
	c, ds := config.Load("gen.zon", []byte(genPolicy(n)))
	if ds.HasErrors() {
		b.Fatal(ds)
	}
	in := Input{Config: c}
	out, err := Compile(in)
	if err != nil {
		b.Fatal(err)
	}
	return in, out
}

// BenchmarkDecision is one data.chock.decision through embedded OPA, and
// the native matcher beside it, at 10, 1,000 and 10,000 rules.
func BenchmarkDecision(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		in, out := compileGen(b, n)
		pq := opaQuery(b, out, "data.chock.decision")
		out = nil // only the prepared query stays alive, as in a running engine
		runtime.GC()
		acts := benchActions(n)
		b.Run(fmt.Sprintf("opa/rules=%d", n), func(b *testing.B) {
			inputs := make([]ast.Value, len(acts))
			for i, a := range acts {
				inputs[i] = ast.NewObject(ast.Item(ast.StringTerm("action"), ast.StringTerm(a)), ast.Item(ast.StringTerm("phase"), ast.StringTerm("loop")))
			}
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				rs, err := pq.Eval(ctx, rego.EvalParsedInput(inputs[i%len(inputs)]))
				if err != nil || len(rs) != 1 {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("native/rules=%d", n), func(b *testing.B) {
			ev := native.New(in.Config, nil)
			parsed := make([]action.Action, len(acts))
			for i, a := range acts {
				parsed[i], _ = action.ParseAction(a)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ev.Decide(parsed[i%len(parsed)], config.Loop)
				i++
			}
		})
	}
}

// BenchmarkCompilePrepare10000 compiles a 10,000-rule policy and prepares
// the OPA query, reporting the live heap it leaves.
func BenchmarkCompilePrepare10000(b *testing.B) {
	c, ds := config.Load("gen.zon", []byte(genPolicy(10000)))
	if ds.HasErrors() {
		b.Fatal(ds)
	}
	b.ReportAllocs()
	var heap uint64
	for b.Loop() {
		out, err := Compile(Input{Config: c})
		if err != nil {
			b.Fatal(err)
		}
		pq := opaQuery(b, out, "data.chock.decision")
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = ms.HeapAlloc
		runtime.KeepAlive(pq)
	}
	b.ReportMetric(float64(heap)/(1<<20), "MiB-live")
}
