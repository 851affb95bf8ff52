package compile

import (
	"bytes"
	"encoding/json"
	"github.com/chockhq/chock/internal/stockopa"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
)

// linkedPolicy is a project under two orgs: acme, one of whose rules is
// matched on input.segments (an inner and a trailing '*'), and strict,
// whose default ask caps the project.
func linkedPolicy(t *testing.T) Input {
	return load(t, policy{"linked", `.{ .policy = .{
		.allow = .{ "secret.use.*", "exec.path.gh", "exec.*", "mcp.*.tool.search", "mcp.notion.*" },
		.ask = .{ "exec.path.git" },
		.deny = .{ "exec.path.curl" },
	} }`, []string{
		`.{ .name = "acme", .policy = .{ .deny = .{"exec.path.gh", "mcp.*.tool.delete"}, .ask = .{"exec.path.git", "mcp.*.host.*"} } }`,
		`.{ .name = "strict-co", .policy = .{ .default = .ask, .allow = .{"secret.*", "mcp.notion.*", "exec.*"} } }`,
	}})
}

// linkedBundles writes the combined bundle, the linking project bundle
// and each org's bundle under dir, and returns their paths (combined,
// project, orgs...).
func linkedBundles(t *testing.T, in Input, dir string) (string, string, []string) {
	write := func(name string, out *Output) string {
		var buf bytes.Buffer
		if err := out.WriteBundle(&buf, nil); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	combined, err := Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	linked := in
	linked.LinkOrgs = true
	project, err := Compile(linked)
	if err != nil {
		t.Fatal(err)
	}
	if len(project.Meta.Layers) != 1 || !reflect.DeepEqual(project.Meta.Orgs, []string{"acme", "strict-co"}) || project.Meta.Stride != LinkStride {
		t.Fatalf("linked meta: %d layers, orgs %v, stride %d", len(project.Meta.Layers), project.Meta.Orgs, project.Meta.Stride)
	}
	var orgs []string
	for _, o := range in.Orgs {
		out, err := Compile(Input{Orgs: []*config.Org{o}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Root() != "chock_orgs/"+o.Name.Value {
			t.Fatalf("org root %q", out.Root())
		}
		orgs = append(orgs, write(o.Name.Value+".tar.gz", out))
	}
	return write("combined.tar.gz", combined), write("project.tar.gz", project), orgs
}

// opaEvalCases asks stock opa eval data.chock.decision of every case, with
// the bundles given side by side.
func opaEvalCases(t *testing.T, opa, dir string, cases []any, bundles ...string) []any {
	inPath := filepath.Join(dir, "input.json")
	data, _ := json.Marshal(map[string]any{"cases": cases})
	os.WriteFile(inPath, data, 0o600)
	args := []string{"eval", "--format", "json"}
	for _, b := range bundles {
		args = append(args, "-b", b)
	}
	args = append(args, "-i", inPath, "[d | some c in input.cases; d := data.chock.decision with input as c]")
	b, err := exec.Command(opa, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("opa eval: %v\n%s", err, b)
	}
	var ev struct {
		Result []struct {
			Expressions []struct{ Value []any } `json:"expressions"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &ev); err != nil || len(ev.Result) != 1 {
		t.Fatalf("opa eval output: %v %s", err, b)
	}
	return ev.Result[0].Expressions[0].Value
}

// TestLinkedStockOPA: a project bundle that links its orgs and the orgs'
// own bundles, loaded side by side in opa eval and opa run --server,
// answer every case exactly as the combined bundle does; with an org's
// bundle missing, every decision is a deny naming it.
func TestLinkedStockOPA(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the opa command")
	}
	opa := opaBinary(t)
	in := linkedPolicy(t)
	dir := t.TempDir()
	combined, project, orgs := linkedBundles(t, in, dir)
	cases := append(interopCases(in), map[string]any{"action": "exec.path.gh", "phase": "loop"},
		map[string]any{"action": "mcp.x.tool.search"}, map[string]any{"action": "mcp.a.host.b", "phase": "start"})
	want := opaEvalCases(t, opa, dir, cases, combined)
	capped := 0
	for _, w := range want {
		if m, ok := w.(map[string]any); ok && m["capped_by"] != nil {
			capped++
		}
	}
	if capped == 0 {
		t.Fatal("no case is capped by an org: the test policy does not test capped_by")
	}
	args := append([]string{project}, orgs...)
	got := opaEvalCases(t, opa, dir, cases, args...)
	for i := range cases {
		if g, w := normalize(t, got[i]), normalize(t, want[i]); !reflect.DeepEqual(g, w) {
			t.Fatalf("opa eval -b project -b orgs, case %v:\n linked   %v\n combined %v", cases[i], g, w)
		}
	}
	// Without strict-co's bundle: a deny naming it, never the project alone.
	missing := opaEvalCases(t, opa, dir, cases[:20], project, orgs[0])
	for i, m := range missing {
		d, _ := m.(map[string]any)
		if d["decision"] != "deny" || !strings.Contains(d["error"].(string), `strict-co`) || len(d["layers"].([]any)) != 0 {
			t.Fatalf("case %v with an org missing: %v", cases[i], m)
		}
	}

	// opa run --server with the bundles side by side.
	var srvArgs []string
	for _, b := range args {
		srvArgs = append(srvArgs, "--bundle", b)
	}
	addr := stockopa.Start(t, nil, srvArgs...).Addr
	for i, c := range cases {
		if g, w := normalize(t, restDecision(t, addr, c)), normalize(t, want[i]); !reflect.DeepEqual(g, w) {
			t.Fatalf("opa run, case %v:\n linked   %v\n combined %v", c, g, w)
		}
	}
}

// TestInspectAnnotations: opa inspect -a shows where each layer rule came
// from (its pattern, decision and span) and the entrypoints.
func TestInspectAnnotations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the opa command")
	}
	opa := opaBinary(t)
	in := linkedPolicy(t)
	dir := t.TempDir()
	combined, _, orgs := linkedBundles(t, in, dir)
	for path, wants := range map[string][]string{
		combined: {`"entrypoint":true`, `"title":"The decision on an action"`, `"title":"The secrets offered to a call or a server"`, `"title":"The decisions on several actions"`,
			`"custom":{"decision":"allow","pattern":"exec.path.gh","span":"chock.zon:2:`},
		orgs[0]: {`"custom":{"decision":"ask","pattern":"mcp.*.host.*","span":"org1.zon:1:`},
	} {
		b, err := exec.Command(opa, "inspect", "-a", "--format", "json", path).Output()
		if err != nil {
			t.Fatalf("opa inspect: %v", err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		compact, _ := json.Marshal(v)
		for _, w := range wants {
			if !strings.Contains(string(compact), w) {
				t.Errorf("%s: opa inspect -a shows no %s:\n%.2000s", filepath.Base(path), w, compact)
			}
		}
	}
}
