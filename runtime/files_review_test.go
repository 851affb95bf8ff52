package runtime

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFileRuleOfAnUnnamablePath: a path a deny glob names is protected
// even where its name can form no action (a space, a '*', a control byte
// in a folder's name): such a path's decision cannot be made, which is a
// deny. A call cannot unprotect a .env either by renaming its folder to
// such a name and reading it in the next call.
func TestFileRuleOfAnUnnamablePath(t *testing.T) {
	f, _, proj := fileFixture(t, strings.Replace(filePolicy, `"exec.path.ls",`, `"exec.path.ls", "exec.path.mv",`, 1))
	write(t, filepath.Join(proj, "my app/.env"), "FAKE-SPACED-DOTENV")
	write(t, filepath.Join(proj, "a*b/.env"), "FAKE-STAR-DOTENV")
	for _, p := range []string{"my app/.env", "a*b/.env"} {
		res := f.sh(t, "", "cat '"+p+"'")
		if res.ExitCode == 0 || strings.Contains(res.Stdout, "FAKE") {
			t.Errorf("%s read: %q", p, res.Stdout)
		}
	}
	// The rename: sub/.env.local is covered, but sub is not a mount point.
	if res := f.sh(t, "", "mv sub 'sub dir'"); res.ExitCode != 0 {
		t.Logf("mv: exit %d %q", res.ExitCode, res.Stderr)
	}
	res := f.sh(t, "", "cat 'sub dir/.env.local' sub/.env.local")
	if strings.Contains(res.Stdout, "FAKE") {
		t.Errorf("renamed and read: %q", res.Stdout)
	}
}

// TestFileBothUnreadableAndReadOnly: a file and a folder the policy
// denies both reading and writing are covered, and the call runs (the
// read-only bind first, then the cover: the other order left the second
// mount a path that was no longer the file planned, and refused every
// call).
func TestFileBothUnreadableAndReadOnly(t *testing.T) {
	policy := strings.Replace(filePolicy, `"exec.path.ls",`, `"exec.path.ls", "exec.path.touch",`, 1)
	policy = strings.Replace(policy, `.policy = .{`, `.policy = .{ .deny = .{ "fs.read.secret.txt", "fs.write.secret.txt", "fs.read.vault/**", "fs.write.vault/**" },`, 1)
	f, _, proj := fileFixture(t, policy)
	write(t, filepath.Join(proj, "secret.txt"), "FAKE-BOTH")
	write(t, filepath.Join(proj, "vault/key"), "FAKE-VAULT")
	for _, script := range []string{"cat secret.txt", "cat vault/key", "echo x > secret.txt", "touch vault/new", "ls vault"} {
		res := f.sh(t, "", script)
		if strings.Contains(res.Stderr, "could not be made") {
			t.Fatalf("%s: the call was refused: %q", script, res.Stderr)
		}
		if res.ExitCode == 0 || strings.Contains(res.Stdout, "FAKE") {
			t.Errorf("%s worked: %q", script, res.Stdout)
		}
	}
}

// TestKeptPathNotWritable: a path a rule lets be read through an
// unreadable folder (~/.aws/config under ~/.aws/**) is not made writable
// by being let through, where HOME is under a folder the session makes
// private (/tmp, as CI images often have it): a call cannot plant a
// credential_process the aws CLI runs later, outside any call.
func TestKeptPathNotWritable(t *testing.T) {
	f, home, _ := fileFixture(t, filePolicy)
	for _, p := range []string{".aws/config", ".ssh/known_hosts"} {
		abs := filepath.Join(home, p)
		before, _ := os.ReadFile(abs)
		res := f.sh(t, "", "echo 'credential_process = touch /tmp/pwned' >> "+abs)
		if after, _ := os.ReadFile(abs); string(after) != string(before) || res.ExitCode == 0 {
			t.Errorf("%s written from a call: exit %d, now %q", p, res.ExitCode, after)
		}
		if res := f.sh(t, "", "cat "+abs); res.Stdout != string(before) {
			t.Errorf("%s no longer reads: %q %q", p, res.Stdout, res.Stderr)
		}
	}
}

// TestLinkedWorktreeNotRepointed: a call in a repository cannot repoint
// a linked worktree of it (.git/worktrees/NAME/commondir, its gitdir) at
// a config of the call's making, whose core.fsmonitor git runs in that
// worktree afterwards, outside any call.
func TestLinkedWorktreeNotRepointed(t *testing.T) {
	f, _, proj := fileFixture(t, strings.Replace(filePolicy, `"exec.path.ls",`, `"exec.path.ls", "exec.path.cp",`, 1))
	genv := []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	git := func(dir string, args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), genv...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := git(proj, "commit", "-q", "--allow-empty", "-m", "one"); err != nil {
		t.Fatal(err, out)
	}
	wt := filepath.Join(t.TempDir(), "wt2")
	if out, err := git(proj, "worktree", "add", "-q", wt); err != nil {
		t.Fatal(err, out)
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	script := "mkdir -p evil && cp -r .git/objects .git/refs evil/ && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = touch " + marker + "\\n' > evil/config && " +
		"echo " + filepath.Join(proj, "evil") + " > .git/worktrees/wt2/commondir"
	res := f.sh(t, "", script)
	t.Logf("the call: exit %d %q", res.ExitCode, res.Stderr)
	git(wt, "status", "--porcelain")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("git in the linked worktree ran what a call planted")
	}
}

// TestNestedRepositoryNotPlanted: a git repository inside the project (a
// folder of repositories, a vendored checkout) has its config and hooks
// protected as the project's own .git has: git there afterwards runs
// nothing a call planted.
func TestNestedRepositoryNotPlanted(t *testing.T) {
	f, _, proj := fileFixture(t, filePolicy)
	nested := filepath.Join(proj, "nested")
	if out, err := exec.Command("git", "init", "-q", nested).CombinedOutput(); err != nil {
		t.Fatal(err, string(out))
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, script := range []string{
		"printf '#!/bin/sh\\ntouch " + marker + "\\n' > nested/.git/hooks/pre-commit && chmod +x nested/.git/hooks/pre-commit",
		"printf '[core]\\n\\tfsmonitor = touch " + marker + "\\n' >> nested/.git/config",
	} {
		if res := f.sh(t, "", script); res.ExitCode == 0 {
			t.Errorf("%s worked", script)
		}
	}
	cmd := exec.Command("git", "status", "--porcelain")
	cmd.Dir = nested
	cmd.Run()
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("git in the nested repository ran what a call planted")
	}
}

// TestInheritedDescriptorNotPassedOn: a descriptor chock's own process
// holds without close-on-exec (one its parent, the client, left open) is
// not open in a call's program: through it the program would read a file
// the rules cover, past every mount.
func TestInheritedDescriptorNotPassedOn(t *testing.T) {
	f, home, _ := fileFixture(t, filePolicy)
	fd, err := syscall.Open(filepath.Join(home, ".ssh/id_ed25519"), syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	res := f.sh(t, "", fmt.Sprintf("cat /proc/self/fd/%d", fd))
	if strings.Contains(res.Stdout, "FAKE-SSH-KEY") || res.ExitCode == 0 {
		t.Fatalf("read through descriptor %d: exit %d, %q", fd, res.ExitCode, res.Stdout)
	}
}

// TestHooksPathAndHuskyNotPlanted: a repository whose config points
// core.hooksPath at a folder of the project (.githooks) has that folder
// protected as .git/hooks is, and husky's .husky folder is write-denied:
// git commit outside the call afterwards runs nothing the call wrote.
func TestHooksPathAndHuskyNotPlanted(t *testing.T) {
	f, _, proj := fileFixture(t, filePolicy)
	cfg := filepath.Join(proj, ".git", "config")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, []byte("[core]\n\thooksPath = .githooks # the team's hooks\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, script := range []string{
		"mkdir -p .githooks && printf '#!/bin/sh\\ntouch " + marker + "\\n' > .githooks/pre-commit && chmod +x .githooks/pre-commit",
		"mkdir -p .husky && printf 'touch " + marker + "\\n' > .husky/pre-commit",
		"mkdir -p .devcontainer && echo '{\"postCreateCommand\": \"touch " + marker + "\"}' > .devcontainer/devcontainer.json",
	} {
		if res := f.sh(t, "", script); res.ExitCode == 0 {
			t.Errorf("%s worked", script)
		}
	}
	for _, p := range []string{".githooks/pre-commit", ".husky/pre-commit", ".devcontainer/devcontainer.json"} {
		if _, err := os.Lstat(filepath.Join(proj, p)); err == nil {
			t.Errorf("%s is there after the calls", p)
		}
	}
	cmd := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
	cmd.Dir = proj
	cmd.CombinedOutput()
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("git outside the call ran a hook a call planted")
	}
}

// TestHooksPathReadAsGitReadsIt: core.hooksPath read as git itself reads
// it from the same config (git config --file … --get), for the forms git
// accepts; a value that would cover the project or home is left out.
func TestHooksPathReadAsGitReadsIt(t *testing.T) {
	root := t.TempDir()
	g := filepath.Join(root, ".git")
	if err := os.MkdirAll(g, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []string{
		"[core]\n\thooksPath = .githooks\n",
		"[core] hooksPath = .evil1\n",
		"[core]\n\thooksPath = .ev\"il2\"\n",
		"[core]\n\thooksPath = \".evil3\" ; c\n",
		"[CORE]\n\tHOOKSPATH = hooks # the team's\n",
		"[core]\n\thooksPath = a\\\nb\n",
		"[core]\n\thooksPath = \"with space\"\n",
		"[core \"x\"]\n\thooksPath = not-core\n[core]\n\tbare = false\n",
	} {
		if err := os.WriteFile(filepath.Join(g, "config"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out, _ := exec.Command("git", "config", "--file", filepath.Join(g, "config"), "--get", "core.hooksPath").Output()
		want := strings.TrimSuffix(string(out), "\n")
		if want != "" {
			want = filepath.Join(root, want)
		}
		if got := hooksPath(g, root, "/nonexistent-home", []string{root}); got != want {
			t.Errorf("%q: got %q, git reads %q", cfg, got, want)
		}
	}
	for _, v := range []string{".", "..", "/"} {
		os.WriteFile(filepath.Join(g, "config"), []byte("[core]\n\thooksPath = "+v+"\n"), 0o644)
		if got := hooksPath(g, root, "/nonexistent-home", []string{root}); got != "" {
			t.Errorf("hooksPath %q is covered as %q: every write would be refused", v, got)
		}
	}
}

// TestEmptyNestedGitLeftAsItIs: an empty .git folder the walk finds (the
// placeholder another chock process holds in a folder below this one, as
// the runtime and gateway tests' sessions do for each other) is made
// read-only as it is: nothing is made inside it, so the other process can
// remove it and no empty folder of this one is left behind in the project.
func TestEmptyNestedGitLeftAsItIs(t *testing.T) {
	f, _, proj := fileFixture(t, filePolicy)
	other := filepath.Join(proj, "sub", ".git")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if res := f.sh(t, "", "mkdir sub/.git/hooks"); res.ExitCode == 0 {
		t.Error("a call made sub/.git/hooks in an empty sub/.git")
	}
	if es, err := os.ReadDir(other); err != nil || len(es) != 0 {
		t.Fatalf("sub/.git during the session: %v %v", es, err)
	}
	f.s.Close()
	if es, err := os.ReadDir(other); err != nil || len(es) != 0 {
		t.Fatalf("sub/.git after the session: %v %v", es, err)
	}
}

// TestPlannedFolderGoneBeforeTheMount: a folder the plan protects that
// goes between the plan and the mount (another chock process's
// placeholder, removed as its session ends) has the call planned again,
// not refused.
func TestPlannedFolderGoneBeforeTheMount(t *testing.T) {
	f, _, proj := fileFixture(t, filePolicy)
	other := filepath.Join(proj, "sub", ".git")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	plans := 0
	testAfterPlan = func() {
		if plans++; plans == 1 {
			os.Remove(other)
		}
	}
	t.Cleanup(func() { testAfterPlan = nil })
	if res := f.sh(t, "", "true"); res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	if plans != 2 {
		t.Errorf("planned %d times, want 2", plans)
	}
}
