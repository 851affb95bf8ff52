package eval

// This file prepares a policy: bundles loaded side by side and compiled
// together (or a policy compiled elsewhere), their revisions, what the
// policy says of itself (data.chock.meta), and the probe that holds a new
// policy to the contract before it decides anything.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

// Meta is what a compiled bundle records of its sources (data.chock.meta).
type Meta = compile.Meta

// RuleMeta is one rule of a layer, with its position.
type RuleMeta = compile.RuleMeta

// RevisionOf is the revision of a policy built from the bundles given by
// name (revisionOf).
func RevisionOf(bundles map[string]BundleInfo) string { return revisionOf(revisionsOf(bundles)) }

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
// layer's own (chock's file defaults aside) an action its pattern matches.
func (p *prepared) probeActions() []string {
	out := []string{"chock..probe", probeAction}
	for _, l := range p.meta.Layers {
		// The layer's first and last rules of its own (not chock's).
		first, last := -1, -1
		for i := range l.Rules {
			if !l.Rules[i].Builtin {
				if first < 0 {
					first = i
				}
				last = i
			}
		}
		for _, i := range []int{first, last} {
			if i >= 0 && (i == first || last != first) {
				out = append(out, strings.ReplaceAll(l.Rules[i].Pattern, "*", "chock-probe"))
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
			d, err := p.decide(ctx, a, nil, ph)
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
