package ci

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// hookDef is one entry of .pre-commit-hooks.yaml.
type hookDef struct {
	ID            string `yaml:"id"`
	Name          string `yaml:"name"`
	Description   string `yaml:"description"`
	Entry         string `yaml:"entry"`
	Language      string `yaml:"language"`
	Files         string `yaml:"files"`
	Exclude       string `yaml:"exclude"`
	PassFilenames *bool  `yaml:"pass_filenames"`
	Verbose       bool   `yaml:"verbose"`
}

// hooks reads .pre-commit-hooks.yaml by id.
func hooks(t *testing.T) map[string]hookDef {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, ".pre-commit-hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var list []hookDef
	if err := yaml.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]hookDef{}
	for _, h := range list {
		out[h.ID] = h
	}
	return out
}

var (
	chockOnce sync.Once
	chockErr  error
)

// builtChock is chock built from this module into the shared GOBIN, as
// pre-commit's golang language builds a hook's repository (go install
// ./... at its rev); it returns the folder to put on PATH.
func builtChock(t *testing.T) string {
	t.Helper()
	tl := sharedTools(t)
	chockOnce.Do(func() {
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "install", "./cmd/chock")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "GOBIN="+tl.gobin, "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			chockErr = fmt.Errorf("go install ./cmd/chock: %v\n%s", err, out)
		}
	})
	if chockErr != nil {
		t.Fatal(chockErr)
	}
	return tl.gobin
}

// hookRun is what one hook did on a commit.
type hookRun struct {
	ran      bool // some staged file matched
	code     int
	out      string
	modified []string // files the hook changed in the work tree
	argv     []string
}

// failed is pre-commit's verdict: a non-zero exit, or files changed.
func (h hookRun) failed() bool { return h.code != 0 || len(h.modified) > 0 }

// runHook runs the hook as pre-commit runs it at commit time in repo: on
// the staged files (added, copied, modified, renamed; not deleted) that
// its files pattern matches and exclude does not, with entry split on
// spaces, then args, then those files unless pass_filenames is false;
// nothing when no staged file matches. pre-commit also stashes unstaged
// changes first; the tests stage everything, so the work tree is the
// index.
func runHook(t *testing.T, repo string, h hookDef, args ...string) hookRun {
	t.Helper()
	if strings.ContainsAny(h.Entry, `"'\`) {
		t.Fatalf("hook %s: entry %q needs shell quoting, which this runner does not split", h.ID, h.Entry)
	}
	if unstaged := git(t, repo, "diff", "--name-only"); unstaged != "" {
		t.Fatalf("unstaged changes before the hook: %s", unstaged)
	}
	staged := strings.Split(strings.TrimRight(git(t, repo, "diff", "--cached", "--name-only", "--diff-filter=ACMRTUXB", "-z"), "\x00"), "\x00")
	files := regexp.MustCompile(h.Files)
	var matched []string
	for _, f := range staged {
		if f == "" || !files.MatchString(f) || (h.Exclude != "" && regexp.MustCompile(h.Exclude).MatchString(f)) {
			continue
		}
		matched = append(matched, f)
	}
	if len(matched) == 0 {
		return hookRun{}
	}
	argv := append(strings.Fields(h.Entry), args...)
	if h.PassFilenames == nil || *h.PassFilenames {
		argv = append(argv, matched...)
	}
	if argv[0] != "chock" {
		t.Fatalf("hook %s runs %s; pre-commit's golang environment here has chock", h.ID, argv[0])
	}
	// The hook's own chock, first on PATH as in pre-commit's environment.
	bin := builtChock(t)
	cmd := exec.Command(filepath.Join(bin, "chock"), argv[1:]...)
	cmd.Dir = repo
	cmd.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	run := hookRun{ran: true, argv: argv}
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("hook %s: %v", h.ID, err)
		}
		run.code = ee.ExitCode()
	}
	run.out = out.String()
	if changed := strings.TrimSpace(git(t, repo, "diff", "--name-only")); changed != "" {
		run.modified = strings.Split(changed, "\n")
	}
	return run
}

// hookRepo is a repository with examples/ committed, and the files given
// then written and staged.
func hookRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	copyExamples(t, repo)
	os.WriteFile(filepath.Join(repo, "README"), []byte("a project\n"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "policy")
	stage(t, repo, files)
	return repo
}

// stage writes files (relative path to content; "" removes one) and
// stages them.
func stage(t *testing.T, repo string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(repo, name)
		if content == "" {
			git(t, repo, "rm", "-q", name)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, repo, "add", name)
	}
}

// example reads a file of examples/.
func example(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPreCommitHooks: the four hooks exist, each in Go.
func TestPreCommitHooks(t *testing.T) {
	hs := hooks(t)
	var ids []string
	for id, h := range hs {
		ids = append(ids, id)
		if h.Language != "golang" || h.Entry == "" || h.Files == "" || h.Name == "" || h.Description == "" {
			t.Errorf("hook %s: %+v", id, h)
		}
		if !strings.HasPrefix(h.Entry, "chock ") {
			t.Errorf("hook %s runs %q, not chock", id, h.Entry)
		}
	}
	slices.Sort(ids)
	if want := []string{"chock-diff", "chock-fmt", "chock-lint", "chock-test"}; !slices.Equal(ids, want) {
		t.Errorf("hooks %v, want %v", ids, want)
	}
}

// TestHookFmt: chock-fmt rewrites the staged ZON files it is given, and
// only those, so pre-commit stops the commit; once they are staged again
// it passes. A commit with no ZON file does not run it.
func TestHookFmt(t *testing.T) {
	needGit(t)
	h := hooks(t)["chock-fmt"]
	messy := strings.Replace(example(t, "chock.zon"), "    .credentials = .{ .store = .file },", "  .credentials=.{ .store =  .file },", 1)
	repo := hookRepo(t, map[string]string{"chock.zon": messy, "notes.txt": ".{  }\n", "sub/other.zon": ".{.a=1}\n"})
	run := runHook(t, repo, h)
	if !run.ran || !run.failed() || run.code != 0 || !slices.Equal(run.modified, []string{"chock.zon", "sub/other.zon"}) {
		t.Fatalf("chock-fmt on unformatted files: %+v", run)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "notes.txt")); string(b) != ".{  }\n" {
		t.Errorf("a file the pattern does not match was changed: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "chock.zon")); string(b) != example(t, "chock.zon") {
		t.Errorf("chock.zon is not laid out back as it was:\n%s", b)
	}
	git(t, repo, "add", ".")
	if run := runHook(t, repo, h); !run.ran || run.failed() {
		t.Errorf("chock-fmt on formatted files: %+v", run)
	}
	git(t, repo, "commit", "-q", "-m", "fmt")
	stage(t, repo, map[string]string{"README": "more\n"})
	if run := runHook(t, repo, h); run.ran {
		t.Errorf("chock-fmt ran on a commit with no ZON file: %+v", run)
	}
}

// TestHookLint: chock-lint lints each staged chock.zon under the args'
// org ceiling: a finding stops the commit, naming its file and line.
func TestHookLint(t *testing.T) {
	needGit(t)
	h := hooks(t)["chock-lint"]
	bad := strings.Replace(example(t, "chock.zon"), ".ask = ", ".alow = .{},\n        .ask = ", 1)
	repo := hookRepo(t, map[string]string{"chock.zon": bad, "team/chock.zon": ".{ .policy = .{ .allow = .{\"exec.path.gh\"} } }\n"})
	run := runHook(t, repo, h, "--org", "org.zon")
	if !run.ran || run.code != 1 || !strings.Contains(run.out, "chock.zon:"+lineOf(bad, ".alow")+":10: error: unknown field .alow in .policy [unknown-field]") {
		t.Fatalf("chock-lint on an error: %+v", run)
	}
	if want := []string{"chock", "lint", "--org", "org.zon", "chock.zon", "team/chock.zon"}; !slices.Equal(run.argv, want) {
		t.Errorf("argv %v, want %v", run.argv, want)
	}
	stage(t, repo, map[string]string{"chock.zon": example(t, "chock.zon")})
	if run := runHook(t, repo, h, "--org", "org.zon"); !run.ran || run.failed() {
		t.Errorf("chock-lint on clean files: %+v", run)
	}
}

// TestHookTest: chock-test runs ./chock.zon's expectations when a staged
// change touches a policy, the org ceiling alone too: an expectation the
// change breaks stops the commit.
func TestHookTest(t *testing.T) {
	needGit(t)
	h := hooks(t)["chock-test"]
	org := strings.Replace(example(t, "org.zon"), `"exec.path.wget",`, `"exec.path.wget",
            "exec.path.gh",`, 1)
	repo := hookRepo(t, map[string]string{"org.zon": org})
	run := runHook(t, repo, h, "--org", "org.zon")
	if !run.ran || run.code != 1 || !strings.Contains(run.out, "FAIL exec.path.gh at loop: want allow, got deny") || !regexp.MustCompile(`(?m)^[0-9]+ passed, 1 failed$`).MatchString(run.out) {
		t.Fatalf("chock-test on a breaking change: %+v", run)
	}
	if want := []string{"chock", "test", "--org", "org.zon"}; !slices.Equal(run.argv, want) {
		t.Errorf("argv %v, want %v (no file names)", run.argv, want)
	}
	stage(t, repo, map[string]string{"org.zon": example(t, "org.zon"), "chock.zon": "// reviewed\n" + example(t, "chock.zon")})
	if run := runHook(t, repo, h, "--org", "org.zon", "--threshold", "0"); !run.ran || run.failed() || !regexp.MustCompile(`(?m)^[1-9][0-9]* passed, 0 failed$`).MatchString(run.out) {
		t.Errorf("chock-test on a clean change: %+v", run)
	}
}

// TestHookDiff: chock-diff shows what the staged change grants against
// HEAD and passes; with --fail-on widen in args a widening stops it.
func TestHookDiff(t *testing.T) {
	needGit(t)
	h := hooks(t)["chock-diff"]
	if !h.Verbose {
		t.Errorf("chock-diff is not verbose: pre-commit would hide what it shows on success")
	}
	wider := strings.Replace(example(t, "chock.zon"), `"exec.path.git",`, `"exec.path.git",
            "exec.path.make",`, 1)
	repo := hookRepo(t, map[string]string{"chock.zon": wider})
	run := runHook(t, repo, h, "--org", "org.zon")
	if !run.ran || run.failed() || !strings.Contains(run.out, "WIDENED  exec.path.make  deny -> allow") {
		t.Fatalf("chock-diff on a widening: %+v", run)
	}
	run = runHook(t, repo, h, "--org", "org.zon", "--fail-on", "widen")
	if !run.ran || run.code != 1 || !strings.Contains(run.out, "the change widens what the policy grants") {
		t.Fatalf("chock-diff --fail-on widen on a widening: %+v", run)
	}
	stage(t, repo, map[string]string{"chock.zon": example(t, "chock.zon")})
	if run := runHook(t, repo, h, "--org", "org.zon", "--fail-on", "widen"); run.ran {
		// Staged back to HEAD's content: nothing is staged, nothing runs.
		t.Errorf("chock-diff ran with nothing staged: %+v", run)
	}
}
