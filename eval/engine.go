// Package eval answers decisions from a compiled policy through embedded
// OPA, and explains them: the deciding rule in every layer, the layer that
// capped the result, and the edit that would permit the action (SPEC §6).
package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// ReadBundle reads a .tar.gz bundle, verifying its signature when verify is
// set (a missing, wrong or tampered signature is then an error).
func ReadBundle(r io.Reader, verify *compile.Key) (*bundle.Bundle, error) {
	rd := bundle.NewReader(r).WithRegoVersion(ast.RegoV1).WithProcessAnnotations(true).WithSizeLimitBytes(256 << 20)
	if verify != nil {
		alg, id := verify.Alg, verify.ID
		if alg == "" {
			alg = "RS256"
		}
		if id == "" {
			id = compile.DefaultKeyID
		}
		kc := &bundle.KeyConfig{Key: string(verify.Material), Algorithm: alg}
		rd = rd.WithBundleVerificationConfig(bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{id: kc}, id, "", nil))
	} else {
		rd = rd.WithSkipBundleVerification(true)
	}
	b, err := rd.Read()
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// ErrNotChockBundle means a bundle holds no chock policy.
var ErrNotChockBundle = errors.New("not a bundle compiled by chock")

func prepare(ctx context.Context, b *bundle.Bundle) (*prepared, error) {
	m, ok := compile.MetaOf(b.Data)
	if !ok {
		return nil, ErrNotChockBundle
	}
	p := &prepared{revision: b.Manifest.Revision, meta: *m}
	var err error
	p.decide, err = rego.New(rego.Query("data.chock.decision"), rego.ParsedBundle("chock", b)).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("preparing the decision query: %w", err)
	}
	p.secrets, err = rego.New(rego.Query("data.chock.secrets"), rego.ParsedBundle("chock", b)).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("preparing the secrets query: %w", err)
	}
	return p, nil
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
	d, err := toDecision(rs[0].Expressions[0].Value)
	if err != nil {
		return nil, err
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

func toDecision(v any) (*Decision, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("decision is %T, not an object", v)
	}
	d := &Decision{}
	d.Action, _ = m["action"].(string)
	if ph, ok := m["phase"].(string); ok {
		d.Phase, _ = config.ParsePhase(ph)
	}
	var okd bool
	if d.Decision, okd = decisionOf(m["decision"]); !okd {
		return nil, fmt.Errorf("decision %v is not allow, ask or deny", m["decision"])
	}
	d.Error, _ = m["error"].(string)
	d.StartRefusal, _ = m["start_refusal"].(bool)
	if c, ok := m["capped_by"].(string); ok {
		d.CappedBy = &c
	}
	ls, _ := m["layers"].([]any)
	for _, lv := range ls {
		lm, _ := lv.(map[string]any)
		l := Layer{}
		l.Layer, _ = lm["layer"].(string)
		l.Name, _ = lm["name"].(string)
		l.Decision, _ = decisionOf(lm["decision"])
		l.Default, _ = lm["default"].(bool)
		if rm, ok := lm["rule"].(map[string]any); ok {
			r := &Rule{}
			r.Pattern, _ = rm["pattern"].(string)
			r.Decision, _ = decisionOf(rm["decision"])
			r.Why, _ = rm["why"].(string)
			r.File, _ = rm["file"].(string)
			r.Line = intOf(rm["line"])
			r.Col = intOf(rm["col"])
			l.Rule = r
		}
		d.Layers = append(d.Layers, l)
	}
	return d, nil
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
