package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/eval/load"

	"github.com/chockhq/chock/runtime/hook"
)

// TestHookPanicIsADeny: a panic inside chock hook answers deny in the
// client's format, with exit 2, never an exit code a client reads as
// "go on".
func TestHookPanicIsADeny(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "chock.zon")
	os.WriteFile(cfg, []byte(`.{ .policy = .{ .allow = .{ "exec.path.ls" } } }`), 0o644)
	t.Setenv("CHOCK_STATE_DIR", filepath.Join(dir, "state"))
	old := hookDecide
	hookDecide = func(context.Context, hook.Decider, hook.Call) (hook.Verdict, error) { panic("a bug") }
	defer func() { hookDecide = old }()
	for _, client := range hook.Clients {
		var out, errb bytes.Buffer
		ev := `{"session_id":"p","tool_name":"Bash","tool_input":{"command":"ls"}}`
		code := run(context.Background(), []string{"hook", client, "--config", cfg}, stdio{in: strings.NewReader(ev), out: &out, err: &errb, raw: &out})
		if code != 2 || !strings.Contains(out.String(), `"deny"`) || !strings.Contains(out.String(), "chock failed inside (a bug)") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", client, code, out.String(), errb.String())
		}
	}
}

// TestHookCompiledForItsEventDecidesAsWhole: for events of every kind of
// tool, the actions eventActions finds hold every action the real pass
// asks, and the policy compiled for them alone gives the same verdict as
// the whole policy.
func TestHookCompiledForItsEventDecidesAsWhole(t *testing.T) {
	const project = `.{ .policy = .{ .default = .allow,
  .deny = .{ "exec.path.curl", "fs.read.**/secret*", "*.*.*.*", "exec.*.python3.12" },
  .ask = .{ "*.write.*", "mcp.*.tool.*", "client.claude-code.tool.Task" },
  .allow = .{ "fs.write./tmp/**", "exec.path.git", "net.fetch.*" },
  .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{ "push" } } },
} }`
	const org = `.{ .name = "acme", .policy = .{ .default = .allow, .rules = .{
    .{ .action = "fs.*.*", .decision = .ask },
    .{ .action = "fs.read.~/notes/**", .decision = .allow },
    .{ .action = "net.fetch.com.evil.*", .decision = .deny },
} } }`
	ctx := context.Background()
	dir := t.TempDir()
	home, proj := filepath.Join(dir, "home"), filepath.Join(dir, "proj")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(proj, "link")); err != nil {
		t.Fatal(err)
	}
	srcs := load.Input{Configs: []load.Source{{Name: filepath.Join(proj, "chock.zon"), Data: []byte(project)}},
		Orgs: []load.Source{{Name: filepath.Join(proj, "org.zon"), Data: []byte(org)}}}
	whole, ds, err := load.FromSources(ctx, srcs)
	if err != nil {
		t.Fatal(err, ds)
	}
	for _, ev := range []struct {
		tool  string
		input map[string]any
	}{
		{"Bash", map[string]any{"command": "curl x; git push; python3.12 -c 1 > ~/.bashrc; cat a.b.c"}},
		{"Bash", map[string]any{"command": "git -C . push origin && exec -a git-push git x"}},
		{"Read", map[string]any{"file_path": "~/.ssh/id_rsa"}},
		{"Read", map[string]any{"file_path": "link"}},
		{"Read", map[string]any{"file_path": "~/notes/a.b.c"}},
		{"Read", map[string]any{"file_path": "x/secret.txt"}},
		{"Write", map[string]any{"file_path": "/tmp/a..b."}},
		{"Write", map[string]any{"file_path": "/etc/x"}},
		{"Write", map[string]any{"file_path": ".git/config"}},
		{"WebFetch", map[string]any{"url": "https://a.evil.com/x"}},
		{"mcp__srv__tool", map[string]any{}},
		{"Task", map[string]any{}},
		{"Glob", map[string]any{}},
	} {
		call := hook.Call{Client: "claude-code", Tool: ev.tool, Input: ev.input, Cwd: proj, Project: proj, Home: home}
		only, err := eventActions(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		in := srcs
		in.Only = only
		part, _, err := load.FromSources(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		var asked []string
		dec := func(e *eval.Engine, record bool) hook.Decider {
			return func(ctx context.Context, a string, args []string) (*eval.Decision, error) {
				if record {
					asked = append(asked, a)
				}
				return e.DecideArgs(ctx, a, args, config.Loop)
			}
		}
		w, err1 := hook.Decide(ctx, dec(whole.Engine, true), call)
		p, err2 := hook.Decide(ctx, dec(part.Engine, false), call)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(w, p) {
			t.Errorf("%s %v:\n whole %+v %v\n part  %+v %v", ev.tool, ev.input, w, err1, p, err2)
		}
		for _, a := range asked {
			if !slices.Contains(only, a) {
				t.Errorf("%s %v: the real pass asks %s, which eventActions missed", ev.tool, ev.input, a)
			}
		}
	}
}
