package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFileRules: each file rule's mount, against a shell that tries to get
// past it inside the call.
func TestFileRules(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	for p, body := range map[string]string{
		".ssh/id_ed25519": "SSH-SECRET", ".aws/credentials": "AWS-SECRET", ".aws/config": "region=x",
		".netrc": "NETRC-SECRET",
	} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(home, p)), 0o700))
		must(t, os.WriteFile(filepath.Join(home, p), []byte(body), 0o600))
	}
	must(t, os.MkdirAll(filepath.Join(proj, ".git/hooks"), 0o755))
	must(t, os.WriteFile(filepath.Join(proj, ".git/config"), []byte("[core]\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(proj, ".env"), []byte("ENV-SECRET"), 0o644))
	spec := &Spec{Path: "/usr/bin/dash", Dir: proj, Writable: []string{proj}, Exec: append(interp(t, "/usr/bin/dash"), "/usr/bin/cat", "/usr/bin/ls", "/usr/bin/mv", "/usr/bin/ln", "/usr/bin/rm", "/usr/bin/chmod"),
		FileRules: []FileRule{
			{Path: filepath.Join(home, ".ssh"), Op: Unreadable},
			{Path: filepath.Join(home, ".aws"), Op: Unreadable, Keep: []string{"config"}},
			{Path: filepath.Join(home, ".netrc"), Op: Unreadable},
			{Path: filepath.Join(proj, ".env"), Op: Unreadable},
			{Path: filepath.Join(proj, ".git"), Op: Pinned},
			{Path: filepath.Join(proj, ".git/config"), Op: ReadOnly},
			{Path: filepath.Join(proj, ".git/hooks"), Op: ReadOnly},
		}}
	h := home
	spec.Argv = []string{"sh", "-c", strings.Join([]string{
		"cat " + h + "/.ssh/id_ed25519; echo ssh=$?",
		"ls " + h + "/.ssh; echo lsssh=$?",
		"cat " + h + "/.aws/credentials; echo awscred=$?",
		"cat " + h + "/.aws/config; echo; echo awsconfig=$?",
		"ls " + h + "/.aws; echo lsaws=$?",
		"cat " + h + "/.netrc; echo netrc=$?",
		"cat .env; echo env=$?",
		"ln -s " + h + "/.ssh/id_ed25519 link; cat link; echo link=$?",
		"chmod 644 .env; echo chmod=$?",
		"mv .env env2; echo mvenv=$?",
		"echo x >> .git/config; echo gitconfig=$?",
		"echo x > .git/hooks/pre-commit; echo hook=$?",
		"mv .git .git2; echo mvgit=$?",
		"echo ok > .git/HEAD; echo head=$?",
	}, "; ")}
	out, _, _ := run(t, spec)
	t.Log(out)
	for _, want := range []string{"ssh=1", "lsssh=2", "awscred=1", "region=x", "awsconfig=0", "lsaws=2", "netrc=1", "env=1", "link=1", "chmod=1", "mvenv=1", "gitconfig=2", "hook=2", "mvgit=1", "head=0"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("want %s in:\n%s", want, out)
		}
	}
	for _, secret := range []string{"SSH-SECRET", "AWS-SECRET", "NETRC-SECRET", "ENV-SECRET"} {
		if strings.Contains(out, secret) {
			t.Errorf("%s read:\n%s", secret, out)
		}
	}
	if _, err := os.Stat(filepath.Join(proj, ".git/hooks/pre-commit")); err == nil {
		t.Error("a hook was planted")
	}
	if b, _ := os.ReadFile(filepath.Join(proj, ".git/config")); string(b) != "[core]\n" {
		t.Errorf(".git/config is %q", b)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestFileRuleMovedIsRefused: a path moved and replaced between the plan
// and the mount (by another call) is refused, not the replacement
// protected in its place.
func TestFileRuleMovedIsRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".env")
	must(t, os.WriteFile(p, []byte("x"), 0o600))
	var st unix.Stat_t
	must(t, unix.Stat(p, &st))
	must(t, os.Rename(p, p+".moved"))
	must(t, os.WriteFile(p, []byte("decoy"), 0o600))
	exe, err := os.Executable()
	must(t, err)
	spec := &Spec{Path: "/usr/bin/true", Argv: []string{"true"}, Exec: []string{"/usr/bin/true"},
		FileRules: []FileRule{{Path: p, Op: Unreadable, Dev: uint64(st.Dev), Ino: st.Ino}}}
	c := Command(spec, exe)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = c.Start(ctx)
	if err == nil {
		c.Wait()
		t.Fatal("the sandbox protected the replacement")
	}
	if !strings.Contains(err.Error(), "not the file the call was planned for") {
		t.Fatalf("refused for another reason: %v", err)
	}
}

// TestKeptPathSwappedForASymlink: a path a rule lets through a cover
// (~/.aws/config under a denied ~/.aws) that is a symlink when the init
// mounts (another call swapped it in after the plan, pointing at
// ~/.aws/credentials) is not let through: the cover's stub stays, and the
// credentials stay unread.
func TestKeptPathSwappedForASymlink(t *testing.T) {
	home := t.TempDir()
	aws := filepath.Join(home, ".aws")
	must(t, os.MkdirAll(aws, 0o700))
	must(t, os.WriteFile(filepath.Join(aws, "credentials"), []byte("AWS-SECRET"), 0o600))
	must(t, os.Symlink("credentials", filepath.Join(aws, "config")))
	spec := &Spec{Path: "/usr/bin/dash", Dir: home, Exec: append(interp(t, "/usr/bin/dash"), "/usr/bin/cat"),
		FileRules: []FileRule{{Path: aws, Op: Unreadable, Keep: []string{"config"}}},
		Argv:      []string{"sh", "-c", "cat " + aws + "/config; echo config=$?"}}
	out, _, _ := run(t, spec)
	if strings.Contains(out, "AWS-SECRET") || !strings.Contains(out, "config=1") {
		t.Fatalf("the kept path, a symlink now, was let through:\n%s", out)
	}
}
