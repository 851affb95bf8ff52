// Package native decides actions against a project policy and its org
// ceilings in plain Go, with chock's decision rules: per layer the most specific
// matching rule decides (identical patterns: deny beats ask beats allow),
// else the layer's default; the effective decision is the most restrictive
// of all layers; at start, ask reads as deny. Lint uses it, and it is the
// reference the compiled OPA policy is checked against.
package native

import (
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
)

// Layer is one policy layer with its rule index.
type Layer struct {
	// Kind is "project" or "org"; Name is the org's name, or "project".
	Kind, Name, File string
	Policy           *config.Policy
	trie             action.Trie[*config.Rule]
}

// NewLayer indexes a policy's rules.
func NewLayer(kind, name, file string, p *config.Policy) *Layer {
	l := &Layer{Kind: kind, Name: name, File: file, Policy: p}
	for _, r := range config.WithBuiltins(p, kind).Rules {
		l.trie.Insert(r.Pattern, r)
	}
	return l
}

// Decide returns the layer's decision for a and the deciding rule (nil when
// the default decided).
func (l *Layer) Decide(a action.Action) (config.Decision, *config.Rule) {
	return l.DecideArgs(a, nil)
}

// DecideArgs is Decide for a call with those arguments (nil: not known):
// a rule whose .args do not match them is not among the layer's rules.
func (l *Layer) DecideArgs(a action.Action, args []string) (config.Decision, *config.Rule) {
	return l.pick(l.lookup(a, func(e action.Entry[*config.Rule]) bool { return !e.Value.ArgsMatch(args) }))
}

// lookup is the trie's most specific entries for a (skip left out), a
// fallback rule only where no other rule matches.
func (l *Layer) lookup(a action.Action, skip func(action.Entry[*config.Rule]) bool) []action.Entry[*config.Rule] {
	if es := l.trie.LookupExcept(a, func(e action.Entry[*config.Rule]) bool {
		return e.Value.Fallback || skip != nil && skip(e)
	}); es != nil {
		return es
	}
	return l.trie.LookupExcept(a, func(e action.Entry[*config.Rule]) bool {
		return !e.Value.Fallback || skip != nil && skip(e)
	})
}

// pick is the decision of the most specific matching rules: the most
// restrictive of identical patterns, else the default.
func (l *Layer) pick(entries []action.Entry[*config.Rule]) (config.Decision, *config.Rule) {
	if len(entries) == 0 {
		return l.Policy.Default.Value, nil
	}
	// A builtin rule (chock's file defaults) loses a tie to the file's.
	own := false
	for _, e := range entries {
		own = own || !e.Value.Builtin
	}
	// The longest .args among them are the most specific.
	most := 0
	for _, e := range entries {
		if e.Value.Args != nil {
			most = max(most, len(e.Value.Args)+1)
		}
	}
	var best *config.Rule
	for _, e := range entries {
		if own && e.Value.Builtin || argsRank(e.Value) != most {
			continue
		}
		if best == nil || e.Value.Decision < best.Decision {
			best = e.Value
		}
	}
	return best.Decision, best
}

// argsRank orders rules of one pattern by their .args: none is 0, and
// n elements n+1, the larger the more specific.
func argsRank(r *config.Rule) int {
	if r.Args == nil {
		return 0
	}
	return len(r.Args) + 1
}

// DecideExcept is Decide as if skip were not among the layer's rules:
// what decides a once skip is removed.
func (l *Layer) DecideExcept(a action.Action, skip *config.Rule) (config.Decision, *config.Rule) {
	return l.pick(l.lookup(a, func(e action.Entry[*config.Rule]) bool { return e.Value == skip || e.Value.Args != nil }))
}

// Shape lays out the layer's patterns for a walk over the action space
// (package region).
func (l *Layer) Shape() action.Shape { return l.trie.Shape() }

// Evaluator holds the project layer and every org layer.
type Evaluator struct {
	Layers []*Layer // the project layer first, then the orgs in order
}

// New builds an evaluator. A nil cfg stands for a project with no policy
// (default deny).
func New(cfg *config.Config, orgs []*config.Org) *Evaluator {
	e := &Evaluator{}
	var p *config.Policy
	file := ""
	if cfg != nil {
		p, file = &cfg.Policy, cfg.File
	} else {
		p = &config.Policy{}
	}
	e.Layers = append(e.Layers, NewLayer("project", "project", file, p))
	for _, o := range orgs {
		e.Layers = append(e.Layers, NewLayer("org", o.Name.Value, o.File, &o.Policy))
	}
	return e
}

// Shapes lays out the patterns of every layer for a walk over the action
// space (package region): each region it visits is decided as one.
func (e *Evaluator) Shapes() []action.Shape {
	out := make([]action.Shape, len(e.Layers))
	for i, l := range e.Layers {
		out[i] = l.Shape()
	}
	return out
}

// LayerResult is one layer's part in a decision.
type LayerResult struct {
	Layer    *Layer
	Decision config.Decision
	Rule     *config.Rule // nil: the layer's default decided
}

// Result is a decision with its explanation.
type Result struct {
	Decision config.Decision
	Layers   []LayerResult
	// CappedBy is the org layer that lowered the project's decision, or nil.
	CappedBy *Layer
	// StartRefusal is true when an ask read as deny because of the phase.
	StartRefusal bool
}

// Decide evaluates an action at a phase.
func (e *Evaluator) Decide(a action.Action, phase config.Phase) Result {
	return e.DecideArgs(a, nil, phase)
}

// DecideArgs evaluates a call's action with its arguments (nil: not
// known, so no rule with .args matches) at a phase.
func (e *Evaluator) DecideArgs(a action.Action, args []string, phase config.Phase) Result {
	res := Result{Decision: config.Allow}
	for i, l := range e.Layers {
		d, r := l.DecideArgs(a, args)
		res.Layers = append(res.Layers, LayerResult{Layer: l, Decision: d, Rule: r})
		if d < res.Decision {
			res.Decision = d
			if i > 0 && d < res.Layers[0].Decision {
				res.CappedBy = l // the first org layer at the new minimum
			}
		}
	}
	if phase == config.Start && res.Decision == config.Ask {
		res.Decision = config.Deny
		res.StartRefusal = true
	}
	return res
}
