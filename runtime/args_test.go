package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/runtime/sessionlog"
)

// argsPolicy allows git but its pushes; a dry run is let through.
const argsPolicy = `.{
    .policy = .{
        .allow = .{ "exec.path.git", "exec.path.sh" },
        .rules = .{
            .{ .action = "exec.path.git", .decision = .deny, .args = .{ "push" }, .why = "pushes go through the merge queue" },
            .{ .action = "exec.path.git", .decision = .allow, .args = .{ "push", "--dry-run" } },
        },
    },
}`

// TestArgsRules: a top-level exec call is decided with its arguments:
// git status runs, git push is refused by the .args rule, and so is a
// push behind a flag (git -C x push, git -c a=b push).
func TestArgsRules(t *testing.T) {
	f, _, _ := fileFixture(t, argsPolicy)
	run := func(argv ...string) (*Result, error) {
		return f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{Argv: argv}})
	}
	if res, err := run("git", "status", "--porcelain"); err != nil || res.ExitCode != 0 {
		t.Fatalf("git status: %v %+v", err, res)
	}
	for _, argv := range [][]string{{"git", "push"}, {"git", "-C", "x", "push"}, {"git", "-c", "a=b", "push", "origin"}} {
		_, err := run(argv...)
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(refused.Reason, `.args = .{ "push" }`) {
			t.Errorf("%q: %v, want refused by the .args rule", argv, err)
		}
	}
	// The allow of the longer .args: git push --dry-run is decided allow
	// (it fails for want of a remote, which is git's answer, not chock's).
	if _, err := run("git", "push", "--dry-run"); err != nil {
		t.Errorf("git push --dry-run: %v", err)
	}
	evs, _ := sessionlog.Read(f.logDir, f.s.ID)
	denied := 0
	for _, ev := range evs {
		if ev["kind"] == "decision" && ev["decision"] == "deny" {
			denied++
			if rule := fmt.Sprint(ev["rule"]); !strings.HasPrefix(rule, `exec.path.git .args = .{ "push" } (chock.zon:5:`) {
				t.Errorf("the session log names %q", rule)
			}
		}
	}
	if denied != 3 {
		t.Errorf("%d denials logged, want 3", denied)
	}
}

// TestArgsRulesNested: a nested exec of a program a rule with .args
// matches is decided by the arguments the kernel is handed (read from the
// process at its execve): sh running git push is refused, sh running git
// status is not, and the refusal is logged with the rule.
func TestArgsRulesNested(t *testing.T) {
	f, _, _ := fileFixture(t, argsPolicy)
	res := f.sh(t, "", "git -C . push origin main; echo push=$?; git status --porcelain >/dev/null; echo status=$?")
	if !strings.Contains(res.Stdout, "push=126") || !strings.Contains(res.Stdout, "status=0") {
		t.Fatalf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
	evs, _ := sessionlog.Read(f.logDir, f.s.ID)
	found := false
	for _, ev := range evs {
		if ev["kind"] == "exec.nested" && ev["outcome"] == "refused" {
			why := fmt.Sprint(ev["why"])
			found = found || strings.Contains(why, `exec.path.git with these arguments is deny by project rule "exec.path.git" .args = .{ "push" }`)
		}
	}
	if !found {
		t.Errorf("no refused exec.nested names the .args rule: %v", evs)
	}
}

// TestArgsRulesRenamedProgram: git run under another argv[0] picks its
// subcommand from it (git-push is git push): a call whose argv[0] is not
// the name its program is decided under has an unknown argument first,
// which the deny's words match, at the top level and nested.
func TestArgsRulesRenamedProgram(t *testing.T) {
	f, _, proj := fileFixture(t, argsPolicy)
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(git, filepath.Join(proj, "git-push")); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{Argv: []string{"./git-push", "origin"}}})
	var refused *RefusedError
	if !errors.As(err, &refused) || !strings.Contains(refused.Reason, `.args = .{ "push" }`) {
		t.Errorf("./git-push origin: %v, want refused by the .args rule", err)
	}
	res := f.sh(t, "", "./git-push origin; echo push=$?")
	if !strings.Contains(res.Stdout, "push=126") {
		t.Errorf("nested ./git-push: %q %q", res.Stdout, res.Stderr)
	}
}
