package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/rounds"
	"github.com/chockhq/chock/runtime/sandbox"
)

// benchFileSession is a session in a git project under a fake HOME that
// holds every folder and file the file defaults name, with the sandbox
// init built beside the test.
func benchFileSession(b *testing.B, policy string, files int) (*Session, string, string) {
	b.Helper()
	bwrapOrFail(b)
	home, proj := b.TempDir(), b.TempDir()
	for p, v := range fileSecrets {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, p)), 0o700); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, p), []byte(v), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	for i := 0; i < files; i++ {
		p := filepath.Join(proj, fmt.Sprintf("d%02d/e%02d/f%d.txt", i%50, (i/50)%20, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	init := filepath.Join(b.TempDir(), "chock-sandbox")
	if out, err := exec.Command("go", "build", "-o", init, "github.com/chockhq/chock/cmd/chock-sandbox").CombinedOutput(); err != nil {
		b.Fatalf("building chock-sandbox: %v\n%s", err, out)
	}
	wd, _ := os.Getwd()
	if err := os.Chdir(proj); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.Chdir(wd) })
	e, c := testEngine(b, policy)
	s, err := New(context.Background(), Options{Engine: e, Config: c, LogDir: b.TempDir(), TempDir: b.TempDir(),
		BaseEnv: []string{"PATH=/usr/bin:/bin", "HOME=" + home}, SandboxInit: init})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, home, proj
}

func bwrapOrFail(b *testing.B) string {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal("bwrap is needed (.ci/run installs Debian's bubblewrap)")
	}
	return bwrap
}

// bwrapArgs are bubblewrap's options for the mounts of a plan.
func bwrapArgs(rules []sandbox.FileRule, proj string) []string {
	args := []string{"--unshare-user", "--unshare-pid", "--proc", "/proc", "--dev", "/dev", "--ro-bind", "/", "/", "--bind", proj, proj}
	for _, r := range rules {
		st, err := os.Stat(r.Path)
		switch {
		case err != nil:
		case r.Op == sandbox.Unreadable && st.IsDir():
			args = append(args, "--perms", "0000", "--tmpfs", r.Path)
		case r.Op == sandbox.Unreadable:
			args = append(args, "--ro-bind", "/dev/null", r.Path)
		case r.Op == sandbox.ReadOnly:
			args = append(args, "--ro-bind", r.Path, r.Path)
		case r.Op == sandbox.Pinned:
			args = append(args, "--bind", r.Path, r.Path)
		}
	}
	return args
}

// BenchmarkSandboxFiles: a brokered exec of /bin/true with chock's file
// defaults in force (a fake HOME holding every credential folder, a git
// project), against bubblewrap making the same mounts, in rounds that run
// each once; the median of the rounds' ratios.
func BenchmarkSandboxFiles(b *testing.B) {
	s, _, proj := benchFileSession(b, `.{ .policy = .{ .allow = .{"exec.path.true"} } }`, 100)
	bwrap := bwrapOrFail(b)
	ctx := context.Background()
	plan, err := s.planFiles(ctx)
	if err != nil {
		b.Fatal(err)
	}
	s.release(plan)
	if len(plan.rules) < 15 {
		b.Fatalf("only %d file rules: the defaults are not in force", len(plan.rules))
	}
	args := append(bwrapArgs(plan.rules, proj), "/bin/true")
	run := map[string]func() error{
		"brokered": brokeredTrue(ctx, s),
		"bwrap": func() error {
			out, err := exec.Command(bwrap, args...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		},
	}
	interleave(b, run, "brokered", "bwrap", "brokered/bwrap")
	b.ReportMetric(float64(len(plan.rules)), "mounts")
}

// BenchmarkFindInCall: find over a 10,000-file project, 20 times in one
// shell, inside a brokered call with the file defaults in force against the
// same shell outside any sandbox: what the covers and binds cost a program
// walking the project (the call's start is amortised over the 20 walks).
func BenchmarkFindInCall(b *testing.B) {
	s, _, proj := benchFileSession(b, `.{ .policy = .{ .allow = .{"exec.path.sh", "exec.path.find"} } }`, 10_000)
	ctx := context.Background()
	script := "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do find . -type f >/dev/null; done"
	run := map[string]func() error{
		"in-call": func() error {
			res, err := s.Run(ctx, &Call{Tool: "exec", Timeout: time.Minute, Exec: &ExecRequest{Argv: []string{"sh", "-c", script}}})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			return err
		},
		"outside": func() error {
			cmd := exec.Command("sh", "-c", script)
			cmd.Dir, cmd.Env = proj, []string{"PATH=/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		},
	}
	interleave(b, run, "in-call", "outside", "in-call/outside")
}

// interleave runs a and c of run in rounds (internal/rounds), one call
// each a round, after one warm-up each, and reports the ratio a/c.
func interleave(b *testing.B, run map[string]func() error, a, c, unit string) {
	for _, n := range []string{a, c} {
		if err := run[n](); err != nil {
			b.Fatalf("%s: %v", n, err)
		}
	}
	call := func(n string) func(int) {
		return func(int) {
			if err := run[n](); err != nil {
				b.Fatalf("%s: %v", n, err)
			}
		}
	}
	rounds.Calls(b, 1, call(a), call(c)).Report(b, unit, a+"-ns/op", c+"-ns/op")
}

// brokeredTrue runs /bin/true as a brokered exec call of s.
func brokeredTrue(ctx context.Context, s *Session) func() error {
	return func() error {
		res, err := s.Run(ctx, &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"/bin/true"}}})
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
		}
		return err
	}
}
