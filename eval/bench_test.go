package eval

import (
	"context"
	"testing"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/chockhq/chock/internal/benchgen"
	"github.com/chockhq/chock/internal/rounds"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// forget empties the decision cache, so that the next decision is asked
// afresh (a benchmark's workload may ask an action twice).
func (p *prepared) forget() {
	p.decisions.mu.Lock()
	p.decisions.m = nil
	p.decisions.mu.Unlock()
}

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
// and cached; the cache is emptied before every call) with one
// evaluation of the minimal hand-written policy of the same 10,000 rules
// (one rule per pattern, the same conditions, the smallest [specificity
// key, rank, order] deciding; its inputs built beforehand), over the same
// 200 actions. layers=1 is the project alone,
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
					p.forget()
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

// BenchmarkDecisionScale interleaves, round by round in one process, a
// full uncached engine decision at 10,000 rules with one at 10 rules
// (benchgen's workload for each), and the native matcher's at the same
// two sizes: a decision should cost the same however many rules there
// are.
func BenchmarkDecisionScale(b *testing.B) {
	ctx := context.Background()
	type side struct {
		e    *Engine
		ev   *native.Evaluator
		acts []string
		pars []action.Action
	}
	sides := map[int]*side{}
	for _, n := range []int{10, 10000} {
		e, c := build(b, benchgen.Policy(n))
		s := &side{e: e, ev: native.New(c, nil), acts: benchgen.Actions(n)}
		for _, a := range s.acts {
			p, _ := action.ParseAction(a)
			s.pars = append(s.pars, p)
		}
		sides[n] = s
	}
	engine := func(s *side) func(int) {
		p := s.e.cur.Load()
		return func(i int) {
			p.forget()
			if _, err := s.e.Decide(ctx, s.acts[i], config.Loop); err != nil {
				b.Fatal(err)
			}
		}
	}
	matcher := func(s *side) func(int) {
		return func(i int) { s.ev.Decide(s.pars[i], config.Loop) }
	}
	b.Run("engine", func(b *testing.B) {
		rounds.Calls(b, 200, engine(sides[10000]), engine(sides[10])).Report(b, "10000/10", "rules=10000-ns/op", "rules=10-ns/op")
	})
	b.Run("native", func(b *testing.B) {
		rounds.Calls(b, 200, matcher(sides[10000]), matcher(sides[10])).Report(b, "10000/10", "rules=10000-ns/op", "rules=10-ns/op")
	})
}
