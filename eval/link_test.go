package eval

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// linkedInput is a project under two orgs, one matched on segments, one
// whose default caps the project.
func linkedInput(t *testing.T) compile.Input {
	c, ds := config.Load("chock.zon", []byte(`.{ .policy = .{
		.allow = .{ "secret.use.*", "exec.path.gh", "exec.*", "mcp.*.tool.search", "mcp.notion.*" },
		.ask = .{ "exec.path.git" },
		.deny = .{ "exec.path.curl" },
	} }`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	in := compile.Input{Config: c}
	for i, src := range []string{
		`.{ .name = "acme", .policy = .{ .deny = .{"exec.path.gh", "mcp.*.tool.delete"}, .ask = .{"exec.path.git", "mcp.*.host.*"} } }`,
		`.{ .name = "strict-co", .policy = .{ .default = .ask, .allow = .{"secret.*", "mcp.notion.*", "exec.*"} } }`,
	} {
		o, ds := config.LoadOrg(fmt.Sprintf("org%d.zon", i+1), []byte(src))
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		in.Orgs = append(in.Orgs, o)
	}
	return in
}

func mustBundle(t *testing.T, in compile.Input) *bundle.Bundle {
	t.Helper()
	out, err := compile.Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := out.Bundle(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNewBundlesLinked: a linking project bundle and its orgs' bundles,
// loaded side by side, decide as the combined bundle does; an org's bundle
// missing refuses the policy with ErrUnavailable naming it; overlapping
// roots are refused.
func TestNewBundlesLinked(t *testing.T) {
	ctx := context.Background()
	in := linkedInput(t)
	combined, err := New(ctx, mustBundle(t, in))
	if err != nil {
		t.Fatal(err)
	}
	linked := in
	linked.LinkOrgs = true
	project := mustBundle(t, linked)
	var orgs []*bundle.Bundle
	for _, o := range in.Orgs {
		orgs = append(orgs, mustBundle(t, compile.Input{Orgs: []*config.Org{o}}))
	}
	e, err := NewBundles(ctx, project, orgs[1], orgs[0])
	if err != nil {
		t.Fatal(err)
	}
	if m := e.Meta(); len(m.Layers) != 3 || !m.Segments || m.Stride != compile.LinkStride {
		t.Fatalf("assembled meta: %d layers, segments %v, stride %d", len(m.Layers), m.Segments, m.Stride)
	}
	if rev := e.Revision(); !strings.Contains(rev, "chock_orgs/acme=") || !strings.Contains(rev, "chock=") {
		t.Errorf("revision %q does not name every bundle", rev)
	}
	var actions []string
	for _, l := range combined.Meta().Layers {
		for _, r := range l.Rules {
			actions = append(actions, strings.ReplaceAll(r.Pattern, "*", "x"), strings.ReplaceAll(r.Pattern, "*", "y.z"))
		}
	}
	actions = append(actions, "exec.path.gh", "mcp.a.host.b", "mcp.a.host.b.c", "nothing.here", "a..b")
	capped := 0
	for _, a := range actions {
		for _, ph := range []config.Phase{config.Start, config.Loop} {
			want, err := combined.Decide(ctx, a, ph)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Decide(ctx, a, ph)
			if err != nil {
				t.Fatal(err)
			}
			want.Revision, got.Revision = "", ""
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s at %s:\n linked   %+v\n combined %+v", a, ph, got, want)
			}
			if got.CappedBy != nil {
				capped++
			}
		}
	}
	if capped == 0 {
		t.Error("no decision capped by an org")
	}

	// An org's bundle missing: refused, naming it.
	if _, err := NewBundles(ctx, project, orgs[0]); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `"strict-co"`) {
		t.Errorf("strict-co's bundle missing: %v", err)
	}
	// Overlapping roots: two project bundles.
	if _, err := NewBundles(ctx, project, mustBundle(t, in)); !errors.Is(err, ErrOverlappingRoots) {
		t.Errorf("two project bundles: %v", err)
	}
}

// TestRemoteLinked: opa run --server with a linking project bundle and
// its orgs' bundles side by side, asked over REST, decides as the
// combined bundle does in process; with one org's bundle missing, every
// decision is refused and names it.
func TestRemoteLinked(t *testing.T) {
	ctx := context.Background()
	in := linkedInput(t)
	combined, err := New(ctx, mustBundle(t, in))
	if err != nil {
		t.Fatal(err)
	}
	linked := in
	linked.LinkOrgs = true
	write := func(in compile.Input) string {
		out, err := compile.Compile(in)
		if err != nil {
			t.Fatal(err)
		}
		return writeBundle(t, t.TempDir(), out)
	}
	project := write(linked)
	org1 := write(compile.Input{Orgs: []*config.Org{in.Orgs[0]}})
	org2 := write(compile.Input{Orgs: []*config.Org{in.Orgs[1]}})
	srv := startOPA(t, nil, "--bundle", project, "--bundle", org1, "--bundle", org2)
	remote, err := NewRemote(ctx, RemoteOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	acts := remoteActions(200, 5)
	for _, ph := range []config.Phase{config.Start, config.Loop} {
		batch, err := remote.DecideManyUnlogged(ctx, acts, ph)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range acts {
			want, err := combined.Decide(ctx, a, ph)
			if err != nil {
				t.Fatal(err)
			}
			got, err := remote.Decide(ctx, a, ph)
			if err != nil {
				t.Fatalf("%q: %v", a, err)
			}
			same(t, got, want, "%q at %s", a, ph)
			same(t, batch[i], want, "%q at %s in a batch", a, ph)
		}
	}
	missing := startOPA(t, nil, "--bundle", project, "--bundle", org1)
	if _, err := NewRemote(ctx, RemoteOptions{URL: missing.URL}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "strict-co") || strings.Count(err.Error(), ErrUnavailable.Error()) != 1 {
		t.Errorf("with strict-co's bundle missing: %v", err)
	}
}

// TestOrgFromItsOwnBundle: a linked org's layer must come from the org's
// own bundle. An org bundle that also claims a second org's root, and
// carries a layer of its own making for that org, is refused; so is a
// project bundle that carries an org's layer itself.
func TestOrgFromItsOwnBundle(t *testing.T) {
	ctx := context.Background()
	in := linkedInput(t)
	linked := in
	linked.LinkOrgs = true
	project := mustBundle(t, linked)
	acme := mustBundle(t, compile.Input{Orgs: []*config.Org{in.Orgs[0]}})
	lax, ds := config.LoadOrg("lax.zon", []byte(`.{ .name = "strict-co", .policy = .{ .default = .allow } }`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	forged := mustBundle(t, compile.Input{Orgs: []*config.Org{lax}})
	squat := joined(acme, forged)
	if _, err := NewBundles(ctx, project, squat); !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), `"chock_orgs/strict-co"`) {
		t.Errorf("an org bundle standing in for another: %v", err)
	}
	own := joined(project, forged)
	if _, err := NewBundles(ctx, own, acme); !errors.Is(err, ErrContract) {
		t.Errorf("a project bundle carrying an org's layer: %v", err)
	}
}

// joined is one bundle holding the modules, data and roots of parts, the
// first one's manifest otherwise.
func joined(parts ...*bundle.Bundle) *bundle.Bundle {
	b := *parts[0]
	b.Modules, b.Data = nil, map[string]any{}
	var roots []string
	for _, p := range parts {
		b.Modules = append(b.Modules, p.Modules...)
		mergeData(b.Data, p.Data)
		roots = append(roots, *p.Manifest.Roots...)
	}
	b.Manifest.Roots = &roots
	return &b
}
