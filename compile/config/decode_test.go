package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/action"
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
	if c.Policy.Default.Set != true || c.Policy.Default.Value != Deny {
		t.Errorf("default %v set %v", c.Policy.Default.Value, c.Policy.Default.Set)
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
	if len(c.Secrets) != 2 || c.Secrets[1].Bind.Value != BindHeader || c.Secrets[1].Variable() != "Authorization" || c.Secrets[0].Variable() != "GITHUB_TOKEN" {
		t.Errorf("secrets: %+v %+v", c.Secrets[0], c.Secrets[1])
	}
	if len(c.Servers) != 2 || !c.Servers[0].URL.Set || !c.Servers[1].Command.Set || c.Servers[1].Command.Value[0].Value != "mcp-server-time" {
		t.Errorf("servers: %+v", c.Servers)
	}
	if len(c.Expect) != 3 || c.Expect[2].Phase.Value != Start || c.Expect[1].Decision.Value != Deny {
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
	if o.Policy.Default.Value != Allow || o.Policy.Default.Set {
		t.Errorf("an org without .default sets no ceiling: %v %v", o.Policy.Default.Value, o.Policy.Default.Set)
	}
	o, _ = LoadOrg("org.zon", []byte(`.{ .name = "acme", .policy = .{ .default = .ask } }`))
	if o.Policy.Default.Value != Ask {
		t.Errorf("org default %v", o.Policy.Default.Value)
	}
}

func TestNearest(t *testing.T) {
	if got := action.Nearest("secret", Blocks); got != "secrets" {
		t.Errorf("Nearest(secret) = %q", got)
	}
	if got := action.Nearest("theme", Blocks); got != "" {
		t.Errorf("Nearest(theme) = %q", got)
	}
}

// TestEnumsText: every enum reads and writes as its name, in JSON too, and
// an unknown name is an error naming the choices.
func TestEnumsText(t *testing.T) {
	var v struct {
		D Decision `json:"d"`
		P Phase    `json:"p"`
		B Bind     `json:"b"`
		S Store    `json:"s"`
	}
	if err := json.Unmarshal([]byte(`{"d":"ask","p":"start","b":"header","s":"keyring"}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.D != Ask || v.P != Start || v.B != BindHeader || v.S != StoreKeyring {
		t.Fatalf("%+v", v)
	}
	out, _ := json.Marshal(v)
	if string(out) != `{"d":"ask","p":"start","b":"header","s":"keyring"}` {
		t.Errorf("%s", out)
	}
	if err := json.Unmarshal([]byte(`{"d":"maybe"}`), &v); err == nil || !strings.Contains(err.Error(), `unknown decision "maybe" (want deny, ask, allow)`) {
		t.Errorf("%v", err)
	}
	if _, ok := ParseStore("vault"); ok {
		t.Error("vault parsed")
	}
	if b, ok := ParseBind("file"); !ok || b != BindFile {
		t.Error("file")
	}
}
