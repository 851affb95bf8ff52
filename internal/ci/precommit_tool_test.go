package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestHooksUnderPreCommit runs the four hooks of .pre-commit-hooks.yaml
// through pre-commit itself (pre-commit try-repo on this checkout, its
// uncommitted changes included, as try-repo takes them): language golang
// builds chock from the checkout with the Go on PATH, offline (the module
// cache as it is, GOPROXY=off), and the hooks run on the changes staged in
// a temporary repository. A clean widening passes fmt, lint and test, and
// chock diff shows it; a lint error stops the commit. Without pre-commit
// it skips, and fails under CI=true (.ci/run installs Debian's).
func TestHooksUnderPreCommit(t *testing.T) {
	needGit(t)
	pc, err := exec.LookPath("pre-commit")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pre-commit is not installed (apt-get install -y pre-commit); CI=true runs the hooks through it")
		}
		t.Skip("pre-commit is not installed (apt-get install -y pre-commit)")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin")
	goEnv := func(name string) string {
		out, err := exec.Command(filepath.Join(goBin, "go"), "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	env := []string{
		"PATH=" + goBin + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + t.TempDir(),
		"PRE_COMMIT_HOME=" + t.TempDir(),
		// Offline: the modules from the cache this machine has, no proxy;
		// the build cache shared, so the hook's go install ./... is quick.
		"GOMODCACHE=" + goEnv("GOMODCACHE"),
		"GOCACHE=" + goEnv("GOCACHE"),
		"GOPROXY=off", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local", "GONOSUMDB=*", "GOSUMDB=off",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=ci", "GIT_AUTHOR_EMAIL=ci@example.invalid", "GIT_COMMITTER_NAME=ci", "GIT_COMMITTER_EMAIL=ci@example.invalid",
	}
	try := func(repo string) (string, int) {
		t.Helper()
		cmd := exec.Command(pc, "try-repo", root, "--verbose", "--color", "never")
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("pre-commit try-repo: %v\n%s", err, out)
			}
			code = ee.ExitCode()
		}
		return string(out), code
	}
	// Each hook's line: its name, dots, then Passed, Failed or Skipped.
	status := func(out, name string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, name+".") {
				return strings.TrimSpace(l[strings.LastIndexByte(l, '.')+1:])
			}
		}
		return "not run"
	}

	wider := strings.Replace(example(t, "chock.zon"), `"exec.path.git",`, `"exec.path.git",
            "exec.path.make",`, 1)
	repo := hookRepo(t, map[string]string{"chock.zon": wider})
	out, code := try(repo)
	for _, name := range []string{"chock fmt", "chock lint", "chock test", "chock diff"} {
		if s := status(out, name); s != "Passed" {
			t.Errorf("%s: %s on a clean widening", name, s)
		}
	}
	if code != 0 || !strings.Contains(out, "WIDENED  exec.path.make  deny -> allow") {
		t.Fatalf("pre-commit on a clean widening exited %d, chock diff's report not shown:\n%s", code, out)
	}

	bad := strings.Replace(example(t, "chock.zon"), ".ask = ", ".alow = .{},\n        .ask = ", 1)
	stage(t, repo, map[string]string{"chock.zon": bad})
	out, code = try(repo)
	if code != 1 || status(out, "chock lint") != "Failed" || !strings.Contains(out, "unknown field .alow in .policy [unknown-field]") {
		t.Fatalf("pre-commit on a lint error exited %d:\n%s", code, out)
	}
}
