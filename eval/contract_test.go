package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	return withMain(t, func(main string) string {
		start, end := strings.Index(main, "\ndecision := {"), strings.Index(main, "\nsecrets := [")
		return main[:start] + "\n" + body + "\n" + main[end:]
	})
}

// withMain is the compiled bundle of a small policy with its package chock
// edited by edit: a bundle edited by hand.
func withMain(t *testing.T, edit func(string) string) *bundle.Bundle {
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
	src := edit(out.Modules[compile.MainModule])
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
	rule := `data.chock.meta.layers[0].rules[0]`
	layer := `{"layer": "project", "name": "project", "decision": "allow", "default": false, "rule": ` + rule + `}`
	// obj is a decision object, every key written, with extra (or changed)
	// keys on top.
	obj := func(extra string) string {
		return `decision := object.union({"action": input.action, "phase": input.phase, "decision": "allow", "layers": [` + layer + `], "capped_by": null, "start_refusal": false}, {` + extra + `})`
	}
	for _, c := range []struct{ name, body, want string }{
		{"no layers", obj(`"layers": []`), "0 layers in the answer, 1 in the bundle"},
		{"not an object", `decision := "allow"`, "the answer is not an object"},
		{"undefined", `decision := 1 if false`, "no decision"},
		{"another action", obj(`"action": "exec.path.x"`), `answers about "exec.path.x"`},
		{"bad decision", obj(`"decision": "maybe"`), `unknown decision "maybe"`},
		{"layers not an array", obj(`"layers": {}`), "layers is a JSON object"},
		{"a key in another case", obj(`"ACTION": input.action`), `has a key "ACTION" chock does not write`},
		{"a null", obj(`"start_refusal": null`), `"start_refusal" is null`},
		{"a key left out", `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": [` + layer + `], "capped_by": null}`, `has no "start_refusal"`},
		{"a layer without rule or default", obj(`"layers": [{"layer": "project", "name": "project", "decision": "allow", "default": false, "rule": null}]`), "neither a rule nor its default"},
		{"a layer of another name", obj(`"layers": [{"layer": "org", "name": "acme", "decision": "allow", "default": true, "rule": null}]`), `layer org "acme" where the bundle records project "project"`},
		{"a rule with a key left out", obj(`"layers": [{"layer": "project", "name": "project", "decision": "allow", "default": false, "rule": {"pattern": "x", "decision": "allow"}}]`), `layer 0's rule has no "why"`},
		{"capped by nobody", obj(`"capped_by": "ghost"`), `capped_by "ghost" names no org layer`},
		{"a decision its layers do not make", obj(`"decision": "deny"`), `the answer says deny, and its layers make it allow`},
		{"a rule the bundle does not record", obj(`"layers": [{"layer": "project", "name": "project", "decision": "allow", "default": false, "rule": {"pattern": "exec.*", "decision": "allow", "why": "", "span": {}}}]`), `by a rule exec.* the bundle does not record so`},
		{"a default the layer does not have", obj(`"layers": [{"layer": "project", "name": "project", "decision": "allow", "default": true, "rule": null}]`), `decides allow by a default of deny`},
		{"malformed action allowed", obj(``), `"chock..probe" is malformed`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(context.Background(), withDecision(t, c.body))
			if !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrContract with %q", err, c.want)
			}
		})
	}
	// A hand-written decision that keeps the contract, and answers as the
	// policy does, right for well-formed and malformed actions alike,
	// loads; the engine decides from data.chock.core.
	good := `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": [{"layer": "project", "name": "project", "decision": "allow", "default": false, "rule": data.chock.meta.layers[0].rules[0]}], "capped_by": null, "start_refusal": false} if input.action == "exec.path.gh"
decision := {"action": input.action, "phase": input.phase, "decision": "deny", "layers": [{"layer": "project", "name": "project", "decision": "deny", "default": true, "rule": null}], "capped_by": null, "start_refusal": false} if {
	not contains(input.action, "..")
	input.action != "exec.path.gh"
}
decision := {"action": input.action, "phase": input.phase, "decision": "deny", "error": "bad", "layers": [], "capped_by": null, "start_refusal": false} if contains(input.action, "..")`
	e, err := New(context.Background(), withDecision(t, good))
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(context.Background(), "exec.path.gh", config.Loop)
	if err != nil || d.Decision != config.Allow || d.Decider().Rule.Pattern != "exec.path.gh" {
		t.Fatalf("%+v %v", d, err)
	}
	// data.chock.decision and data.chock.core must agree.
	for _, c := range []struct{ name, body, want string }{
		{"decisions disagree", `decision := {"action": input.action, "phase": input.phase, "decision": "deny", "layers": [{"layer": "project", "name": "project", "decision": "deny", "default": true, "rule": null}], "capped_by": null, "start_refusal": false} if not contains(input.action, "..")
decision := {"action": input.action, "phase": input.phase, "decision": "deny", "error": "bad", "layers": [], "capped_by": null, "start_refusal": false} if contains(input.action, "..")`, `data.chock.decision and data.chock.core disagree on "exec.path.gh"`},
	} {
		if _, err := New(context.Background(), withDecision(t, c.body)); !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrContract with %q", c.name, err, c.want)
		}
	}
}

// TestCoreContract: a bundle whose data.chock.core answers outside its
// contract (a set of numbers the bundle's rules can have) is refused when
// it is loaded.
func TestCoreContract(t *testing.T) {
	// The test policy's one rule, and chock's file defaults beside it.
	n := 1 + len(config.WithBuiltins(&config.Policy{}, "project").Rules)
	for _, c := range []struct{ name, core, want string }{
		{"undefined", `core := 1 if false`, `data.chock.core gives no answer for "chock.probe"`},
		{"not a set", `core := 7`, `data.chock.core answers 7, not a set of rule numbers`},
		{"not a number", `core contains "x"`, `data.chock.core answers "x", not a rule number`},
		{"a negative number", `core contains -1`, `answers -1, not a rule number`},
		{"a fraction", `core contains 0.5`, `answers 0.5, not a rule number`},
		{"a number no rule has", `core contains 9999`, fmt.Sprintf(`rule number 9999, where layer 0 records %d rules`, n)},
		{"a number in no layer", `core contains 10000`, `rule number 10000 is in no layer of the bundle's 1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := withMain(t, func(main string) string { return main })
			src := "package chock\n\nimport rego.v1\n\n" + c.core + "\n"
			m, err := ast.ParseModuleWithOpts("/chock/layer/project.rego", src, ast.ParserOptions{RegoVersion: ast.RegoV1})
			if err != nil {
				t.Fatal(err)
			}
			for i := range b.Modules {
				if b.Modules[i].Path == "/chock/layer/project.rego" {
					b.Modules[i].Raw, b.Modules[i].Parsed = []byte(src), m
				}
			}
			if _, err := New(context.Background(), b); !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrContract with %q", err, c.want)
			}
		})
	}
}

// TestNotUTF8Action: an action with a byte that is not UTF-8 is malformed
// and denied, as it was before the answer went through JSON.
func TestNotUTF8Action(t *testing.T) {
	e, _ := build(t, `.{ .policy = .{ .allow = .{"exec.*"} } }`)
	d, err := e.Decide(context.Background(), "exec.path.\xff", config.Loop)
	if err != nil || d.Decision != config.Deny || d.Error == "" || d.Action != "exec.path.\xff" {
		t.Fatalf("%+v %v", d, err)
	}
}

// TestCachedDecisionUnchanged: a caller that changes a decision it got
// changes no later one, its default's span included.
func TestCachedDecisionUnchanged(t *testing.T) {
	e, _ := build(t, `.{ .policy = .{ .default = .deny } }`)
	d, _ := e.Decide(context.Background(), "exec.path.gh", config.Loop)
	d.Layers[0].DefaultSpan.Start.Line = 999
	d2, _ := e.Decide(context.Background(), "exec.path.gh", config.Loop)
	if d2.Layers[0].DefaultSpan.Start.Line == 999 {
		t.Fatal("the cached decision changed")
	}
}

// TestImpureBundleRefused: a bundle whose policy calls http.send (or reads
// opa.runtime's environment) does not load, so it can send nothing.
func TestImpureBundleRefused(t *testing.T) {
	layer := `{"layer": "project", "name": "project", "decision": "allow", "default": true, "rule": null}`
	for _, call := range []string{`http.send({"method": "get", "url": "http://127.0.0.1:1/leak"})`, `opa.runtime()`, `time.now_ns()`, `print("x")`} {
		body := `decision := {"action": input.action, "phase": input.phase, "decision": "allow", "layers": [` + layer + `], "capped_by": null, "start_refusal": false} if {
	_ := ` + call + `
}`
		if _, err := New(context.Background(), withDecision(t, body)); err == nil || !strings.Contains(err.Error(), "undefined function") {
			t.Errorf("%s: %v", call, err)
		}
	}
}

// FuzzDecision feeds arbitrary JSON to the decision decoder: it refuses or
// types it, never panics, and what it types keeps the contract.
func FuzzDecision(f *testing.F) {
	f.Add(`{"action":"exec.path.gh","phase":"loop","decision":"deny","layers":[{"layer":"project","name":"project","decision":"deny","default":true,"rule":null}],"capped_by":null,"start_refusal":false}`)
	f.Add(`{"action":"a..b","phase":"loop","decision":"deny","error":"bad","layers":[],"capped_by":null,"start_refusal":false}`)
	meta := &Meta{Layers: []compile.LayerMeta{{Kind: "project", Name: "project"}}}
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		m, _ := v.(map[string]any)
		action, _ := m["action"].(string)
		d, err := toDecision(v, action, config.Loop, meta)
		if err != nil {
			return
		}
		if d.Error == "" && len(d.Layers) != 1 || d.Error != "" && (len(d.Layers) != 0 || d.Decision != config.Deny) {
			t.Fatalf("%s typed as %+v", s, d)
		}
		if d.Error == "" && d.Decider() == nil {
			t.Fatalf("%s has no decider", s)
		}
	})
}
