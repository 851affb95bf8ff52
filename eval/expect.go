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
		d, err := e.Decide(ctx, x.Action.Value, x.Phase.Value)
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
	return fmt.Sprintf("%s by %s rule %q at %s", d.Decision, who, l.Rule.Pattern, l.Rule.Span)
}
