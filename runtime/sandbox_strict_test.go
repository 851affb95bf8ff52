package runtime

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/runtime/sandbox"
	"github.com/chockhq/chock/runtime/sessionlog"
)

// strictPolicy gives GITHUB_TOKEN to git, and allows the programs a
// planted helper would be made of.
const strictPolicy = `.{
    .policy = .{
        .allow = .{ "exec.path.git", "exec.path.sh", "exec.path.python3", "exec.path.true", "secret.use.GITHUB_TOKEN" },
        .deny = .{ "exec.path.curl" },
    },
    .secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.git" } },
}`

// fsmonitorLeak is what git holding the token runs as its fsmonitor: a
// python3 that prints the token hex-encoded and reversed, past redaction.
const fsmonitorLeak = `python3 -c "import os, sys; sys.stderr.write(os.environ['GITHUB_TOKEN'].encode().hex()[::-1])" #`

// TestSecretHoldingProgramRunsOnlyWhatItDeclares (issue 24, item 7): git
// holding a token, told to run a core.fsmonitor the agent names, cannot
// run sh or python3 though the policy allows both: a call that holds a
// secret runs only its program and what its .programs entry declares in
// .calls. Without the sandbox the token leaks, which shows the test is
// the sandbox's; the refusal is logged with why.
func TestSecretHoldingProgramRunsOnlyWhatItDeclares(t *testing.T) {
	leaked := reverse(hex.EncodeToString([]byte(values["GITHUB_TOKEN"])))
	for _, m := range sandboxModes {
		t.Run(m.name, func(t *testing.T) {
			work := t.TempDir()
			if err := os.WriteFile(filepath.Join(work, "a"), []byte("a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, argv := range [][]string{{"init", "-q"}, {"add", "a"}} {
				if out, err := exec.Command("git", append([]string{"-C", work}, argv...)...).CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v %s", argv, err, out)
				}
			}
			f := newFixtureWith(t, strictPolicy, values, nil, func(o *Options) {
				o.NoSandbox = m.noSandbox
				o.Writable = []string{work}
			})
			res, err := f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{
				Argv: []string{"git", "-c", "core.fsmonitor=" + fsmonitorLeak, "status"}, Dir: work}})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Contains(res.Stdout+res.Stderr, leaked)
			if got != m.noSandbox {
				t.Fatalf("the token leaked through core.fsmonitor: %v, want %v (%+v)", got, m.noSandbox, res)
			}
			// The same program with no secret runs its helpers as before.
			res, err = f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{
				Argv: []string{"sh", "-c", "python3 -c 'print(6*7)'"}, Dir: work}})
			if err != nil || !strings.Contains(res.Stdout, "42") {
				t.Fatalf("a call with no secret ran no helper: %+v %v", res, err)
			}
			if m.noSandbox {
				return
			}
			if !loggedNested(t, f, func(ev map[string]any) bool {
				return ev["action"] == "exec.path.sh" && ev["outcome"] == "refused" && strings.Contains(ev["why"].(string), "holds a secret, so it runs only git")
			}) {
				t.Error("no exec.nested of sh refused for the secret the call holds")
			}
		})
	}
}

// TestDeclaredCallsRunInASecretHoldingCall: what .calls declares runs in a
// call that holds a secret, and nothing beyond it.
func TestDeclaredCallsRunInASecretHoldingCall(t *testing.T) {
	work := t.TempDir()
	policy := strings.Replace(strictPolicy, ".secrets =", `.programs = .{ .{ .name = "git", .calls = .{"exec.path.sh"} } },
    .secrets =`, 1)
	f := newFixtureWith(t, policy, values, nil, func(o *Options) { o.Writable = []string{work} })
	marker := filepath.Join(work, "declared")
	res, err := f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{
		Argv: []string{"git", "-c", "alias.x=!echo ran > " + marker + "; python3 -c 'print(1)' > " + marker + ".py", "x"}, Dir: work}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the declared sh did not run: %+v", res)
	}
	if b, _ := os.ReadFile(marker + ".py"); strings.Contains(string(b), "1") {
		t.Fatalf("python3, declared by no .calls, ran in a call holding a secret: %+v", res)
	}
}

// TestInterpreterRunAsAProgramIsRefused (issue 24's ld.so): python3 execs
// the ELF interpreter by each of its names, asking it to run the denied
// curl; it is refused, while every dynamically linked program still loads
// it. Without the sandbox curl runs, which shows the test is the
// sandbox's.
func TestInterpreterRunAsAProgramIsRefused(t *testing.T) {
	ld, script, err := sandbox.Interpreter("/usr/bin/python3")
	if err != nil || script || ld == "" {
		t.Fatalf("python3's ELF interpreter: %q %v %v", ld, script, err)
	}
	names := []string{ld}
	if real, err := filepath.EvalSymlinks(ld); err == nil && real != ld {
		names = append(names, real)
	}
	for _, m := range sandboxModes {
		t.Run(m.name, func(t *testing.T) {
			f := newFixtureWith(t, `.{ .policy = .{ .allow = .{ "exec.path.python3", "exec.path.true" }, .deny = .{ "exec.path.curl" } } }`, nil, nil, func(o *Options) {
				o.NoSandbox = m.noSandbox
			})
			// Every way to name it: its names, /proc/self's views of it
			// (the call's /proc, where chock has no pid), /dev/fd.
			exprs := []string{}
			for _, name := range names {
				exprs = append(exprs, pyQuote(name))
			}
			exprs = append(exprs, "'/proc/self/root'+"+pyQuote(ld), "'/proc/self/fd/%d' % os.open("+pyQuote(ld)+", os.O_RDONLY)",
				"'/dev/fd/%d' % os.open("+pyQuote(ld)+", os.O_RDONLY)", "'/proc/thread-self/root'+"+pyQuote(ld))
			for _, name := range exprs {
				script := "import os, subprocess\n" +
					"subprocess.run(['/usr/bin/true'], check=True)\n" +
					"p = " + name + "\n" +
					"os.execv(p, [p, '/usr/bin/curl', '--version'])"
				res, err := f.exec(t, 20*time.Second, "python3", "-c", script)
				if err != nil {
					t.Fatal(err)
				}
				ran := strings.Contains(res.Stdout, "libcurl")
				if ran != m.noSandbox {
					t.Fatalf("%s ran curl: %v, want %v (%+v)", name, ran, m.noSandbox, res)
				}
				if !m.noSandbox && res.ExitCode == 0 {
					t.Errorf("%s: python3's execv did not fail: %+v", name, res)
				}
			}
			if m.noSandbox {
				return
			}
			if !loggedNested(t, f, func(ev map[string]any) bool {
				return ev["outcome"] == "refused" && strings.Contains(ev["why"].(string), "ELF interpreter")
			}) {
				t.Error("no exec.nested of the interpreter refused")
			}
			if loggedNested(t, f, func(ev map[string]any) bool { return ev["outcome"] == "refused" && ev["path"] == "/usr/bin/true" }) {
				t.Error("a dynamically linked program was refused")
			}
		})
	}
}

// TestInterpreterAllowedByItsNameRuns: a policy that allows ld.so by a
// name on the PATH lets it run as a program.
func TestInterpreterAllowedByItsNameRuns(t *testing.T) {
	ld, _, err := sandbox.Interpreter("/usr/bin/python3")
	if err != nil || ld == "" {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(ld, filepath.Join(bin, "ldso")); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, `.{ .policy = .{ .allow = .{ "exec.path.python3", "exec.path.ldso", "exec.path.true" } } }`, nil, nil, func(o *Options) {
		o.BaseEnv = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=/nonexistent"}
	})
	res, err := f.exec(t, 20*time.Second, "python3", "-c", "import os; os.execv("+pyQuote(ld)+", ["+pyQuote(ld)+", '/usr/bin/true'])")
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("ld.so allowed by name did not run: %+v %v", res, err)
	}
}

func loggedNested(t *testing.T, f *fixture, match func(map[string]any) bool) bool {
	t.Helper()
	evs, err := sessionlog.Read(f.logDir, f.s.ID)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(evs, func(ev sessionlog.Event) bool {
		if ev["kind"] != "exec.nested" {
			return false
		}
		if _, ok := ev["why"].(string); !ok {
			ev["why"] = ""
		}
		return match(ev)
	})
}

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestSecretHoldingScriptRuns: a program that is a script, given a
// secret, runs: its #! interpreter and the ELF interpreter that one needs
// are its own, not helpers it must declare.
func TestSecretHoldingScriptRuns(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "tool"), []byte("#!/usr/bin/python3\nimport os\nprint('len', len(os.environ['GITHUB_TOKEN']))\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, `.{
    .policy = .{ .allow = .{ "exec.path.tool", "exec.path.python3", "secret.use.GITHUB_TOKEN" } },
    .secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.tool" } },
}`, values, nil, func(o *Options) {
		o.BaseEnv = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=/nonexistent"}
	})
	res, err := f.exec(t, 20*time.Second, "tool")
	if err != nil || !strings.Contains(res.Stdout, fmt.Sprintf("len %d", len(values["GITHUB_TOKEN"]))) {
		t.Fatalf("a secret-holding script: %+v %v", res, err)
	}
}

// TestDeclaredScriptRunsInASecretHoldingCall: a script a secret-holding
// program declares in .calls runs, with its allowed #! interpreter.
func TestDeclaredScriptRunsInASecretHoldingCall(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "helper"), []byte("#!/usr/bin/python3\nprint('helper ran')\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixtureWith(t, `.{
    .policy = .{ .allow = .{ "exec.path.sh", "exec.path.helper", "exec.path.python3", "secret.use.GITHUB_TOKEN" } },
    .programs = .{ .{ .name = "sh", .calls = .{ "exec.path.helper" } } },
    .secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.sh" } },
}`, values, nil, func(o *Options) {
		o.BaseEnv = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=/nonexistent"}
	})
	res, err := f.exec(t, 20*time.Second, "sh", "-c", "helper; python3 -c 'print(\"python3 ran\")'")
	if err != nil || !strings.Contains(res.Stdout, "helper ran") {
		t.Fatalf("a declared script in a secret-holding call: %+v %v", res, err)
	}
	// Its interpreter runs as the script's, never exec'd itself: python3
	// -c would run whatever the agent says, with the secret.
	if strings.Contains(res.Stdout, "python3 ran") {
		t.Fatalf("the declared script's interpreter ran by itself: %+v", res)
	}
}
