package eval

// This file is the wire contract with the compiled Rego: the inputs
// data.chock.core and data.chock.decision take, and the JSON shapes of
// data.chock.decision's and data.chock.secrets' answers, checked key for
// key (an answer that is not chock's wraps ErrContract).

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/open-policy-agent/opa/v1/ast"
)

// asJSON is s as it reads after a trip through encoding/json: each byte
// that is not UTF-8 reads as U+FFFD.
func asJSON(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b, _ := json.Marshal(s) // a string always encodes
	var out string
	json.Unmarshal(b, &out)
	return out
}

// actionInput is data.chock.decision's input for an action at a phase.
func actionInput(action string, phase config.Phase) ast.Value {
	return ast.NewObject(
		[2]*ast.Term{ast.InternedTerm("action"), ast.StringTerm(action)},
		[2]*ast.Term{ast.InternedTerm("phase"), ast.InternedTerm(phase.String())},
	)
}

// actionKey and segmentsKey are the keys of data.chock.core's input.
var (
	actionKey   = ast.InternedTerm("action")
	segmentsKey = ast.InternedTerm("segments")
)

// coreInput is data.chock.core's input: the action, and its n segments
// when the policy matches rules on them.
func (p *prepared) coreInput(a string, n int, args []string) ast.Value {
	in := p.actionInput(a, n)
	if args != nil {
		ts := make([]*ast.Term, len(args))
		for i, x := range args {
			ts[i] = ast.StringTerm(x)
		}
		in.(ast.Object).Insert(argsTerm, ast.ArrayTerm(ts...))
	}
	return in
}

// argsTerm is input.args, a call's arguments.
var argsTerm = ast.StringTerm("args")

// actionInput is the input of data.chock.core for action a of n segments.
func (p *prepared) actionInput(a string, n int) ast.Value {
	if !p.meta.Segments {
		return ast.NewObject([2]*ast.Term{actionKey, ast.StringTerm(a)})
	}
	segs := make([]*ast.Term, 0, n)
	for _, pre := range action.PathPrefixes() {
		if strings.HasPrefix(a, pre) {
			// The path is one segment, dots and all, as in the policy.
			for _, s := range strings.Split(strings.TrimSuffix(pre, "."), ".") {
				segs = append(segs, ast.StringTerm(s))
			}
			segs = append(segs, ast.StringTerm(a[len(pre):]))
			return ast.NewObject([2]*ast.Term{actionKey, ast.StringTerm(a)}, [2]*ast.Term{segmentsKey, ast.ArrayTerm(segs...)})
		}
	}
	for rest := a; ; {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			segs = append(segs, ast.StringTerm(rest))
			break
		}
		segs = append(segs, ast.StringTerm(rest[:i]))
		rest = rest[i+1:]
	}
	return ast.NewObject([2]*ast.Term{actionKey, ast.StringTerm(a)}, [2]*ast.Term{segmentsKey, ast.ArrayTerm(segs...)})
}

// ErrContract is wrapped by a bundle whose answers are not the decision
// objects chock's compiler writes: a bundle edited by hand, or not
// chock's. Nothing is decided with it.
var ErrContract = errors.New("the bundle's decision is not chock's")

// contractErr is an error wrapping ErrContract, worded as fmt.Sprintf.
func contractErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrContract, fmt.Sprintf(format, args...))
}

// wireDecision is data.chock.decision as OPA answers it, decoded through
// JSON into typed fields; pointers tell a field left out from its zero.
type wireDecision struct {
	Action       *string          `json:"action"`
	Phase        *config.Phase    `json:"phase"`
	Decision     *config.Decision `json:"decision"`
	Layers       *[]wireLayer     `json:"layers"`
	CappedBy     *string          `json:"capped_by"`
	StartRefusal *bool            `json:"start_refusal"`
	Error        *string          `json:"error"`
}

// wireLayer is one layer of data.chock.decision as OPA answers it.
type wireLayer struct {
	Layer       string           `json:"layer"`
	Name        string           `json:"name"`
	Decision    *config.Decision `json:"decision"`
	Default     bool             `json:"default"`
	Rule        *wireRule        `json:"rule"`
	DefaultSpan *diag.Span       `json:"default_span"`
}

// wireRule is a layer's deciding rule as OPA answers it.
type wireRule struct {
	Pattern  string           `json:"pattern"`
	Decision *config.Decision `json:"decision"`
	Why      string           `json:"why"`
	Span     diag.Span        `json:"span"`
	Builtin  bool             `json:"builtin,omitempty"`
	Args     string           `json:"args,omitempty"`
}

// The keys of chock's decision object, exactly (encoding/json would take
// any case, and a null for any value).
func decisionKeys() keySet {
	return keySet{required: []string{"action", "phase", "decision", "layers", "capped_by", "start_refusal"}, optional: []string{"error"}}
}

// layerKeys are the keys of one layer of the decision object.
func layerKeys() keySet {
	return keySet{required: []string{"layer", "name", "decision", "default", "rule"}, optional: []string{"default_span"}}
}

// ruleKeys are the keys of a layer's deciding rule.
func ruleKeys() keySet {
	return keySet{required: []string{"pattern", "decision", "why", "span"}, optional: []string{"builtin", "args"}}
}

// keySet is the keys an object of the contract has.
type keySet struct{ required, optional []string }

// check says whether v is an object with exactly the keys of k, none of
// them null but where the contract allows it.
func (k keySet) check(what string, v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return contractErr("%s is not an object", what)
	}
	for _, r := range k.required {
		if _, ok := m[r]; !ok {
			return contractErr("%s has no %q", what, r)
		}
	}
	for key, val := range m {
		known := slices.Contains(k.required, key) || slices.Contains(k.optional, key)
		if !known {
			return contractErr("%s has a key %q chock does not write", what, key)
		}
		if val == nil && key != "capped_by" && key != "rule" {
			return contractErr("%s's %q is null", what, key)
		}
	}
	return nil
}

// exactKeys checks the decision object's keys, and its layers' and their
// rules', before it is decoded.
func exactKeys(v any) error {
	if err := decisionKeys().check("the answer", v); err != nil {
		return err
	}
	layers, _ := v.(map[string]any)["layers"].([]any)
	for i, l := range layers {
		what := fmt.Sprintf("layer %d", i)
		if err := layerKeys().check(what, l); err != nil {
			return err
		}
		if r := l.(map[string]any)["rule"]; r != nil {
			if err := ruleKeys().check(what+"'s rule", r); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeJSON decodes an OPA value into a typed one through JSON. A value
// of the wrong type is worded by its place in the answer, not by Go's
// types.
func decodeJSON(v, into any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	err = json.Unmarshal(b, into)
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "the answer"
		}
		return fmt.Errorf("%s is a JSON %s, not what chock writes there", field, te.Value)
	}
	return err
}

// toDecision checks one answer of data.chock.decision against the
// contract and types it: the action and phase asked, a decision, and one
// layer per layer the bundle records (none only for a malformed action,
// which is denied with an error), each with a decision and a rule or its
// default, capped_by naming an org layer.
func toDecision(v any, action string, phase config.Phase, m *Meta) (*Decision, error) {
	if err := exactKeys(v); err != nil {
		return nil, err
	}
	var w wireDecision
	if err := decodeJSON(v, &w); err != nil {
		return nil, contractErr("%v", err)
	}
	// The answer comes back through JSON, where a byte that is not UTF-8
	// reads as U+FFFD: the action asked reads so too.
	switch {
	case w.Action == nil || *w.Action != asJSON(action):
		return nil, contractErr("asked about %q, it answers about %s", action, quoted(w.Action))
	case w.Phase == nil || *w.Phase != phase:
		return nil, contractErr("asked at %s, it answers at %v", phase, w.Phase)
	case w.Decision == nil:
		return nil, contractErr("the answer has no decision")
	case w.Layers == nil:
		return nil, contractErr("the answer has no layers")
	case w.StartRefusal == nil:
		return nil, contractErr("the answer has no start_refusal")
	}
	d := &Decision{Action: action, Phase: phase, Decision: *w.Decision, CappedBy: w.CappedBy, StartRefusal: *w.StartRefusal}
	if w.Error != nil {
		d.Error = *w.Error
	}
	ls := *w.Layers
	if d.Error != "" {
		if d.Decision != config.Deny || len(ls) != 0 {
			return nil, contractErr("a malformed action is denied with no layers")
		}
		return d, nil
	}
	if len(ls) != len(m.Layers) {
		return nil, contractErr("%d layers in the answer, %d in the bundle", len(ls), len(m.Layers))
	}
	for i, wl := range ls {
		l, err := wl.layer(m.Layers[i])
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
	// The answer must be what its own layers make it: each layer's rule
	// one the bundle records, or its default; the effective decision, the
	// cap and the start refusal worked out from them.
	for i, l := range d.Layers {
		lm := m.Layers[i]
		switch {
		case l.Rule == nil && l.Decision != lm.Default.Value:
			return nil, contractErr("layer %q decides %s by a default of %s", l.Name, l.Decision, lm.Default.Value)
		case l.Rule != nil && (l.Decision != l.Rule.Decision || !slices.ContainsFunc(lm.Rules, func(r RuleMeta) bool { return r == *l.Rule })):
			return nil, contractErr("layer %q decides %s by a rule %s the bundle does not record so", l.Name, l.Decision, l.Rule.Text())
		}
	}
	want := *d
	want.resolve()
	if want.Decision != d.Decision || want.StartRefusal != d.StartRefusal || (want.CappedBy == nil) != (d.CappedBy == nil) || want.CappedBy != nil && *want.CappedBy != *d.CappedBy {
		return nil, contractErr("the answer says %s, and its layers make it %s", d.Decision, want.Decision)
	}
	return d, nil
}

// quoted is *s quoted, or "nothing" for nil.
func quoted(s *string) string {
	if s == nil {
		return "nothing"
	}
	return strconv.Quote(*s)
}

// layer checks one layer of an answer against the layer the bundle records
// in that place.
func (w wireLayer) layer(want compile.LayerMeta) (Layer, error) {
	if w.Layer != want.Kind || w.Name != want.Name {
		return Layer{}, contractErr("layer %s %q where the bundle records %s %q", w.Layer, w.Name, want.Kind, want.Name)
	}
	if w.Decision == nil {
		return Layer{}, contractErr("layer %q decides nothing", w.Name)
	}
	l := Layer{Layer: w.Layer, Name: w.Name, Decision: *w.Decision, Default: w.Default, DefaultSpan: w.DefaultSpan}
	switch {
	case w.Rule == nil && !w.Default:
		return l, contractErr("layer %q has neither a rule nor its default", w.Name)
	case w.Rule != nil && (w.Rule.Pattern == "" || w.Rule.Decision == nil):
		return l, contractErr("layer %q: a rule needs a pattern and a decision", w.Name)
	case w.Rule != nil:
		l.Rule = &Rule{Pattern: w.Rule.Pattern, Decision: *w.Rule.Decision, Why: w.Rule.Why, Span: w.Rule.Span, Builtin: w.Rule.Builtin, Args: w.Rule.Args}
	}
	return l, nil
}

// secretsAnswer checks one answer of data.chock.secrets against the
// contract and types it.
func secretsAnswer(v any) ([]Secret, error) {
	var out []Secret
	if err := decodeJSON(v, &out); err != nil {
		return nil, contractErr("the secrets answer: %v", err)
	}
	for _, sec := range out {
		valid := sec.Bind.Rule().ValidAs
		switch {
		case !action.ValidSecretName(sec.Name):
			return nil, contractErr("the secrets answer offers %q, which cannot name a secret", sec.Name)
		case !valid(sec.As):
			return nil, contractErr("the secrets answer gives secret %s as %q, which a %s bind cannot name", sec.Name, sec.As, sec.Bind)
		}
	}
	if out == nil {
		out = []Secret{}
	}
	return out, nil
}
