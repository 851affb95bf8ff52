package eval

import (
	"context"
	"testing"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/benchgen"
	"github.com/chockhq/chock/internal/rounds"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// minimalQuery prepares benchgen's minimal policy of n rules.
func minimalQuery(b *testing.B, n int) rego.PreparedEvalQuery {
	m, err := ast.ParseModuleWithOpts("min.rego", benchgen.Minimal(n), ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		b.Fatal(err)
	}
	pq, err := rego.New(rego.Query("data.min.decision"), rego.ParsedModule(m)).PrepareForEval(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return pq
}

// BenchmarkDecisionVsMinimal interleaves, round by round in one process,
// a full uncached decision through the engine (the action checked,
// data.chock.core asked, the decision filled in from the bundle's meta
// and cached) with one evaluation of the minimal hand-written policy of
// the same 10,000 rules (one rule per pattern, the same conditions, the
// smallest [specificity key, rank, order] deciding; its inputs built
// beforehand), over the same 200 actions. layers=1 is the project alone,
// layers=3 the project under two org ceilings of 1,000 rules each, the
// minimal policy still one layer.
func BenchmarkDecisionVsMinimal(b *testing.B) {
	const n = 10000
	acts := benchgen.Actions(n)
	minimal := minimalQuery(b, n)
	inputs := make([]ast.Value, len(acts))
	for i, a := range acts {
		inputs[i] = ast.NewObject([2]*ast.Term{ast.InternedTerm("action"), ast.StringTerm(a)})
	}
	ctx := context.Background()
	for _, c := range []struct {
		name string
		orgs []string
	}{
		{"layers=1", nil},
		{"layers=3", []string{benchgen.Org("acme", 1000, 1), benchgen.Org("beta", 1000, 3)}},
	} {
		e, _ := build(b, benchgen.Policy(n), c.orgs...)
		b.Run(c.name, func(b *testing.B) {
			p := e.cur.Load()
			r := rounds.Calls(b, len(acts),
				func(i int) {
					if i == 0 {
						p.decisions.mu.Lock()
						p.decisions.m = nil // every decision of the round is asked afresh
						p.decisions.mu.Unlock()
					}
					if _, err := e.Decide(ctx, acts[i], config.Loop); err != nil {
						b.Fatal(err)
					}
				},
				func(i int) {
					if rs, err := minimal.Eval(ctx, rego.EvalParsedInput(inputs[i])); err != nil || len(rs) != 1 {
						b.Fatal(rs, err)
					}
				})
			r.Report(b, "engine/minimal", "engine-ns/op", "minimal-ns/op")
		})
	}
}
