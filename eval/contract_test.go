package eval

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// withDecision is the compiled bundle of a small policy with
// data.chock.decision replaced by body: a bundle edited by hand.
func withDecision(t *testing.T, body string) *bundle.Bundle {
	t.Helper()
	c, _ := config.Load("chock.zon", []byte(`.{ .policy = .{ .allow = .{"exec.path.gh"} } }`))
	out, err := compile.Compile(compile.Input{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	b, err := out.Bundle(nil)
	if err != nil {
		t.Fatal(err)
	}
	src := "package chock\n\nimport rego.v1\n\n" + body + "\n\nsecrets := []\n"
	m, err := ast.ParseModuleWithOpts("/chock/main.rego", src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range b.Modules {
		if b.Modules[i].Path == "/chock/main.rego" {
			b.Modules[i].Raw, b.Modules[i].Parsed = []byte(src), m
		}
	}
	return b
}

// TestContract: a bundle whose decision object is not the contract's is
// refused when it is loaded, with ErrContract, and never decides.
func TestContract(t *testing.T) {
	layer := `{"layer": "project", "name": "project", "decision": "allow", "default": false, "rule": {"pattern": "exec.*", "decision": "allow"}}`
	ok := `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": [` + layer + `], "capped_by": null}`
	for _, c := range []struct{ name, body, want string }{
		{"no layers", `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": [], "capped_by": null}`, "0 layers in the answer, 1 in the bundle"},
		{"not an object", `decision := "allow"`, "the answer is a JSON string"},
		{"undefined", `decision := 1 if false`, "no decision"},
		{"another action", `decision := {"action": "exec.path.x", "phase": input.phase, "decision": "allow", "layers": [` + layer + `]}`, `answers about "exec.path.x"`},
		{"bad decision", `decision := {"action": input.action, "phase": input.phase, "decision": "maybe", "layers": [` + layer + `]}`, `unknown decision "maybe"`},
		{"layers not an array", `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": {}}`, "layers is a JSON object"},
		{"a layer without rule or default", `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": [{"layer": "project", "name": "project", "decision": "allow"}]}`, "neither a rule nor its default"},
		{"a layer of another name", `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": [{"layer": "org", "name": "acme", "decision": "allow", "default": true}]}`, `layer org "acme" where the bundle records project "project"`},
		{"capped by nobody", `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": [` + layer + `], "capped_by": "ghost"}`, `capped_by "ghost" names no org layer`},
		{"malformed action allowed", ok, `"chock..probe" is malformed`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(context.Background(), withDecision(t, c.body))
			if !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrContract with %q", err, c.want)
			}
		})
	}
	// The same hand-written decision, right for well-formed and malformed
	// actions alike, loads and decides.
	good := `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": [` + layer + `], "capped_by": null} if not contains(input.action, "..")
decision := {"action": input.action, "phase": input.phase, "decision": "deny", "error": "bad", "layers": [], "capped_by": null} if contains(input.action, "..")`
	e, err := New(context.Background(), withDecision(t, good))
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(context.Background(), "exec.path.gh", config.Loop)
	if err != nil || d.Decision != config.Allow || d.Decider().Rule.Pattern != "exec.*" {
		t.Fatalf("%+v %v", d, err)
	}
}

// TestImpureBundleRefused: a bundle whose policy calls http.send (or reads
// opa.runtime's environment) does not load, so it can send nothing.
func TestImpureBundleRefused(t *testing.T) {
	layer := `{"layer": "project", "name": "project", "decision": "allow", "default": true, "rule": null}`
	for _, call := range []string{`http.send({"method": "get", "url": "http://127.0.0.1:1/leak"})`, `opa.runtime()`, `time.now_ns()`, `print("x")`} {
		body := `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": [` + layer + `], "capped_by": null} if {
	_ := ` + call + `
}`
		if _, err := New(context.Background(), withDecision(t, body)); err == nil || !strings.Contains(err.Error(), "undefined function") {
			t.Errorf("%s: %v", call, err)
		}
	}
}
