package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
