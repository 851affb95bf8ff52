package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadExample(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "chock.zon"))
	if err != nil {
		t.Fatal(err)
	}
	c, ds := Load("chock.zon", src)
	if len(ds) > 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	if c.Policy.DefaultSet != true || c.Policy.Default != Deny {
		t.Errorf("default %v set %v", c.Policy.Default, c.Policy.DefaultSet)
	}
	var notion *Rule
	for _, r := range c.Policy.Rules {
		if r.Pattern.String() == "mcp.notion.host.com.notion.*" {
			notion = r
		}
	}
	if notion == nil || notion.Decision != Allow || notion.Why.Value != "the docs team's workspace" || notion.From != "rules" {
		t.Fatalf("notion rule: %+v", notion)
	}
	if notion.Span.Start.Line != 17 || notion.Span.Start.Col != 27 {
		t.Errorf("notion rule span %v", notion.Span)
	}
	if len(c.Secrets) != 2 || c.Secrets[1].Bind != BindHeader || c.Secrets[1].Variable() != "Authorization" || c.Secrets[0].Variable() != "GITHUB_TOKEN" {
		t.Errorf("secrets: %+v %+v", c.Secrets[0], c.Secrets[1])
	}
	if len(c.Servers) != 2 || !c.Servers[0].HasURL || !c.Servers[1].HasCommand || c.Servers[1].Command[0].Value != "mcp-server-time" {
		t.Errorf("servers: %+v", c.Servers)
	}
	if len(c.Expect) != 3 || c.Expect[2].Phase != Start || c.Expect[1].Decision != Deny {
		t.Errorf("expect: %+v", c.Expect)
	}
}

func TestDecodeCollectsEveryError(t *testing.T) {
	src := `.{
    .policy = .{ .alow = .{}, .default = 3, .deny = .{ "a..b", 7 } },
    .secrets = .{ .{ .nam = "X" } },
    .credentials = .{ .store = "vault" },
}`
	_, ds := Load("x.zon", []byte(src))
	want := []string{CodeUnknownField, CodeWrongType, CodeEmptySegment, CodeWrongType, CodeUnknownField, CodeMissingField, CodeMissingField, CodeUnknownStore}
	if len(ds) != len(want) {
		t.Fatalf("got %d diagnostics, want %d: %v", len(ds), len(want), ds)
	}
	for i, d := range ds {
		if d.Code != want[i] {
			t.Errorf("diagnostic %d: %s, want %s (%s)", i, d.Code, want[i], d.Message)
		}
	}
	if ds[1].Message != ".policy.default is an integer, want an enum literal or a string" {
		t.Errorf("wrong-type message: %q", ds[1].Message)
	}
}

func TestOrgDefaults(t *testing.T) {
	o, ds := LoadOrg("org.zon", []byte(`.{ .name = "acme", .policy = .{ .deny = .{"exec.path.curl"} } }`))
	if len(ds) > 0 {
		t.Fatal(ds)
	}
	if o.Policy.Default != Allow || o.Policy.DefaultSet {
		t.Errorf("an org without .default sets no ceiling: %v %v", o.Policy.Default, o.Policy.DefaultSet)
	}
	o, _ = LoadOrg("org.zon", []byte(`.{ .name = "acme", .policy = .{ .default = .ask } }`))
	if o.Policy.Default != Ask {
		t.Errorf("org default %v", o.Policy.Default)
	}
}

func TestNearest(t *testing.T) {
	if got := nearest("secret", Blocks); got != "secrets" {
		t.Errorf("nearest(secret) = %q", got)
	}
	if got := nearest("theme", Blocks); got != "" {
		t.Errorf("nearest(theme) = %q", got)
	}
}
