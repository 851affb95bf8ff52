package lint

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/chockhq/chock/diag"
)

// everyAction lists every action of up to n segments over words and one
// segment no pattern names: by the region argument (package region), an
// exact check over patterns of at most n-1 segments of these words is
// right on all of them exactly when it is right on every action.
func everyAction(words []string, n int) []action.Action {
	alphabet := append(append([]string(nil), words...), "zz")
	var out []action.Action
	var grow func(a action.Action)
	grow = func(a action.Action) {
		if len(a) > 0 {
			out = append(out, append(action.Action(nil), a...))
		}
		if len(a) == n {
			return
		}
		for _, w := range alphabet {
			grow(append(a, w))
		}
	}
	grow(nil)
	return out
}

// TestRegionChecksAgainstBruteForce: on random policies with random org
// ceilings, rule-redundant names exactly the rules whose removal changes
// no decision of their layer on any action, and rule-dead-by-org exactly
// the project rules (not deny, not redundant) that decide some action and
// on every action they decide are lowered by an org.
func TestRegionChecksAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 17))
	words := []string{"exec", "path", "gh", "x"}
	actions := everyAction(words, 4)
	// The fs namespaces, which every layer's catch-all allow decides when
	// no rule of the words names them.
	for _, tail := range append(words, "zz", "~/x", ".git/config") {
		for _, verb := range []string{"read", "write"} {
			actions = append(actions, action.Action{"fs", verb, tail})
		}
	}
	pattern := func() action.Pattern {
		for {
			segs := make([]string, 1+r.IntN(3))
			for i := range segs {
				if r.IntN(3) == 0 {
					segs[i] = "*"
				} else {
					segs[i] = words[r.IntN(len(words))]
				}
			}
			if p, err := action.ParsePattern(strings.Join(segs, ".")); err == nil {
				return p
			}
		}
	}
	policy := func(file string, rules int) config.Policy {
		var p config.Policy
		if r.IntN(2) == 0 {
			p.Default = config.Field[config.Decision]{Value: config.Decision(r.IntN(3)), Set: true}
		}
		seen := map[string]bool{}
		for i := 0; i < rules; i++ {
			pat := pattern()
			if seen[pat.String()] {
				continue // repeats are rule-repeated's
			}
			seen[pat.String()] = true
			p.Rules = append(p.Rules, &config.Rule{Pattern: pat, Decision: config.Decision(r.IntN(3)), Span: diag.Span{File: file, Start: diag.Pos{Line: i + 1, Col: 1}}})
		}
		return p
	}
	without := func(p *config.Policy, skip *config.Rule) *config.Policy {
		q := *p
		q.Rules = nil
		for _, x := range p.Rules {
			if x != skip {
				q.Rules = append(q.Rules, x)
			}
		}
		return &q
	}
	checked := 0
	for round := 0; round < 400; round++ {
		c := &config.Config{File: "chock.zon", Policy: policy("chock.zon", 1+r.IntN(8))}
		var orgs []*config.Org
		for i := 0; i < r.IntN(3); i++ {
			orgs = append(orgs, &config.Org{File: "org.zon", Name: config.Text{Value: []string{"a", "b"}[i]}, Policy: policy("org.zon", 1+r.IntN(4))})
		}
		got := map[string]map[int]bool{}
		for _, d := range Run(Input{Config: c, Orgs: orgs}) {
			if (d.Code == CodeRuleRedundant || d.Code == CodeRuleDeadByOrg) && d.Span.File == "chock.zon" {
				if got[d.Code] == nil {
					got[d.Code] = map[int]bool{}
				}
				got[d.Code][d.Span.Start.Line] = true
			}
		}
		layers := []*config.Policy{&c.Policy}
		for _, o := range orgs {
			layers = append(layers, &o.Policy)
		}
		// rule-redundant, in the project layer.
		for _, rule := range c.Policy.Rules {
			full, cut := native.NewLayer("project", "project", "", &c.Policy), native.NewLayer("project", "project", "", without(&c.Policy, rule))
			want := true
			for _, a := range actions {
				if d1, _ := full.Decide(a); d1 != func() config.Decision { d, _ := cut.Decide(a); return d }() {
					want = false
					break
				}
			}
			if got[CodeRuleRedundant][rule.Span.Start.Line] != want {
				t.Fatalf("round %d: %q redundant: lint says %v, brute force %v\n%v", round, rule.Pattern, !want, want, describe(layers))
			}
			checked++
			if want || rule.Decision == config.Deny || len(orgs) == 0 {
				if got[CodeRuleDeadByOrg][rule.Span.Start.Line] {
					t.Fatalf("round %d: %q is dead by org, but redundant, deny or without orgs", round, rule.Pattern)
				}
				continue
			}
			decides, dead := false, true
			for _, a := range actions {
				if _, by := full.Decide(a); by != rule {
					continue
				}
				decides = true
				low := config.Allow
				for _, o := range orgs {
					if d, _ := native.NewLayer("org", "o", "", &o.Policy).Decide(a); d < low {
						low = d
					}
				}
				if low >= rule.Decision {
					dead = false
					break
				}
			}
			want = decides && dead
			if got[CodeRuleDeadByOrg][rule.Span.Start.Line] != want {
				t.Fatalf("round %d: %q dead by org: lint says %v, brute force %v\n%v", round, rule.Pattern, !want, want, describe(layers))
			}
		}
	}
	t.Logf("%d rules checked against every action of up to 4 segments", checked)
}

func describe(layers []*config.Policy) string {
	var b strings.Builder
	for i, p := range layers {
		b.WriteString("layer ")
		b.WriteString(string(rune('0' + i)))
		b.WriteString(" default ")
		b.WriteString(p.Default.Value.String())
		for _, r := range p.Rules {
			b.WriteString(", " + r.Decision.String() + " " + r.Pattern.String())
		}
		b.WriteString("\n")
	}
	return b.String()
}
