package load

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
)

const project = `.{ .policy = .{ .allow = .{"exec.path.gh"} }, .credentials = .{ .store = .env } }`
const org = `.{ .name = "acme", .policy = .{ .deny = .{"exec.path.gh"} } }`

func orgBundle(t *testing.T) []byte {
	t.Helper()
	o, ds := config.LoadOrg("org.zon", []byte(org))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	out, err := compile.Compile(compile.Input{Orgs: []*config.Org{o}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := out.WriteBundle(&b, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestFromSources(t *testing.T) {
	ctx := context.Background()
	for _, orgs := range [][]Source{{{"org.zon", []byte(org)}}, {{"acme.tar.gz", orgBundle(t)}}} {
		p, ds, err := FromSources(ctx, Input{Configs: []Source{{"chock.zon", []byte(project)}}, Orgs: orgs})
		if err != nil || ds.HasErrors() {
			t.Fatalf("%v %v", err, ds)
		}
		d, err := p.Engine.Decide(ctx, "exec.path.gh", config.Loop)
		if err != nil || d.Decision != config.Deny || d.Decider().Spelling() != "org:acme" {
			t.Fatalf("%+v %v", d, err)
		}
		if p.Engine.Meta().Credentials != config.StoreEnv || p.Config == nil || len(p.Orgs) != 1 {
			t.Errorf("policy %+v", p)
		}
	}
}

func TestFromSourcesRefusesLintErrors(t *testing.T) {
	bad := `.{ .policy = .{ .allow = .{"exec.path.gh"}, .deny = .{"exec.path.gh"} } }`
	_, ds, err := FromSources(context.Background(), Input{Configs: []Source{{"chock.zon", []byte(bad)}}})
	if !errors.Is(err, ErrLint) || len(Errors(ds)) != 1 {
		t.Fatalf("%v %v", err, ds)
	}
}

func TestFromSourcesErrors(t *testing.T) {
	ctx := context.Background()
	if _, _, err := FromSources(ctx, Input{}); !errors.Is(err, ErrOneConfig) {
		t.Errorf("no config: %v", err)
	}
	two := []Source{{"a.zon", []byte(project)}, {"b.zon", []byte(project)}}
	if _, _, err := FromSources(ctx, Input{Configs: two}); !errors.Is(err, ErrOneConfig) {
		t.Errorf("two configs: %v", err)
	}
	_, ds, err := FromSources(ctx, Input{Configs: []Source{{"chock.zon", []byte(".{ .policy = 1 }")}}})
	if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrLint) || !ds.HasErrors() {
		t.Errorf("a config that does not decode: %v %v", err, ds)
	}
}

func TestUnsignedOrgUnderAKey(t *testing.T) {
	_, err := Read(Input{Orgs: []Source{{"org.zon", []byte(org)}}, Read: compile.ReadOptions{Verify: &compile.Key{Material: []byte("-----BEGIN PUBLIC KEY-----")}}})
	if !errors.Is(err, ErrUnsignedOrg) || !strings.Contains(err.Error(), "org.zon is an org source") {
		t.Fatalf("%v", err)
	}
}

func TestFromBundleRefusesAnOrgBundle(t *testing.T) {
	_, err := FromBundle(context.Background(), "acme.tar.gz", orgBundle(t), compile.ReadOptions{})
	if !errors.Is(err, ErrOrgBundle) {
		t.Fatalf("%v", err)
	}
}

// TestLintOnce: an org source linted with two project files reports its
// findings once.
func TestLintOnce(t *testing.T) {
	badOrg := `.{ .name = "acme", .policy = .{ .deny = .{"exce.path.gh"} } }`
	l, err := Read(Input{Configs: []Source{{"a.zon", []byte(project)}, {"b.zon", []byte(project)}}, Orgs: []Source{{"org.zon", []byte(badOrg)}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range l.Lint() {
		if d.Span.File == "org.zon" && d.Code == "unknown-namespace" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the org's finding reported %d times", n)
	}
}
