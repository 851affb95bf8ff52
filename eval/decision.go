package eval

// This file holds the decision types (Decision, Layer) and how a decision
// is worked out from data.chock.core's answer and the bundle's meta:
// fill, and resolve, the one place the rule that combines layers is
// written in Go.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Rule is the rule that decided a layer: the bundle's record of it.
type Rule = compile.RuleMeta

// Layer is one layer's part in a decision.
type Layer struct {
	Layer    string          `json:"layer"` // "project" or "org"
	Name     string          `json:"name"`
	Decision config.Decision `json:"decision"`
	Default  bool            `json:"default"`
	Rule     *Rule           `json:"rule"`
	// DefaultSpan is where the layer's .default is written, when its
	// default decided and it is written.
	DefaultSpan *diag.Span `json:"default_span,omitempty"`
}

// Spelling is the layer's one spelling in every output: "project", or
// "org:NAME".
func (l *Layer) Spelling() string { return config.LayerSpelling(l.Layer, l.Name) }

// RuleText names what decided the layer in a few words: the rule's
// pattern and position ("exec.path.gh (chock.zon:3:19)"), or "default"
// (with the written .default's position, when there is one).
func (l *Layer) RuleText() string {
	switch {
	case l.Rule != nil:
		return fmt.Sprintf("%s (%s)", l.Rule.Text(), l.Rule.Span)
	case l.DefaultSpan != nil:
		return fmt.Sprintf("default (%s)", l.DefaultSpan)
	}
	return "default"
}

// Where is the deciding rule's span, or the written .default's; nil when
// an unwritten default decided.
func (l *Layer) Where() *diag.Span {
	if l.Rule != nil {
		return &l.Rule.Span
	}
	return l.DefaultSpan
}

// Decision is data.chock.decision, typed.
type Decision struct {
	Action       string          `json:"action"`
	Phase        config.Phase    `json:"phase"`
	Decision     config.Decision `json:"decision"`
	Layers       []Layer         `json:"layers"`
	CappedBy     *string         `json:"capped_by"`
	StartRefusal bool            `json:"start_refusal"`
	Error        string          `json:"error,omitempty"`
	// Args are the call's arguments the decision was asked with, when a
	// rule of the policy reads them (DecideArgs).
	Args []string `json:"args,omitempty"`
	// ID is the decision's decision_id in OPA's decision log, when one
	// is kept (here through --opa-config, or by a remote OPA).
	ID string `json:"-"`
	// Revision is the revision of the policy that decided.
	Revision string `json:"-"`
	// Unavailable says no policy could decide (Error says why): the
	// action is denied without a layer's word (ErrUnavailable).
	Unavailable bool `json:"unavailable,omitempty"`
}

// Decider returns the layer whose decision is the effective one: the org
// that capped the result; else, when the project refused or asked by its
// default, the first org that reaches the same decision by a rule (the
// rule the project cannot change, where its default it can); else the
// project layer. An org's allow permits nothing, so it never decides.
func (d *Decision) Decider() *Layer {
	if len(d.Layers) == 0 {
		return nil
	}
	if d.CappedBy != nil {
		for i := range d.Layers {
			if d.Layers[i].Layer == "org" && d.Layers[i].Name == *d.CappedBy {
				return &d.Layers[i]
			}
		}
	}
	if p := &d.Layers[0]; p.Layer == "project" && p.Rule == nil && p.Decision != config.Allow {
		for i := 1; i < len(d.Layers); i++ {
			if l := &d.Layers[i]; l.Layer == "org" && l.Rule != nil && l.Decision == p.Decision {
				return l
			}
		}
	}
	return &d.Layers[0]
}

// decide checks the action, asks data.chock.core which rule decides each
// layer, and fills the decision in from the bundle's meta.
func (p *prepared) decide(ctx context.Context, a string, args []string, phase config.Phase) (*Decision, error) {
	n, ok := action.Valid(a)
	if !ok {
		return &Decision{Action: a, Phase: phase, Decision: config.Deny, Error: compile.ActionError}, nil
	}
	v, err := p.coreAnswer(ctx, a, n, args)
	if err != nil {
		return nil, err
	}
	return p.fill(v, a, phase)
}

// coreAnswer is data.chock.core's answer for action a of n segments with
// args: the numbers of the rules that match.
func (p *prepared) coreAnswer(ctx context.Context, a string, n int, args []string) (any, error) {
	rs, err := p.core.Eval(ctx, rego.EvalParsedInput(p.coreInput(a, n, args)))
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", a, err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, contractErr("data.chock.core gives no answer for %q", a)
	}
	return rs[0].Expressions[0].Value, nil
}

// fill types one answer of data.chock.core, checking it against the
// contract (a set of numbers the bundle's rules can have), and works the
// decision out: per layer, the rule of its smallest number (a number's
// quotient by meta's stride is its layer; its remainder's by the layer's
// number of rules, the rule's place), or the default; the most
// restrictive of the layers; the first org at it, when it is below the
// project's; at start, ask read as deny.
func (p *prepared) fill(v any, a string, phase config.Phase) (*Decision, error) {
	nums, ok := v.([]any)
	if !ok {
		return nil, contractErr("data.chock.core answers %s, not a set of rule numbers", describe(v))
	}
	layers := p.meta.Layers
	best := make([]int64, len(layers))
	for i := range best {
		best[i] = -1
	}
	stride := p.meta.Stride
	for _, x := range nums {
		k, ok := ruleNumber(x)
		if !ok || stride <= 0 {
			return nil, contractErr("data.chock.core answers %s, not a rule number", describe(x))
		}
		i, k := k/stride, k%stride
		if i >= int64(len(layers)) {
			return nil, contractErr("rule number %s is in no layer of the bundle's %d", describe(x), len(layers))
		}
		if n := int64(len(layers[i].Rules)); k/max(n, 1) >= n {
			return nil, contractErr("rule number %s, where layer %d records %d rules", describe(x), i, n)
		}
		if best[i] < 0 || k < best[i] {
			best[i] = k
		}
	}
	d := &Decision{Action: a, Phase: phase, Layers: make([]Layer, len(layers))}
	for i := range layers {
		lm, l := &layers[i], &d.Layers[i]
		l.Layer, l.Name = lm.Kind, lm.Name
		if best[i] < 0 {
			l.Decision, l.Default = lm.Default.Value, true
			if lm.Default.Set {
				sp := lm.Default.Span
				l.DefaultSpan = &sp
			}
		} else {
			r := lm.Rules[best[i]%int64(len(lm.Rules))]
			l.Decision, l.Rule = r.Decision, &r
		}
	}
	d.resolve()
	return d, nil
}

// resolve works the effective decision out from the layers': the most
// restrictive; the first org at it, when it is below the project's; at
// start, ask read as deny. It is the one place that rule is written in Go.
func (d *Decision) resolve() {
	eff := config.Allow
	for _, l := range d.Layers {
		eff = min(eff, l.Decision)
	}
	d.Decision, d.CappedBy, d.StartRefusal = eff, nil, false
	if len(d.Layers) > 0 && d.Layers[0].Layer == "project" && eff < d.Layers[0].Decision {
		for i := 1; i < len(d.Layers); i++ {
			if d.Layers[i].Decision == eff {
				name := d.Layers[i].Name
				d.CappedBy = &name
				break
			}
		}
	}
	if d.Phase == config.Start && eff == config.Ask {
		d.Decision, d.StartRefusal = config.Deny, true
	}
}

// ruleNumber reads a rule number of data.chock.core's answer: a
// non-negative integer.
func ruleNumber(x any) (int64, bool) {
	var k int64
	switch n := x.(type) {
	case json.Number:
		var err error
		if k, err = n.Int64(); err != nil {
			return 0, false
		}
	case int:
		k = int64(n)
	case int64:
		k = n
	case float64:
		if n != math.Trunc(n) || n > math.MaxInt64/2 {
			return 0, false
		}
		k = int64(n)
	default:
		return 0, false
	}
	return k, k >= 0
}

// describe names what a value of an answer is, for an error.
func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 80 {
		return fmt.Sprintf("a %T", v)
	}
	return string(b)
}

// clone copies a decision deeply enough that callers cannot change a
// cached one.
func (d *Decision) clone() *Decision {
	c := *d
	c.Layers = make([]Layer, len(d.Layers))
	// One allocation for the rules and one for the spans, whatever the
	// number of layers: a plan decides hundreds of paths a call.
	nr, ns := 0, 0
	for _, l := range d.Layers {
		if l.Rule != nil {
			nr++
		}
		if l.DefaultSpan != nil {
			ns++
		}
	}
	rules, spans := make([]Rule, 0, nr), make([]diag.Span, 0, ns)
	for i, l := range d.Layers {
		c.Layers[i] = l
		if l.Rule != nil {
			rules = append(rules, *l.Rule)
			c.Layers[i].Rule = &rules[len(rules)-1]
		}
		if l.DefaultSpan != nil {
			spans = append(spans, *l.DefaultSpan)
			c.Layers[i].DefaultSpan = &spans[len(spans)-1]
		}
	}
	if d.CappedBy != nil {
		name := *d.CappedBy
		c.CappedBy = &name
	}
	return &c
}
