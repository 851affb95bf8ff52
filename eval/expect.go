package eval

import (
	"context"
	"fmt"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
)

// ExpectResult is the outcome of one .expect entry.
type ExpectResult struct {
	Expect *config.Expectation
	Got    *Decision
	// Failure says what differed; empty when the expectation holds.
	Failure string
}

// Passed reports whether the expectation held.
func (r ExpectResult) Passed() bool { return r.Failure == "" }

// RuleRef identifies a rule of a layer for coverage.
type RuleRef struct {
	Layer, Name string
	Rule        RuleMeta
}

// RunExpectations decides every expectation of cfg and compares: the
// decision, and when given the deciding layer ("project" or the org's
// name) and the deciding rule's pattern ("default" for a default). It
// also returns the rules no expectation exercised (decided a layer).
func RunExpectations(ctx context.Context, e *Engine, cfg *config.Config) ([]ExpectResult, []RuleRef, error) {
	type key struct {
		layer, name, pattern string
		at                   diag.Pos
	}
	used := map[key]bool{}
	var out []ExpectResult
	for _, x := range cfg.Expect {
		d, err := e.decideArgs(ctx, x.Action.Value, x.Args(), x.Phase.Value, true)
		if err != nil {
			return nil, nil, err
		}
		for _, l := range d.Layers {
			if l.Rule != nil {
				used[key{l.Layer, l.Name, l.Rule.Pattern, l.Rule.Span.Start}] = true
			}
		}
		r := ExpectResult{Expect: x, Got: d}
		dec := d.Decider()
		switch {
		case d.Error != "":
			r.Failure = "the action is malformed: " + d.Error
		case d.Decision != x.Decision.Value:
			r.Failure = fmt.Sprintf("want %s, got %s", x.Decision.Value, d.Decision)
		case x.Layer.Value != "" && dec != nil && !layerIs(x.Layer.Value, dec):
			r.Failure = fmt.Sprintf("want it decided by layer %q, got %q", x.Layer.Value, dec.Spelling())
		case x.Rule.Value != "" && dec != nil && x.Rule.Value != rulePattern(dec):
			r.Failure = fmt.Sprintf("want it decided by rule %q, got %q", x.Rule.Value, rulePattern(dec))
		}
		out = append(out, r)
	}
	var unused []RuleRef
	for _, l := range e.Meta().Layers {
		for _, rm := range l.Rules {
			if rm.Builtin {
				continue // chock's file defaults are not the file's to test
			}
			if !used[key{l.Kind, l.Name, rm.Pattern, rm.Span.Start}] {
				unused = append(unused, RuleRef{Layer: l.Kind, Name: l.Name, Rule: rm})
			}
		}
	}
	return out, unused, nil
}

// layerIs says whether an .expect .layer names the deciding layer l.
func layerIs(want string, l *Layer) bool {
	kind, name, _ := config.ParseLayer(want)
	return kind == l.Layer && (name == "" || name == l.Name)
}

func rulePattern(l *Layer) string {
	if l.Rule == nil {
		return "default"
	}
	return l.Rule.Pattern
}

// Describe is a decision's deciding layer and rule in a few words.
func Describe(d *Decision) string {
	l := d.Decider()
	if l == nil {
		return d.Decision.String()
	}
	who := l.Spelling()
	if l.Rule == nil {
		return fmt.Sprintf("%s by %s's default", d.Decision, who)
	}
	return fmt.Sprintf("%s by %s rule %s at %s", d.Decision, who, QuoteRule(l.Rule), l.Rule.Span)
}

// Coverage is how many rules the expectations exercised, in all and in
// each layer, as opa test --coverage counts covered lines: a rule is
// exercised when it decided its layer for some expectation's action,
// whatever the other layers decided.
type Coverage struct {
	Covered int             `json:"covered"`
	Rules   int             `json:"rules"`
	Layers  []LayerCoverage `json:"layers"`
}

// LayerCoverage is one layer's part of a Coverage.
type LayerCoverage struct {
	// Layer is the layer's spelling: "project" or "org:NAME".
	Layer      string     `json:"layer"`
	File       string     `json:"file"`
	Covered    int        `json:"covered"`
	Rules      int        `json:"rules"`
	NotCovered []RuleMeta `json:"not_covered"`
}

// Percent is the share of rules covered, 0 to 100; with no rules at all
// there is nothing left to exercise, and it is 100.
func (c Coverage) Percent() float64 { return percent(c.Covered, c.Rules) }

// Percent is the share of the layer's rules covered, 0 to 100.
func (l LayerCoverage) Percent() float64 { return percent(l.Covered, l.Rules) }

func percent(n, of int) float64 {
	if of == 0 {
		return 100
	}
	return 100 * float64(n) / float64(of)
}

// Below says whether the coverage is under threshold percent, compared
// exactly (3 rules of 12 is below 25.01 and not below 25).
func (c Coverage) Below(threshold float64) bool {
	return float64(c.Covered)*100 < threshold*float64(c.Rules)
}

// CoverageOf counts the rules of m's layers that unused, as
// RunExpectations returns it, leaves out.
func CoverageOf(m Meta, unused []RuleRef) Coverage {
	type key struct {
		layer, name, pattern string
		at                   diag.Pos
	}
	left := map[key]bool{}
	for _, u := range unused {
		left[key{u.Layer, u.Name, u.Rule.Pattern, u.Rule.Span.Start}] = true
	}
	var c Coverage
	for _, l := range m.Layers {
		lc := LayerCoverage{Layer: config.LayerSpelling(l.Kind, l.Name), File: l.File, NotCovered: []RuleMeta{}}
		for _, r := range l.Rules {
			if r.Builtin {
				continue
			}
			lc.Rules++
			if left[key{l.Kind, l.Name, r.Pattern, r.Span.Start}] {
				lc.NotCovered = append(lc.NotCovered, r)
			} else {
				lc.Covered++
			}
		}
		c.Covered += lc.Covered
		c.Rules += lc.Rules
		c.Layers = append(c.Layers, lc)
	}
	return c
}
