// Package eval answers decisions from a compiled policy through embedded
// OPA, and explains them: the deciding rule in every layer, the layer that
// capped the result, and the edit that would permit the action (SPEC §6).
package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Engine decides actions against one compiled policy. It is safe for
// concurrent use; Swap replaces the policy without stopping decisions.
type Engine struct {
	cur atomic.Pointer[prepared]
}

// prepared is one loaded policy: its prepared queries and what it says of
// itself.
type prepared struct {
	decide   rego.PreparedEvalQuery
	secrets  rego.PreparedEvalQuery
	revision string
	meta     Meta
	// A decision is a pure function of the bundle and the input, so
	// answers are kept per prepared policy (a Swap starts afresh).
	decisions cache[decisionKey, *Decision]
	offers    cache[Target, []Secret]
}

type decisionKey struct {
	action string
	phase  config.Phase
}

// cacheSize bounds each cache; a full cache is emptied and refilled.
const cacheSize = 4096

// cache is a small bounded map safe for concurrent use.
type cache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

func (c *cache[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *cache[K, V]) put(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= cacheSize {
		c.m = make(map[K]V)
	}
	c.m[k] = v
}

// Meta is what a compiled bundle records of its sources (data.chock.meta).
type Meta = compile.Meta

// RuleMeta is one rule of a layer, with its position.
type RuleMeta = compile.RuleMeta

// New prepares an engine from a bundle.
func New(ctx context.Context, b *bundle.Bundle) (*Engine, error) {
	p, err := prepare(ctx, b)
	if err != nil {
		return nil, err
	}
	e := &Engine{}
	e.cur.Store(p)
	return e, nil
}

// FromOutput prepares an engine straight from a compilation.
func FromOutput(ctx context.Context, out *compile.Output) (*Engine, error) {
	b, err := out.Bundle(nil)
	if err != nil {
		return nil, err
	}
	return New(ctx, b)
}

// ErrNotChockBundle means a bundle holds no chock policy.
var ErrNotChockBundle = errors.New("not a bundle compiled by chock")

func prepare(ctx context.Context, b *bundle.Bundle) (*prepared, error) {
	m, ok := compile.MetaOf(b.Data)
	if !ok {
		return nil, ErrNotChockBundle
	}
	p := &prepared{revision: b.Manifest.Revision, meta: *m}
	caps := pure()
	var err error
	p.decide, err = rego.New(rego.Query("data.chock.decision"), rego.ParsedBundle("chock", b), rego.Capabilities(caps)).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("preparing the decision query: %w", err)
	}
	p.secrets, err = rego.New(rego.Query("data.chock.secrets"), rego.ParsedBundle("chock", b), rego.Capabilities(caps)).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("preparing the secrets query: %w", err)
	}
	if err := p.probe(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// pure is OPA's capabilities without a built-in function that reaches
// outside the evaluation or depends on more than its arguments
// (http.send, net.lookup_ip_addr, opa.runtime, time, randomness) or
// writes anywhere (print, trace). A decision is a function of the bundle
// and the input alone: that is what lets decisions be cached, and a
// bundle from elsewhere cannot make chock send a request or read its
// environment. Such a bundle does not load ("undefined function").
func pure() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	keep := make([]*ast.Builtin, 0, len(c.Builtins))
	for _, b := range c.Builtins {
		if b.Nondeterministic || b.Name == "print" || b.Name == "internal.print" || b.Name == "trace" {
			continue
		}
		keep = append(keep, b)
	}
	c.Builtins = keep
	return c
}

// probeAction is an action no policy names, asked once when a bundle is
// loaded so a bundle that breaks the contract is refused then, before any
// session relies on it.
const probeAction = "chock.probe"

// probe asks one decision at each phase and a malformed one, and checks
// the answers against the contract.
func (p *prepared) probe(ctx context.Context) error {
	if len(p.meta.Layers) == 0 {
		return contractErr("the bundle records no policy layer")
	}
	for _, ph := range []config.Phase{config.Start, config.Loop} {
		for _, a := range []string{probeAction, "chock..probe"} {
			rs, err := p.decide.Eval(ctx, rego.EvalParsedInput(actionInput(a, ph)))
			if err != nil {
				return fmt.Errorf("evaluating %s: %w", a, err)
			}
			if len(rs) != 1 || len(rs[0].Expressions) != 1 {
				return contractErr("no decision for %s", a)
			}
			d, err := toDecision(rs[0].Expressions[0].Value, a, ph, &p.meta)
			if err != nil {
				return err
			}
			if malformed := a != probeAction; (d.Error != "") != malformed {
				return contractErr("%q is malformed: %v; the answer says: %v", a, malformed, d.Error != "")
			}
		}
	}
	return nil
}

// Swap replaces the policy. Decisions in flight finish on the old one; the
// new one is prepared before it takes over, so a bad bundle changes nothing.
func (e *Engine) Swap(ctx context.Context, b *bundle.Bundle) error {
	p, err := prepare(ctx, b)
	if err != nil {
		return err
	}
	e.cur.Store(p)
	return nil
}

// Revision is the loaded bundle's revision (its content digest).
func (e *Engine) Revision() string { return e.cur.Load().revision }

// Meta returns what the loaded bundle records of its sources.
func (e *Engine) Meta() Meta { return e.cur.Load().meta }

// Rule is the rule that decided a layer.
type Rule struct {
	Pattern  string          `json:"pattern"`
	Decision config.Decision `json:"decision"`
	Why      string          `json:"why"`
	File     string          `json:"file"`
	Line     int             `json:"line"`
	Col      int             `json:"col"`
}

// Layer is one layer's part in a decision.
type Layer struct {
	Layer    string          `json:"layer"` // "project" or "org"
	Name     string          `json:"name"`
	Decision config.Decision `json:"decision"`
	Default  bool            `json:"default"`
	Rule     *Rule           `json:"rule"`
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
}

// Decider returns the layer whose decision is the effective one: the org
// that capped the result, or else the project layer.
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
	return &d.Layers[0]
}

func actionInput(action string, phase config.Phase) ast.Value {
	return ast.NewObject(
		[2]*ast.Term{ast.InternedTerm("action"), ast.StringTerm(action)},
		[2]*ast.Term{ast.InternedTerm("phase"), ast.InternedTerm(phase.String())},
	)
}

// Decide asks the policy about one action at one phase. A malformed action
// is not an error: it is denied, with Decision.Error saying why.
// The result is the caller's to keep or change.
func (e *Engine) Decide(ctx context.Context, action string, phase config.Phase) (*Decision, error) {
	p := e.cur.Load()
	key := decisionKey{action, phase}
	if d, ok := p.decisions.get(key); ok {
		return d.clone(), nil
	}
	rs, err := p.decide.Eval(ctx, rego.EvalParsedInput(actionInput(action, phase)))
	if err != nil {
		return nil, fmt.Errorf("evaluating %s: %w", action, err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, fmt.Errorf("the policy gave no decision for %s", action)
	}
	d, err := toDecision(rs[0].Expressions[0].Value, action, phase, &p.meta)
	if err != nil {
		return nil, fmt.Errorf("deciding %s: %w", action, err)
	}
	p.decisions.put(key, d.clone())
	return d, nil
}

// clone copies a decision deeply enough that callers cannot change a
// cached one.
func (d *Decision) clone() *Decision {
	c := *d
	c.Layers = make([]Layer, len(d.Layers))
	for i, l := range d.Layers {
		c.Layers[i] = l
		if l.Rule != nil {
			r := *l.Rule
			c.Layers[i].Rule = &r
		}
	}
	if d.CappedBy != nil {
		name := *d.CappedBy
		c.CappedBy = &name
	}
	return &c
}

// ErrContract is wrapped by a bundle whose answers are not the decision
// objects chock's compiler writes: a bundle edited by hand, or not
// chock's. Nothing is decided with it.
var ErrContract = errors.New("the bundle's decision is not chock's")

func contractErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrContract, fmt.Sprintf(format, args...))
}

// toDecision checks one answer of data.chock.decision against the
// contract and types it: the action and phase asked, a decision, and one
// layer per layer the bundle records (none only for a malformed action,
// which is denied with an error), each with a decision and a rule or its
// default, capped_by naming an org layer.
func toDecision(v any, action string, phase config.Phase, m *Meta) (*Decision, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, contractErr("the answer is %s, not an object", jsonKind(v))
	}
	d := &Decision{}
	d.Action, _ = obj["action"].(string)
	if d.Action != action {
		return nil, contractErr("asked about %q, it answers about %q", action, d.Action)
	}
	ph, _ := obj["phase"].(string)
	if d.Phase, ok = config.ParsePhase(ph); !ok || d.Phase != phase {
		return nil, contractErr("asked at %s, it answers at %q", phase, ph)
	}
	if d.Decision, ok = decisionOf(obj["decision"]); !ok {
		return nil, contractErr("decision %v is not allow, ask or deny", obj["decision"])
	}
	if e, ok := obj["error"]; ok {
		if d.Error, ok = e.(string); !ok {
			return nil, contractErr("error is %s, not a string", jsonKind(e))
		}
	}
	if sr, ok := obj["start_refusal"]; ok {
		if d.StartRefusal, ok = sr.(bool); !ok {
			return nil, contractErr("start_refusal is %s, not a boolean", jsonKind(sr))
		}
	}
	switch c := obj["capped_by"].(type) {
	case nil:
	case string:
		d.CappedBy = &c
	default:
		return nil, contractErr("capped_by is %s, not a string or null", jsonKind(c))
	}
	ls, ok := obj["layers"].([]any)
	if !ok {
		return nil, contractErr("layers is %s, not an array", jsonKind(obj["layers"]))
	}
	if d.Error != "" {
		if d.Decision != config.Deny || len(ls) != 0 {
			return nil, contractErr("a malformed action is denied with no layers")
		}
		return d, nil
	}
	if len(ls) != len(m.Layers) {
		return nil, contractErr("%d layers in the answer, %d in the bundle", len(ls), len(m.Layers))
	}
	for i, lv := range ls {
		l, err := toLayer(lv, m.Layers[i])
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
		d.Layers = append(d.Layers, l)
	}
	if d.CappedBy != nil {
		if l := d.Decider(); l == nil || l.Layer != "org" || l.Name != *d.CappedBy {
			return nil, contractErr("capped_by %q names no org layer", *d.CappedBy)
		}
	}
	return d, nil
}

// toLayer checks one layer of an answer against the layer the bundle
// records in that place.
func toLayer(v any, want compile.LayerMeta) (Layer, error) {
	lm, ok := v.(map[string]any)
	if !ok {
		return Layer{}, contractErr("a layer is %s, not an object", jsonKind(v))
	}
	l := Layer{}
	l.Layer, _ = lm["layer"].(string)
	l.Name, _ = lm["name"].(string)
	if l.Layer != want.Kind || l.Name != want.Name {
		return l, contractErr("layer %s %q where the bundle records %s %q", l.Layer, l.Name, want.Kind, want.Name)
	}
	if l.Decision, ok = decisionOf(lm["decision"]); !ok {
		return l, contractErr("layer %q decides %v, not allow, ask or deny", l.Name, lm["decision"])
	}
	l.Default, _ = lm["default"].(bool)
	switch rm := lm["rule"].(type) {
	case nil:
		if !l.Default {
			return l, contractErr("layer %q has neither a rule nor its default", l.Name)
		}
	case map[string]any:
		r := &Rule{}
		r.Pattern, _ = rm["pattern"].(string)
		if r.Decision, ok = decisionOf(rm["decision"]); !ok || r.Pattern == "" {
			return l, contractErr("layer %q: a rule needs a pattern and a decision", l.Name)
		}
		r.Why, _ = rm["why"].(string)
		r.File, _ = rm["file"].(string)
		r.Line = intOf(rm["line"])
		r.Col = intOf(rm["col"])
		l.Rule = r
	default:
		return l, contractErr("layer %q: rule is %s, not an object or null", l.Name, jsonKind(rm))
	}
	return l, nil
}

// jsonKind names the JSON type of v, for a message.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64, int, int64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func decisionOf(v any) (config.Decision, bool) {
	s, _ := v.(string)
	return config.ParseDecision(s)
}

func intOf(v any) int {
	switch n := v.(type) {
	case json.Number:
		i, _ := n.Int64()
		return int(i)
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	}
	return 0
}

// Target is what secrets are offered to: a call (Action) or a server.
type Target struct {
	Action string
	Server string
}

// Secret is one secret offered to a call or server, before any secret.use
// decision.
type Secret struct {
	Name string      `json:"name"`
	Bind config.Bind `json:"bind"`
	// As is the variable (env, file) or header (header) it arrives under.
	As   string `json:"as"`
	To   string `json:"to"`
	File string `json:"file"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// Secrets returns the secrets offered to a call of a program or to a
// server, in declaration order.
func (e *Engine) Secrets(ctx context.Context, t Target) ([]Secret, error) {
	if (t.Action == "") == (t.Server == "") {
		return nil, errors.New("secrets: name an action or a server")
	}
	p := e.cur.Load()
	if s, ok := p.offers.get(t); ok {
		return append([]Secret(nil), s...), nil
	}
	in := ast.NewObject([2]*ast.Term{ast.InternedTerm("server"), ast.StringTerm(t.Server)})
	if t.Action != "" {
		in = ast.NewObject([2]*ast.Term{ast.InternedTerm("action"), ast.StringTerm(t.Action)})
	}
	rs, err := p.secrets.Eval(ctx, rego.EvalParsedInput(in))
	if err != nil {
		return nil, err
	}
	if len(rs) != 1 {
		return nil, errors.New("the policy gave no secrets answer")
	}
	list, _ := rs[0].Expressions[0].Value.([]any)
	out := make([]Secret, 0, len(list))
	for _, v := range list {
		m, _ := v.(map[string]any)
		s := Secret{}
		s.Name, _ = m["name"].(string)
		bind, _ := m["bind"].(string)
		switch bind {
		case "file":
			s.Bind = config.BindFile
		case "header":
			s.Bind = config.BindHeader
		}
		s.As, _ = m["as"].(string)
		s.To, _ = m["to"].(string)
		s.File, _ = m["file"].(string)
		s.Line, s.Col = intOf(m["line"]), intOf(m["col"])
		out = append(out, s)
	}
	p.offers.put(t, append([]Secret(nil), out...))
	return out, nil
}
