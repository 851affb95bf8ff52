package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/benchgen"
	"github.com/chockhq/chock/internal/rounds"
	"github.com/chockhq/chock/internal/stockopa"
)

// BenchmarkHookProcess interleaves, round by round, chock hook claude-code
// answering one Bash event under the github template's policy, as a whole
// process (this test binary run as chock), against stock opa eval
// --bundle deciding the same action as a whole process (#28's target:
// ≤ 0.5×).
func BenchmarkHookProcess(b *testing.B) {
	dir := b.TempDir()
	src, err := os.ReadFile("templates/github.zon")
	if err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dir, "chock.zon")
	if err := os.WriteFile(cfg, src, 0o644); err != nil {
		b.Fatal(err)
	}
	bundle := filepath.Join(dir, "bundle.tar.gz")
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	env := append(os.Environ(), asChockEnv+"=1", "CHOCK_STATE_DIR="+filepath.Join(dir, "state"))
	run := func(stdin, want, name string, args ...string) float64 {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(stdin)
		var out bytes.Buffer
		cmd.Stdout = &out
		t0 := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("%s %v: %v %s", name, args, err, out.String())
		}
		took := time.Since(t0)
		if !strings.Contains(out.String(), want) {
			b.Fatalf("%s %v: %s", name, args, out.String())
		}
		return float64(took.Nanoseconds())
	}
	run("", "", self, "compile", "-o", bundle, cfg)
	opa := stockopa.Binary(b)
	ev := `{"session_id":"s-1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"}}`
	small := func() float64 { return run(ev, "allow", self, "hook", "claude-code") }
	b.Run("opa", func(b *testing.B) {
		r := rounds.Run(b, 10, small, func() float64 {
			return run(`{"action":"exec.path.git","phase":"loop"}`, "allow", opa, "eval", "--bundle", bundle, "--stdin-input", "data.chock.decision.decision")
		})
		r.Report(b, "hook/opa-eval", "hook-ns/op", "opa-eval-ns/op")
	})
	// The same event under a 10,000-rule policy: the hook compiles only
	// the rules its actions can match.
	big := filepath.Join(dir, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(big, "chock.zon"), []byte(benchgen.Policy(10000)), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("scale", func(b *testing.B) {
		r := rounds.Run(b, 10, func() float64 {
			return run(ev, "permissionDecision", self, "hook", "claude-code", "--config", filepath.Join(big, "chock.zon"))
		}, small)
		r.Report(b, "10000/small", "rules=10000-ns/op", "small-ns/op")
	})
}
