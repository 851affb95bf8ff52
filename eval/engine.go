// Package eval answers decisions from a compiled policy through embedded
// OPA, and explains them: the deciding rule in every layer, the layer that
// capped the result, and the edit that would permit the action (SPEC §6).
package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// Engine decides actions against one compiled policy. It is safe for
// concurrent use; Swap replaces the policy without stopping decisions.
//
// An engine decides in this process, on a policy prepared here (New,
// FromOutput, Swap, SwapCompiled), or asks a running OPA (NewRemote). Either
// way, a decision that cannot be made is an error wrapping
// ErrUnavailable, never an allow.
type Engine struct {
	cur atomic.Pointer[prepared]
	// remote, when set, answers every decision and secrets query instead
	// of a prepared policy: a running opa run --server.
	remote remote
	// logs, when set, is told every decision this engine makes here.
	logs DecisionLogger
	// pinned says the engine is a Pinned view: Swap refuses.
	pinned bool
}

// remote is a policy this process does not hold: it is asked over the
// network for every answer.
type remote interface {
	decide(ctx context.Context, action string, phase config.Phase) (*Decision, error)
	decideMany(ctx context.Context, actions []string, phase config.Phase) ([]*Decision, error)
	secrets(ctx context.Context, t Target) ([]Secret, error)
	meta() Meta
	revision() string
}

// ErrUnavailable is wrapped by every error that means no policy could
// answer: a remote OPA that does not answer in time, a bundle service
// that has not delivered a policy, an activated bundle that is not
// chock's. A caller refuses what it asked about.
var ErrUnavailable = errors.New("no policy could decide")

// DecisionLogger is told every decision an engine makes in this process:
// OPA's decision-log plugin, through the fleet package.
type DecisionLogger interface {
	LogDecision(ctx context.Context, ev DecisionEvent) error
}

// DecisionEvent is one decision, as a decision log records it.
type DecisionEvent struct {
	// ID is the decision's decision_id, which the session log carries too.
	ID string
	// Path is the query's path, "chock/decision".
	Path string
	// Input is the decision's input, {"action": ..., "phase": ...}.
	Input map[string]any
	// Decision is chock's decision object (data.chock.decision's shape).
	Decision *Decision
	// Revisions are the revisions of the bundles that decided, by bundle
	// name.
	Revisions map[string]string
	Time      time.Time
}

// prepared is one loaded policy: its prepared queries and what it says of
// itself.
type prepared struct {
	// core is data.chock.core: per layer, the numbers of the rules that
	// match an action; Go fills the decision in from meta.
	core     rego.PreparedEvalQuery
	secrets  rego.PreparedEvalQuery
	revision string
	// revisions are the revisions of the bundles it was built from, by
	// bundle name, for decision logs.
	revisions map[string]string
	meta      Meta
	// A decision is a pure function of the bundle and the input, so
	// answers are kept per prepared policy (a Swap starts afresh).
	decisions cache[decisionKey, *Decision]
	offers    cache[Target, []Secret]
	// failure, when set, is why this policy cannot decide (an activated
	// bundle that is not chock's): every decision fails with it.
	failure error
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
	return NewBundles(ctx, b)
}

// NewBundles prepares an engine from several bundles loaded side by side,
// as opa run -b A -b B loads them: their modules compiled together, their
// data in one store. Bundles whose roots overlap are refused, as OPA
// refuses them. A project bundle that links orgs by name is given with
// the orgs' bundles; one whose org is missing is refused with an error
// wrapping ErrUnavailable that names it.
func NewBundles(ctx context.Context, bs ...*bundle.Bundle) (*Engine, error) {
	p, err := prepare(ctx, bs)
	if err != nil {
		return nil, err
	}
	e := &Engine{}
	e.cur.Store(p)
	return e, nil
}

// FromOutput prepares an engine straight from a compilation, on its one
// compile: nothing is compiled again. The modules are this chock's own, so
// the probe checks only the contract of data.chock.core's answers.
func FromOutput(ctx context.Context, out *compile.Output) (*Engine, error) {
	if len(out.Meta.Orgs) > 0 {
		return nil, fmt.Errorf("%w: a compilation that links its orgs decides only beside their bundles (NewBundles)", ErrUnavailable)
	}
	p := &prepared{revision: out.Revision, meta: *out.Meta, revisions: map[string]string{"chock": out.Revision}}
	if err := p.prepareQueries(ctx, out.Compiler(), inmem.New()); err != nil {
		return nil, err
	}
	if err := p.probe(ctx, nil); err != nil {
		return nil, err
	}
	e := &Engine{}
	e.cur.Store(p)
	return e, nil
}

// NewCompiled prepares an engine on a policy compiled and stored
// elsewhere: OPA's plugin manager's compiler and store, after it activated
// the bundles given by name. logs, when not nil, is told every decision.
func NewCompiled(ctx context.Context, c *ast.Compiler, store storage.Store, bundles map[string]BundleInfo, logs DecisionLogger) (*Engine, error) {
	p, err := prepareElsewhere(ctx, c, store, bundles)
	if err != nil {
		return nil, err
	}
	e := &Engine{logs: logs}
	e.cur.Store(p)
	return e, nil
}

// SwapCompiled replaces the policy with one compiled and stored
// elsewhere, as NewCompiled takes it. Decisions in flight finish on the
// old one. When the new one cannot be prepared, the error says why, and
// every decision after it fails with ErrUnavailable until a policy that
// can be is swapped in: the old policy no longer matches the store.
func (e *Engine) SwapCompiled(ctx context.Context, c *ast.Compiler, store storage.Store, bundles map[string]BundleInfo) error {
	if e.pinned || e.remote != nil {
		return errors.New("this engine's policy cannot be replaced")
	}
	p, err := prepareElsewhere(ctx, c, store, bundles)
	if err != nil {
		old := e.cur.Load()
		revisions := revisionsOf(bundles)
		failed := &prepared{failure: err, revision: revisionOf(revisions), revisions: revisions}
		if old != nil {
			failed.meta = old.meta
		}
		e.cur.Store(failed)
		return err
	}
	e.cur.Store(p)
	return nil
}

// Pinned returns a view of the engine that decides with its current policy
// only: a swap after it does not reach the view. A call pins the policy it
// started on, so it finishes on it. A remote engine's view asks the same
// remote OPA.
func (e *Engine) Pinned() *Engine {
	v := &Engine{remote: e.remote, logs: e.logs, pinned: true}
	v.cur.Store(e.cur.Load())
	return v
}

// Adopt makes the policy another engine decides with this one's: how a
// policy loaded afresh (mcp serve's reload) is swapped in without being
// prepared twice. Decisions in flight finish on the old one.
func (e *Engine) Adopt(other *Engine) error {
	if e.pinned || e.remote != nil || other.remote != nil {
		return errors.New("this engine's policy cannot be replaced")
	}
	e.cur.Store(other.cur.Load())
	return nil
}

// RevisionOf is the revision of a policy built from the bundles given by
// name (revisionOf).
func RevisionOf(bundles map[string]BundleInfo) string { return revisionOf(revisionsOf(bundles)) }

// Err is why the engine's policy cannot decide now (an activated bundle
// that is not chock's), or nil.
func (e *Engine) Err() error {
	if e.remote != nil {
		return nil
	}
	return e.cur.Load().failure
}

// revisionOf is one revision for a set of bundles: the only one's, or the
// bundles' names and revisions in name order.
func revisionOf(revisions map[string]string) string {
	if len(revisions) == 1 {
		for _, r := range revisions {
			return r
		}
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(revisions)) {
		parts = append(parts, name+"="+revisions[name])
	}
	return strings.Join(parts, ",")
}

// ShortRevision is a revision as a person reads it: 16 hex digits, or
// for several bundles each one's name and first 12 digits.
func ShortRevision(rev string) string {
	if !strings.Contains(rev, "=") {
		if len(rev) > 16 {
			return rev[:16]
		}
		return rev
	}
	parts := strings.Split(rev, ",")
	for i, p := range parts {
		if name, r, ok := strings.Cut(p, "="); ok && len(r) > 12 {
			parts[i] = name + "=" + r[:12]
		}
	}
	return strings.Join(parts, ",")
}

// prepareQueries prepares the core and secrets queries on one compiler.
func (p *prepared) prepareQueries(ctx context.Context, c *ast.Compiler, store storage.Store) error {
	var err error
	if p.core, err = prepareQuery(ctx, c, store, "data.chock.core"); err != nil {
		return fmt.Errorf("preparing the decision query: %w", err)
	}
	if p.secrets, err = prepareQuery(ctx, c, store, "data.chock.secrets"); err != nil {
		return fmt.Errorf("preparing the secrets query: %w", err)
	}
	return nil
}

// prepareQuery prepares one query on a compiled policy: the query alone is
// compiled.
func prepareQuery(ctx context.Context, c *ast.Compiler, store storage.Store, query string) (rego.PreparedEvalQuery, error) {
	return rego.New(rego.Query(query), rego.Compiler(c), rego.Store(store), rego.Capabilities(compile.Capabilities())).PrepareForEval(ctx)
}

// BundleInfo is what a policy records of one bundle it was built from:
// its revision and its manifest's roots.
type BundleInfo struct {
	Revision string
	Roots    []string
}

// revisionsOf are the bundles' revisions by name.
func revisionsOf(bundles map[string]BundleInfo) map[string]string {
	out := make(map[string]string, len(bundles))
	for name, b := range bundles {
		out[name] = b.Revision
	}
	return out
}

// BundleName is the name a bundle goes by in revisions and decision
// logs: its first root ("chock", "chock_orgs/acme"), or "chock" when it
// names none.
func BundleName(b *bundle.Bundle) string {
	if b.Manifest.Roots != nil && len(*b.Manifest.Roots) > 0 && (*b.Manifest.Roots)[0] != "" {
		return (*b.Manifest.Roots)[0]
	}
	return compile.Root
}

// ErrOverlappingRoots is wrapped when bundles loaded side by side claim
// overlapping roots, which OPA refuses too.
var ErrOverlappingRoots = errors.New("detected overlapping roots in bundle manifests")

// prepare compiles the bundles' modules once, together, with
// compile.Capabilities, puts their data in one store, and prepares every
// query on that compilation (prepareOn).
func prepare(ctx context.Context, bs []*bundle.Bundle) (*prepared, error) {
	if len(bs) == 0 {
		return nil, errors.New("no bundle given")
	}
	infos := make(map[string]BundleInfo, len(bs))
	var roots []string
	var rootOf []string
	for _, b := range bs {
		name := BundleName(b)
		if _, dup := infos[name]; dup {
			return nil, fmt.Errorf("%w: two bundles named %q", ErrOverlappingRoots, name)
		}
		rs := []string{""}
		if b.Manifest.Roots != nil {
			rs = *b.Manifest.Roots
		}
		infos[name] = BundleInfo{Revision: b.Manifest.Revision, Roots: rs}
		for _, r := range rs {
			for i, other := range roots {
				if bundle.RootPathsOverlap(r, other) {
					return nil, fmt.Errorf("%w: %q (bundle %s) and %q (bundle %s)", ErrOverlappingRoots, r, name, other, rootOf[i])
				}
			}
		}
		for _, r := range rs {
			roots, rootOf = append(roots, r), append(rootOf, name)
		}
	}
	mods := map[string]*ast.Module{}
	data := map[string]any{}
	for _, b := range bs {
		name := BundleName(b)
		for _, mf := range b.Modules {
			mod := mf.Parsed
			if mod == nil {
				var err error
				if mod, err = ast.ParseModuleWithOpts(mf.Path, string(mf.Raw), ast.ParserOptions{RegoVersion: ast.RegoV1}); err != nil {
					return nil, err
				}
			}
			key := mf.Path
			if len(bs) > 1 {
				key = name + key
			}
			mods[key] = mod
		}
		mergeData(data, b.Data)
	}
	c := ast.NewCompiler().WithCapabilities(compile.Capabilities())
	if c.Compile(mods); c.Failed() {
		return nil, fmt.Errorf("compiling the bundle: %w", c.Errors)
	}
	store := inmem.NewFromObjectWithOpts(data, inmem.OptRoundTripOnWrite(false))
	return prepareOn(ctx, c, store, infos)
}

// mergeData merges src into dst, object by object. Bundles whose roots do
// not overlap never write the same leaf.
func mergeData(dst, src map[string]any) {
	for k, v := range src {
		sub, ok := v.(map[string]any)
		if old, ok2 := dst[k].(map[string]any); ok && ok2 {
			mergeData(old, sub)
			continue
		}
		if ok {
			cp := make(map[string]any, len(sub))
			mergeData(cp, sub)
			v = cp
		}
		dst[k] = v
	}
}

// prepareOn prepares every query on a compiled policy and its store:
// data.chock.core and data.chock.secrets, and data.chock.decision for the
// probe, which holds the two decisions to each other. What the policy
// says of itself is read from the store (readMeta).
func prepareOn(ctx context.Context, c *ast.Compiler, store storage.Store, bundles map[string]BundleInfo) (*prepared, error) {
	m, err := readMeta(ctx, store)
	if err != nil {
		return nil, err
	}
	if err := linkedFromOwnBundles(m, bundles); err != nil {
		return nil, err
	}
	revisions := revisionsOf(bundles)
	p := &prepared{revision: revisionOf(revisions), revisions: revisions, meta: *m}
	if err := p.prepareQueries(ctx, c, store); err != nil {
		return nil, err
	}
	full, err := prepareQuery(ctx, c, store, "data.chock.decision")
	if err != nil {
		return nil, fmt.Errorf("preparing the decision query: %w", err)
	}
	if err := p.probe(ctx, &full); err != nil {
		return nil, err
	}
	return p, nil
}

// prepareElsewhere is prepareOn for a policy compiled elsewhere, with
// OPA's own capabilities: one that calls a built-in function outside
// compile.Capabilities (http.send, time, randomness, print) is refused,
// as compiling it here would refuse it.
func prepareElsewhere(ctx context.Context, c *ast.Compiler, store storage.Store, bundles map[string]BundleInfo) (*prepared, error) {
	if err := onlyCapabilities(c); err != nil {
		return nil, err
	}
	return prepareOn(ctx, c, store, bundles)
}

// linkedFromOwnBundles checks that each org a project links came in a
// bundle of its own, whose one root is the org's (chock_orgs/NAME): an
// org's layer delivered by another bundle (an org bundle claiming a second
// org's root too, or the project's) is refused, so no bundle can stand in
// for an org it is not.
func linkedFromOwnBundles(m *Meta, bundles map[string]BundleInfo) error {
	for _, name := range m.Orgs {
		root := compile.OrgsRoot + "/" + name
		own := false
		for _, b := range bundles {
			if slices.ContainsFunc(b.Roots, func(r string) bool { return bundle.RootPathsOverlap(r, root) }) {
				if len(b.Roots) != 1 || b.Roots[0] != root {
					return fmt.Errorf("%w: the policy links org %q, and its layer comes from a bundle with roots %q, not from the org's own bundle (root %q alone)", ErrContract, name, b.Roots, root)
				}
				own = true
			}
		}
		if !own {
			return fmt.Errorf("%w: the policy links org %q, and no bundle has its root %q", ErrUnavailable, name, root)
		}
	}
	return nil
}

// onlyCapabilities checks that no compiled module names a built-in
// function compile.Capabilities does not hold: not called, not given as
// the value of a with (which would call it in another's place), not
// referred to in any way.
func onlyCapabilities(c *ast.Compiler) error {
	allowed := map[string]bool{}
	for _, b := range compile.Capabilities().Builtins {
		allowed[b.Name] = true
	}
	var bad error
	for _, name := range slices.Sorted(maps.Keys(c.Modules)) {
		ast.WalkTerms(c.Modules[name], func(t *ast.Term) bool {
			ref, ok := t.Value.(ast.Ref)
			if !ok {
				return bad != nil
			}
			name := ref.String()
			if _, builtin := ast.BuiltinMap[name]; builtin && !allowed[name] {
				bad = fmt.Errorf("the policy names %s (%v), a built-in function chock does not let a policy use: a decision depends on the bundle and the input alone", name, t.Location)
			}
			return bad != nil
		})
		if bad != nil {
			return bad
		}
	}
	return nil
}

// readMeta reads what the policy says of itself from a store (assembleMeta).
func readMeta(ctx context.Context, store storage.Store) (*Meta, error) {
	return assembleMeta(func(path ...string) (any, bool, error) {
		v, err := storage.ReadOne(ctx, store, storage.Path(path))
		if storage.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if av, ok := v.(ast.Value); ok {
			if v, err = ast.JSON(av); err != nil {
				return nil, false, err
			}
		}
		return v, true, nil
	})
}

// metaReader reads one document of the policy's data by its path: from a
// store, or from a remote OPA's data API. found is false when nothing is
// there.
type metaReader func(path ...string) (v any, found bool, err error)

// assembleMeta reads what the policy says of itself, data.chock.meta,
// through read. It is the one place an engine, embedded or remote, learns
// a policy's layers.
func assembleMeta(read metaReader) (*Meta, error) {
	v, found, err := read("chock", "meta")
	if err != nil {
		return nil, fmt.Errorf("reading data.chock.meta: %w", err)
	}
	if !found {
		return nil, compile.ErrNotChockBundle
	}
	m, err := compile.MetaOf(map[string]any{"chock": map[string]any{"meta": v}})
	if err != nil || len(m.Orgs) == 0 {
		return m, err
	}
	// A project that links its orgs: each org's layer comes from its own
	// bundle, numbered there from 0 and here from its layer's base (the
	// project's fixed Stride), so fill reads them as any layer.
	for _, name := range m.Orgs {
		if !action.ValidOrgName(name) {
			return nil, fmt.Errorf("%w: the policy links an org named %q, which cannot name an org bundle", ErrContract, name)
		}
		ov, found, err := read(compile.OrgsRoot, name, "meta")
		if err != nil {
			return nil, fmt.Errorf("reading data.chock_orgs[%q].meta: %w", name, err)
		}
		if !found {
			return nil, fmt.Errorf("%w: the policy links org %q, whose bundle is not loaded; load its bundle (chock compile --org-only) beside this one", ErrUnavailable, name)
		}
		om, err := compile.OrgMetaOf(name, ov)
		if err != nil {
			return nil, fmt.Errorf("org %q: %w", name, err)
		}
		m.Layers = append(m.Layers, om.Layers[0])
		m.Segments = m.Segments || om.Segments
	}
	return m, nil
}

// probeAction is an action no policy names, asked once when a bundle is
// loaded so a bundle that breaks the contract is refused then, before any
// session relies on it.
const probeAction = "chock.probe"

// probeActions are what the probe asks at each phase: a malformed action,
// one no policy names, and for the first and last rule of every
// layer an action its pattern matches.
func (p *prepared) probeActions() []string {
	out := []string{"chock..probe", probeAction}
	for _, l := range p.meta.Layers {
		for i, r := range l.Rules {
			if i == 0 || i == len(l.Rules)-1 {
				out = append(out, strings.ReplaceAll(r.Pattern, "*", "chock-probe"))
			}
		}
	}
	return out
}

// probe asks decisions at each phase, a malformed one among them, and
// checks the answers of data.chock.core against the contract; given full,
// data.chock.decision's too, and that the two agree.
func (p *prepared) probe(ctx context.Context, full *rego.PreparedEvalQuery) error {
	if len(p.meta.Layers) == 0 {
		return contractErr("the bundle records no policy layer")
	}
	for _, ph := range []config.Phase{config.Start, config.Loop} {
		for _, a := range p.probeActions() {
			d, err := p.decide(ctx, a, ph)
			if err != nil {
				return err
			}
			if full == nil {
				continue
			}
			rs, err := full.Eval(ctx, rego.EvalParsedInput(actionInput(a, ph)))
			if err != nil {
				return fmt.Errorf("evaluating %s: %w", a, err)
			}
			if len(rs) != 1 || len(rs[0].Expressions) != 1 {
				return contractErr("no decision for %s", a)
			}
			fd, err := toDecision(rs[0].Expressions[0].Value, a, ph, &p.meta)
			if err != nil {
				return err
			}
			if malformed := d.Error != ""; (fd.Error != "") != malformed {
				return contractErr("%q is malformed: %v; the answer says: %v", a, malformed, fd.Error != "")
			}
			if !sameDecision(d, fd) {
				return contractErr("data.chock.decision and data.chock.core disagree on %q at %s", a, ph)
			}
		}
	}
	return nil
}

// sameDecision says whether two decisions agree, their error texts aside.
func sameDecision(a, b *Decision) bool {
	x, y := *a, *b
	x.Error, y.Error = "", ""
	return reflect.DeepEqual(x, y)
}

// Swap replaces the policy with the bundles given, loaded side by side as
// NewBundles loads them. Decisions in flight finish on the old one; the
// new one is prepared before it takes over, so a bad bundle changes nothing.
func (e *Engine) Swap(ctx context.Context, bs ...*bundle.Bundle) error {
	if e.pinned || e.remote != nil {
		return errors.New("this engine's policy cannot be replaced")
	}
	p, err := prepare(ctx, bs)
	if err != nil {
		return err
	}
	e.cur.Store(p)
	return nil
}

// Revision is the loaded bundle's revision (its content digest); for
// several bundles, each one's by name. A remote engine's is the one its
// last answer came from.
func (e *Engine) Revision() string {
	if e.remote != nil {
		return e.remote.revision()
	}
	return e.cur.Load().revision
}

// Meta returns what the loaded bundle records of its sources.
func (e *Engine) Meta() Meta {
	if e.remote != nil {
		return e.remote.meta()
	}
	return e.cur.Load().meta
}

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
		return fmt.Sprintf("%s (%s)", l.Rule.Pattern, l.Rule.Span)
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

// Decide asks the policy about one action at one phase. A malformed action
// is not an error: it is denied, with Decision.Error saying why.
// The result is the caller's to keep or change.
func (e *Engine) Decide(ctx context.Context, action string, phase config.Phase) (*Decision, error) {
	return e.decideLogged(ctx, action, phase, true)
}

// DecideUnlogged is Decide without telling the decision logger: for the
// decisions a session works out before any call asks (its exec rights,
// one for each program on its PATH), which would fill the decision log
// with decisions no call made. A remote OPA logs what it is asked itself.
func (e *Engine) DecideUnlogged(ctx context.Context, action string, phase config.Phase) (*Decision, error) {
	return e.decideLogged(ctx, action, phase, false)
}

// DecideManyUnlogged is DecideUnlogged for each of actions, in their
// order: a remote OPA is asked about many in one request
// (data.chock.decisions), where one request each would cost a round trip
// each. Any failure fails the whole.
func (e *Engine) DecideManyUnlogged(ctx context.Context, actions []string, phase config.Phase) ([]*Decision, error) {
	if e.remote != nil {
		return e.remote.decideMany(ctx, actions, phase)
	}
	return each(actions, func(a string) (*Decision, error) { return e.decideLogged(ctx, a, phase, false) })
}

func (e *Engine) decideLogged(ctx context.Context, action string, phase config.Phase, logged bool) (*Decision, error) {
	if e.remote != nil {
		return e.remote.decide(ctx, action, phase)
	}
	p := e.cur.Load()
	if p.failure != nil {
		return nil, fmt.Errorf("deciding %q: %w: %w", action, ErrUnavailable, p.failure)
	}
	key := decisionKey{action, phase}
	d, ok := p.decisions.get(key)
	if ok {
		d = d.clone()
	} else {
		var err error
		if d, err = p.decide(ctx, action, phase); err != nil {
			return nil, fmt.Errorf("deciding %q: %w", action, err)
		}
		p.decisions.put(key, d.clone())
	}
	d.Revision = p.revision
	if e.logs != nil && logged {
		if err := e.logDecision(ctx, p, d); err != nil {
			return nil, fmt.Errorf("deciding %q: %w: the decision log refused it: %w", action, ErrUnavailable, err)
		}
	}
	return d, nil
}

// logDecision gives the decision an ID and tells the decision logger.
func (e *Engine) logDecision(ctx context.Context, p *prepared, d *Decision) error {
	id, err := NewDecisionID()
	if err != nil {
		return err
	}
	d.ID = id
	return e.logs.LogDecision(ctx, DecisionEvent{
		ID:        id,
		Path:      "chock/decision",
		Input:     map[string]any{"action": d.Action, "phase": d.Phase.String()},
		Decision:  d.clone(),
		Revisions: p.revisions,
		Time:      time.Now().UTC(),
	})
}

// NewDecisionID is a random version 4 UUID, the form OPA gives its
// decision IDs.
func NewDecisionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// decide checks the action, asks data.chock.core which rule decides each
// layer, and fills the decision in from the bundle's meta.
func (p *prepared) decide(ctx context.Context, a string, phase config.Phase) (*Decision, error) {
	n, ok := action.Valid(a)
	if !ok {
		return &Decision{Action: a, Phase: phase, Decision: config.Deny, Error: compile.ActionError}, nil
	}
	rs, err := p.core.Eval(ctx, rego.EvalParsedInput(p.coreInput(a, n)))
	if err != nil {
		return nil, fmt.Errorf("evaluating %q: %w", a, err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return nil, contractErr("data.chock.core gives no answer for %q", a)
	}
	return p.fill(rs[0].Expressions[0].Value, a, phase)
}

var (
	actionKey   = ast.InternedTerm("action")
	segmentsKey = ast.InternedTerm("segments")
)

// coreInput is data.chock.core's input: the action, and its n segments
// when the policy matches rules on them.
func (p *prepared) coreInput(a string, n int) ast.Value {
	if !p.meta.Segments {
		return ast.NewObject([2]*ast.Term{actionKey, ast.StringTerm(a)})
	}
	segs := make([]*ast.Term, 0, n)
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
	for i, l := range d.Layers {
		c.Layers[i] = l
		if l.Rule != nil {
			r := *l.Rule
			c.Layers[i].Rule = &r
		}
	}
	for i, l := range d.Layers {
		if l.DefaultSpan != nil {
			sp := *l.DefaultSpan
			c.Layers[i].DefaultSpan = &sp
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
}

// The keys of chock's decision object, exactly (encoding/json would take
// any case, and a null for any value).
func decisionKeys() keySet {
	return keySet{required: []string{"action", "phase", "decision", "layers", "capped_by", "start_refusal"}, optional: []string{"error"}}
}

func layerKeys() keySet {
	return keySet{required: []string{"layer", "name", "decision", "default", "rule"}, optional: []string{"default_span"}}
}

func ruleKeys() keySet { return keySet{required: []string{"pattern", "decision", "why", "span"}} }

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
			return nil, contractErr("layer %q decides %s by a rule %s the bundle does not record so", l.Name, l.Decision, l.Rule.Pattern)
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
		l.Rule = &Rule{Pattern: w.Rule.Pattern, Decision: *w.Rule.Decision, Why: w.Rule.Why, Span: w.Rule.Span}
	}
	return l, nil
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
	As   string    `json:"as"`
	To   string    `json:"to"`
	Span diag.Span `json:"span"`
}

// Secrets returns the secrets offered to a call of a program or to a
// server, in declaration order.
func (e *Engine) Secrets(ctx context.Context, t Target) ([]Secret, error) {
	if (t.Action == "") == (t.Server == "") {
		return nil, errors.New("secrets: name an action or a server")
	}
	if e.remote != nil {
		return e.remote.secrets(ctx, t)
	}
	p := e.cur.Load()
	if p.failure != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, p.failure)
	}
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
	out, err := secretsAnswer(rs[0].Expressions[0].Value)
	if err != nil {
		return nil, err
	}
	p.offers.put(t, append([]Secret(nil), out...))
	return out, nil
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
