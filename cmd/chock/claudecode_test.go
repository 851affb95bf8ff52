package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/internal/clienttest"
	"github.com/chockhq/chock/internal/mcptest"
)

// TestClaudeCodeHook runs the real Claude Code (2.1.328, offline, its model
// API the stand-in of internal/clienttest) with the hook chock connect
// claude-code --hooks writes: a Bash call running a denied program is
// refused and chock's reason, with the rule's position, reaches the
// model; an allowed one runs; with chock hook --sandbox, an allowed
// command that runs a denied program inside is stopped by the kernel.
func TestClaudeCodeHook(t *testing.T) {
	claude := mcptest.ClaudeCode(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir, home, state := filepath.Join(root, "project"), filepath.Join(root, "home"), filepath.Join(root, "state")
	for _, d := range []string{dir, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	policy := `.{
    .policy = .{
        .allow = .{ "exec.path.echo", "exec.path.python3", "exec.path.bash" },
        .deny = .{ "exec.path.curl" },
    },
}
`
	// bash is allowed for --sandbox, which runs the command as chock exec
	// -- bash -c COMMAND (README); what bash runs is decided again inside.
	if err := os.WriteFile(filepath.Join(dir, "chock.zon"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{asChockEnv + "=1", "HOME=" + home, "CHOCK_STATE_DIR=" + state, "PATH=/usr/bin:/bin"}
	connect := exec.Command(exe, "connect", "claude-code", "--hooks")
	connect.Dir, connect.Env = dir, append(os.Environ(), env...)
	if out, err := connect.CombinedOutput(); err != nil {
		t.Fatalf("chock connect: %v\n%s", err, out)
	}
	run := func(command string) (clienttest.Result, map[string]any) {
		t.Helper()
		r := clienttest.Run(t, clienttest.Job{
			Argv: []string{claude, "-p", "run the command", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash"},
			Env:  append(env, "ANTHROPIC_API_KEY=sk-ant-test-not-a-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"),
			Dir:  dir, BaseURLEnv: "ANTHROPIC_BASE_URL",
			Turns: []clienttest.Turn{{Tool: "Bash", Input: map[string]any{"command": command, "description": "the test's command"}}},
		})
		results := r.ToolResults()
		if len(results) != 1 {
			t.Fatalf("%q: Claude Code sent the model %d tool results (error %s):\n%s", command, len(results), r.Err, r.Output)
		}
		return r, results[0]
	}

	_, denied := run("curl http://example.test/; echo ran-curl")
	reason, _ := denied["content"].(string)
	if denied["is_error"] != true || !strings.Contains(reason, `exec.path.curl is deny by project rule "exec.path.curl" at chock.zon:4:20`) || strings.Contains(reason, "ran-curl") {
		t.Errorf("the denied call reached the model as %v", denied)
	}
	for _, hint := range []string{"hint", ".policy.allow", "to allow"} {
		if strings.Contains(reason, hint) {
			t.Errorf("the refusal the model read holds an edit hint (%q): %s", hint, reason)
		}
	}
	_, allowed := run("echo allowed-ran")
	if allowed["is_error"] == true || !strings.Contains(allowed["content"].(string), "allowed-ran") {
		t.Errorf("the allowed call reached the model as %v", allowed)
	}

	// --sandbox: the hook allows python3 by rewriting the command to run
	// under chock exec, where the kernel refuses the curl it starts.
	settings := filepath.Join(dir, ".claude", "settings.json")
	raw, err := os.ReadFile(settings)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), `hook claude-code --config`, `hook claude-code --sandbox --config`, 1)
	if edited == string(raw) {
		t.Fatalf("no hook command in %s", raw)
	}
	if err := os.WriteFile(settings, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	_, inside := run(`python3 -c "
import subprocess
try:
    subprocess.run(['curl', '--version'])
except OSError as e:
    print('python-ran:', e)
"`)
	out, _ := inside["content"].(string)
	if !strings.Contains(out, "python-ran") || strings.Contains(out, "libcurl") || !strings.Contains(out, "Permission denied") {
		t.Errorf("python3 under the sandbox reached the model as %v", inside)
	}
	// chock exec's session log has the kernel's refusal of curl.
	found := false
	entries, _ := os.ReadDir(filepath.Join(state, "sessions"))
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(state, "sessions", e.Name()))
		for _, line := range strings.Split(string(b), "\n") {
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) == nil && ev["kind"] == "exec.nested" && ev["action"] == "exec.path.curl" && ev["outcome"] == "refused" {
				found = true
			}
		}
	}
	if !found {
		var names []string
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(state, "sessions", e.Name()))
			names = append(names, e.Name()+":\n"+string(b))
		}
		t.Errorf("no session log has curl's nested exec refused:\n%s", strings.Join(names, "\n"))
	}
}
