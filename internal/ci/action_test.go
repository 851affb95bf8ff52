package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// git runs git in dir, failing the test on an error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=ci", "GIT_AUTHOR_EMAIL=ci@example.invalid", "GIT_COMMITTER_NAME=ci", "GIT_COMMITTER_EMAIL=ci@example.invalid")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// needGit skips a test without git (and fails it under CI).
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("git is not on PATH")
		}
		t.Skip("git is not on PATH")
	}
	if testing.Short() {
		t.Skip("-short: the CI tests build chock")
	}
}

// copyExamples copies examples/ into dir.
func copyExamples(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(repoRoot, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(repoRoot, "examples", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newRepo is a checkout as a runner has it: a repository whose origin (a
// bare repository beside it) has main, holding examples/ at its root, after
// a first commit without a policy (tagged before-policy). The checkout
// has main, but not origin/main: as actions/checkout leaves a pull
// request, the base branch is not fetched.
func newRepo(t *testing.T) (workspace string) {
	t.Helper()
	root := t.TempDir()
	origin := filepath.Join(root, "origin.git")
	workspace = filepath.Join(root, "work")
	git(t, root, "init", "-q", "--bare", "-b", "main", origin)
	git(t, root, "init", "-q", "-b", "main", workspace)
	git(t, workspace, "remote", "add", "origin", origin)
	os.WriteFile(filepath.Join(workspace, "README"), []byte("a project\n"), 0o644)
	git(t, workspace, "add", ".")
	git(t, workspace, "commit", "-q", "-m", "start")
	git(t, workspace, "tag", "before-policy")
	copyExamples(t, workspace)
	git(t, workspace, "add", ".")
	git(t, workspace, "commit", "-q", "-m", "policy")
	git(t, workspace, "push", "-q", "origin", "main")
	git(t, workspace, "update-ref", "-d", "refs/remotes/origin/main")
	return workspace
}

// change edits chock.zon on a new branch, as a pull request would, and
// commits it; reach.txt is rewritten to match when rewriteReach.
func change(t *testing.T, workspace, old, new string, rewriteReach bool) {
	t.Helper()
	p := filepath.Join(workspace, "chock.zon")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("chock.zon has no %q", old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, workspace, "checkout", "-q", "-b", "change")
	if rewriteReach {
		chock := filepath.Join(sharedTools(t).gobin, "chock")
		if _, err := os.Stat(chock); err != nil {
			// Build it as the action would.
			r := newRunner(t, workspace, "push", "")
			r.runScript(stepDef{Name: "build chock", Run: `go install github.com/chockhq/chock/cmd/chock@latest`}, &exprContext{values: map[string]any{}})
		}
		cmd := exec.Command(chock, "reach", "--org", "org.zon", "--write", "reach.txt", "chock.zon")
		cmd.Dir = workspace
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("chock reach --write: %v\n%s", err, out)
		}
	}
	git(t, workspace, "commit", "-q", "-am", "change the policy")
}

// exampleWorkflow is the workflow of docs/ci.md: the yaml block after
// its example-workflow marker.
func exampleWorkflow(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "<!-- example-workflow")
	if !ok {
		t.Fatal("docs/ci.md has no example-workflow marker")
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	if !ok {
		t.Fatal("no yaml block after the example-workflow marker in docs/ci.md")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("the example workflow's yaml block is not closed")
	}
	return []byte(block)
}

func wantOutcomes(t *testing.T, r *runner, want ...string) {
	t.Helper()
	got := r.outcomes()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("want step %s; steps: %v", w, got)
		}
	}
}

// TestExampleWorkflowPush: on a push to main the example workflow of
// docs/ci.md passes on examples/: chock is installed at the action's ref
// (built from this module), fmt, lint and test pass, the SARIF and the
// JUnit report are handed on, the pinned reach holds, and there is no
// diff.
func TestExampleWorkflowPush(t *testing.T) {
	needGit(t)
	ws := newRepo(t)
	r := newRunner(t, ws, "push", "")
	if !r.runWorkflow(exampleWorkflow(t)) {
		t.Fatalf("the workflow failed: %v", r.outcomes())
	}
	wantOutcomes(t, r, "Install chock=success", "chock fmt=success", "chock lint=success", "chock test=success",
		"chock diff=skipped", "upload SARIF=success", "keep the test report=success", "pinned grants=success")
	if got := sharedTools(t).installs(t); !slices.Contains(got, "github.com/chockhq/chock/cmd/chock@main") {
		t.Errorf("go install was asked for %v; want chock at the action's ref, main", got)
	}
	junit, err := os.ReadFile(filepath.Join(r.temp, "chock-junit.xml"))
	if err != nil || !regexp.MustCompile(`<testsuite name="chock.zon" [^>]* tests="[1-9][0-9]*" failures="0"`).Match(junit) {
		t.Errorf("the JUnit report (%v):\n%s", err, junit)
	}
	if out := r.step("chock test").Output; !regexp.MustCompile(`(?m)^coverage: [0-9.]+% of rules \([0-9]+ of [0-9]+\): project `).MatchString(out) ||
		!regexp.MustCompile(`(?m)^[1-9][0-9]* passed, 0 failed$`).MatchString(out) {
		t.Errorf("chock test's log:\n%s", out)
	}
	if r.summary != "" {
		t.Errorf("a push wrote a job summary:\n%s", r.summary)
	}
}

// TestExampleWorkflowPullRequestWidens: on a pull request that allows one
// more program, the base branch is fetched, the job summary is chock
// diff's table naming it, and the job fails (fail-on widen) while every
// other check still ran and the SARIF was still uploaded.
func TestExampleWorkflowPullRequestWidens(t *testing.T) {
	needGit(t)
	ws := newRepo(t)
	change(t, ws, `"exec.path.git",`, `"exec.path.git",
            "exec.path.make",`, true)
	r := newRunner(t, ws, "pull_request", "main")
	if r.runWorkflow(exampleWorkflow(t)) {
		t.Fatalf("the workflow passed a widening: %v", r.outcomes())
	}
	wantOutcomes(t, r, "chock fmt=success", "chock lint=success", "chock test=success", "chock diff=failure",
		"upload SARIF=success", "keep the test report=success", "pinned grants=skipped")
	for _, want := range []string{"### chock diff: 1 widened, 0 narrowed", "| **WIDENED** | `exec.path.make` deny → allow |"} {
		if !strings.Contains(r.summary, want) {
			t.Errorf("the job summary lacks %q:\n%s", want, r.summary)
		}
	}
	if out := r.step("chock diff").Output; !strings.Contains(out, "the change widens what the policy grants") {
		t.Errorf("chock diff's log:\n%s", out)
	}
}

// TestActionPullRequestNarrows: a pull request that only narrows passes,
// with its table in the summary; org takes several files, one a line,
// blank lines and spaces around them ignored.
func TestActionPullRequestNarrows(t *testing.T) {
	needGit(t)
	ws := newRepo(t)
	os.WriteFile(filepath.Join(ws, "org2.zon"), []byte(".{ .name = \"other\" }\n"), 0o644)
	git(t, ws, "add", "org2.zon")
	git(t, ws, "commit", "-q", "-m", "a second ceiling")
	git(t, ws, "push", "-q", "origin", "main")
	git(t, ws, "update-ref", "-d", "refs/remotes/origin/main")
	change(t, ws, "            \"exec.path.git\",\n", "", false)
	r := newRunner(t, ws, "pull_request", "main")
	ok, outputs := r.runAction(map[string]string{"org": "org.zon\n\n  org2.zon  \n", "fail-on": "widen"}, "")
	if !ok {
		t.Fatalf("the action failed on a narrowing: %v", r.outcomes())
	}
	if !strings.Contains(r.summary, "### chock diff: 0 widened, 1 narrowed") || !strings.Contains(r.summary, "`exec.path.git` allow → deny") {
		t.Errorf("the job summary:\n%s", r.summary)
	}
	if outputs["sarif-file"] != filepath.Join(r.temp, "chock.sarif") || outputs["junit-file"] != filepath.Join(r.temp, "chock-junit.xml") {
		t.Errorf("outputs %v", outputs)
	}
	if err := checkSARIF(outputs["sarif-file"].(string)); err != nil {
		t.Error(err)
	}
	if got := sharedTools(t).installs(t); !slices.Contains(got, "github.com/chockhq/chock/cmd/chock@latest") {
		t.Errorf("go install was asked for %v; want latest when the action has no ref", got)
	}
}

// TestActionFindings: with a badly laid out file holding a lint error and
// sarif false, fmt shows the diff, lint prints workflow annotations, test
// refuses the policy; every step runs, each fails, and so does the action.
func TestActionFindings(t *testing.T) {
	needGit(t)
	ws := newRepo(t)
	p := filepath.Join(ws, "chock.zon")
	b, _ := os.ReadFile(p)
	bad := strings.Replace(string(b), "        .ask = ", "        .alow = .{},\n   .ask = ", 1)
	os.WriteFile(p, []byte(bad), 0o644)
	r := newRunner(t, ws, "push", "")
	if ok, _ := r.runAction(map[string]string{"org": "org.zon", "sarif": "false"}, ""); ok {
		t.Fatalf("the action passed: %v", r.outcomes())
	}
	wantOutcomes(t, r, "chock fmt=failure", "chock lint=failure", "chock test=failure", "chock diff=skipped")
	if out := r.step("chock fmt").Output; !strings.Contains(out, "--- chock.zon.orig\n+++ chock.zon\n") || !strings.Contains(out, "\n-   .ask = ") {
		t.Errorf("chock fmt's log:\n%s", out)
	}
	if out := r.step("chock lint").Output; !regexp.MustCompile(`(?m)^::error file=chock.zon,line=` + lineOf(bad, ".alow") + `,col=10,.*title=unknown-field::unknown field .alow in .policy`).MatchString(out) {
		t.Errorf("chock lint's log:\n%s", out)
	}
}

// TestActionThreshold: a coverage threshold the expectations do not
// reach (a rule no expectation exercises is added) fails the test step
// alone.
func TestActionThreshold(t *testing.T) {
	needGit(t)
	ws := newRepo(t)
	change(t, ws, `"exec.path.git",`, `"exec.path.git",
            "exec.path.untested",`, false)
	r := newRunner(t, ws, "push", "")
	if ok, _ := r.runAction(map[string]string{"org": "org.zon", "threshold": "100"}, ""); ok {
		t.Fatalf("the action passed: %v", r.outcomes())
	}
	wantOutcomes(t, r, "chock fmt=success", "chock lint=success", "chock test=failure")
	if out := r.step("chock test").Output; !regexp.MustCompile(`chock test: coverage [0-9.]+% is below --threshold 100%`).MatchString(out) ||
		!strings.Contains(out, `not covered: project rule "exec.path.untested" (allow)`) {
		t.Errorf("chock test's log:\n%s", out)
	}
}

// TestActionNewPolicy: a config that is not at the base revision is
// compared with an empty policy: the summary says so and shows all it
// grants; fail-on none lets it pass.
func TestActionNewPolicy(t *testing.T) {
	needGit(t)
	ws := newRepo(t)
	r := newRunner(t, ws, "push", "")
	ok, _ := r.runAction(map[string]string{"org": "org.zon", "diff-base": "before-policy", "fail-on": "none"}, "")
	if !ok {
		t.Fatalf("the action failed: %v", r.outcomes())
	}
	wantOutcomes(t, r, "chock diff=success")
	for _, want := range []string{"chock.zon is not at before-policy: compared with an empty policy.", "### chock diff: ", "**WIDENED** | `exec.path.gh` deny → allow"} {
		if !strings.Contains(r.summary, want) {
			t.Errorf("the summary lacks %q:\n%s", want, r.summary)
		}
	}
}

// lineOf is the line number of the first line of s holding sub.
func lineOf(s, sub string) string {
	i := strings.Index(s, sub)
	if i < 0 {
		return "?"
	}
	return strconv.Itoa(strings.Count(s[:i], "\n") + 1)
}
