package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestVersionFromWorkTree: chock version, as README.md says, prints a
// pseudo-version (v0.0.0-DATE-COMMIT) for chock built in a git work tree,
// by go build there and by go install of the local module path alike, and
// (devel) for a build without VCS information (-buildvcs=false). The work
// tree is a clone of this checkout's HEAD, built offline (GOPROXY=off,
// this machine's module cache).
func TestVersionFromWorkTree(t *testing.T) {
	needGit(t)
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "chock")
	git(t, root, "clone", "-q", root, clone)
	commit := strings.TrimSpace(git(t, clone, "rev-parse", "--short=12", "HEAD"))
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := t.TempDir()
	build := func(flags string, args ...string) string {
		t.Helper()
		cmd := exec.Command(goCmd, args...)
		cmd.Dir = clone
		cmd.Env = append(os.Environ(), "GOFLAGS="+flags, "GOPROXY=off", "GOTOOLCHAIN=local", "GOBIN="+bin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		exe := filepath.Join(bin, "chock")
		out, err := exec.Command(exe, "version").Output()
		if err != nil {
			t.Fatalf("chock version: %v", err)
		}
		first, _, _ := strings.Cut(string(out), "\n")
		return first
	}
	pseudo := regexp.MustCompile(`^chock v0\.0\.0-[0-9]{14}-` + regexp.QuoteMeta(commit) + `$`)
	if got := build("-buildvcs=auto", "build", "-o", filepath.Join(bin, "chock"), "./cmd/chock"); !pseudo.MatchString(got) {
		t.Errorf("go build in a work tree: %q, want %s", got, pseudo)
	}
	if got := build("-buildvcs=auto", "install", "./cmd/chock"); !pseudo.MatchString(got) {
		t.Errorf("go install ./cmd/chock: %q, want %s", got, pseudo)
	}
	if got := build("-buildvcs=false", "build", "-o", filepath.Join(bin, "chock"), "./cmd/chock"); got != "chock (devel)" {
		t.Errorf("go build -buildvcs=false: %q, want chock (devel)", got)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "a pseudo-version (`v0.0.0-DATE-COMMIT`") {
		t.Error("README.md does not say chock version prints a pseudo-version for a work-tree build")
	}
}

// TestREADMEGoVersion: the Go version README.md asks for is go.mod's.
func TestREADMEGoVersion(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go ([0-9.]+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "With Go " + string(m[1]) + " or later installed"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not say %q (go.mod's go line)", want)
	}
}
