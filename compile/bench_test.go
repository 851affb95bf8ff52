package compile

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// genPolicy makes a project policy of n rules: literal programs, tools of
// many servers, host prefixes and tool wildcards, in equal parts.
func genPolicy(n int) string {
	var b strings.Builder
	b.WriteString(".{ .policy = .{ .rules = .{\n")
	decisions := []string{"allow", "ask", "deny"}
	for i := 0; i < n; i++ {
		var pat string
		switch i % 4 {
		case 0:
			pat = fmt.Sprintf("exec.path.tool%d", i)
		case 1:
			pat = fmt.Sprintf("mcp.server%d.tool.op%d", i%40, i)
		case 2:
			pat = fmt.Sprintf("net.fetch.com.example%d.*", i)
		default:
			pat = fmt.Sprintf("mcp.*.tool.op%d", i)
		}
		fmt.Fprintf(&b, "    .{ .action = %q, .decision = .%s },\n", pat, decisions[i%3])
	}
	b.WriteString("} } }\n")
	return b.String()
}

// benchActions is a fixed workload: exact hits, wildcard hits and misses.
func benchActions(n int) []string {
	var out []string
	for i := 0; i < 200; i++ {
		k := (i * 7919) % n
		switch i % 5 {
		case 0:
			out = append(out, fmt.Sprintf("exec.path.tool%d", k-k%4))
		case 1:
			out = append(out, fmt.Sprintf("mcp.server%d.tool.op%d", (k-k%4+1)%40, k-k%4+1))
		case 2:
			out = append(out, fmt.Sprintf("net.fetch.com.example%d.www", k-k%4+2))
		case 3:
			out = append(out, fmt.Sprintf("mcp.s%d.tool.op%d", i, k-k%4+3))
		default:
			out = append(out, fmt.Sprintf("exec.path.missing%d", i))
		}
	}
	return out
}

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
