package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// inManagedNS runs chock (this test binary) in a user and mount namespace
// of its own, where /etc is an empty tmpfs holding /etc/chock/org.d with
// the org files given (name → text) at mode, after setup (shell text run
// there first): the machine's own /etc is never touched.
func inManagedNS(t *testing.T, dir string, orgs map[string]string, mode, setup string, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("unshare is not installed (Debian: util-linux)")
		}
		t.Skip("unshare is not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := "set -e; mount -t tmpfs -o mode=755 tmpfs /etc; mkdir -p /etc/chock/org.d; chmod 755 /etc/chock /etc/chock/org.d\n"
	for name, text := range orgs {
		src := filepath.Join(dir, "managed-"+name)
		if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		script += "cp " + src + " /etc/chock/org.d/" + name + "; chmod " + mode + " /etc/chock/org.d/" + name + "\n"
	}
	script += setup + "\nexec \"$@\"\n"
	cmd := exec.Command("unshare", append([]string{"--user", "--map-root-user", "--mount", "sh", "-c", script, "sh", exe}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asChockEnv+"=1", "CHOCK_STATE_DIR="+filepath.Join(dir, "state"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestManagedCeiling: an org ceiling in /etc/chock/org.d applies with no
// --org (a project allow under it is refused); one a group may write makes
// chock decide nothing; chock version names what is in force.
func TestManagedCeiling(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "chock.zon"), []byte(`.{ .policy = .{ .allow = .{ "exec.path.curl", "exec.path.gh" } } }`), 0o644)
	acme := map[string]string{"acme.zon": `.{ .name = "acme", .policy = .{ .deny = .{ "exec.path.curl" } } }`}

	out, err := inManagedNS(t, dir, acme, "644", "", "eval", "exec.path.curl", "exec.path.gh")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "org:acme") || !regexpLine(out, `exec\.path\.curl\s.*deny`) || !regexpLine(out, `exec\.path\.gh\s.*allow`) {
		t.Errorf("the managed ceiling did not apply without --org:\n%s", out)
	}
	out, _ = inManagedNS(t, dir, acme, "644", "", "version")
	if !strings.Contains(out, "managed org ceilings: acme (/etc/chock/org.d/acme.zon)") {
		t.Errorf("chock version:\n%s", out)
	}

	out, err = inManagedNS(t, dir, acme, "664", "", "eval", "exec.path.gh")
	if err == nil || !strings.Contains(out, "writable by group or others") {
		t.Errorf("a group-writable managed ceiling was used (%v):\n%s", err, out)
	}
	out, err = inManagedNS(t, dir, acme, "644", "chmod 777 /etc/chock/org.d", "eval", "exec.path.gh")
	if err == nil || !strings.Contains(out, "/etc/chock/org.d is writable by group or others") {
		t.Errorf("a world-writable managed folder was used (%v):\n%s", err, out)
	}
	out, err = inManagedNS(t, dir, acme, "644", "chmod 777 /etc/chock", "eval", "exec.path.gh")
	if err == nil || !strings.Contains(out, "/etc/chock is writable by group or others") {
		t.Errorf("a world-writable folder above the managed one was trusted (%v):\n%s", err, out)
	}
	out, err = inManagedNS(t, dir, acme, "644", "ln -s /etc/chock/org.d/acme.zon /etc/chock/org.d/link.zon", "eval", "exec.path.gh")
	if err == nil || !strings.Contains(out, "not a link") {
		t.Errorf("a linked managed ceiling was used (%v):\n%s", err, out)
	}
}

// TestProjectExpectsOrgs: a project naming the orgs it expects (.orgs)
// refuses to decide without a ceiling of that name, from any source.
func TestProjectExpectsOrgs(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "chock.zon")
	os.WriteFile(cfg, []byte(`.{ .orgs = .{ "acme" }, .policy = .{ .allow = .{ "exec.path.gh" } } }`), 0o644)
	org := filepath.Join(dir, "acme.zon")
	os.WriteFile(org, []byte(`.{ .name = "acme", .policy = .{ .deny = .{ "exec.path.curl" } } }`), 0o644)
	code, _, errs := runBuffered(t, "eval", "--config", cfg, "exec.path.gh")
	if code != exitFailed || !strings.Contains(errs, `the policy has no org ceiling "acme"`) {
		t.Errorf("without its org: exit %d, %s", code, errs)
	}
	if code, out, errs := runBuffered(t, "eval", "--config", cfg, "--org", org, "exec.path.gh"); code != exitOK {
		t.Errorf("with its org: exit %d, %s %s", code, out, errs)
	}
	// A bundle compiled without the org remembers the project expects it.
	bundle := filepath.Join(dir, "b.tar.gz")
	if code, _, errs := runBuffered(t, "compile", "--config", cfg, "--org", org, "--link-orgs", "-o", bundle); code != exitOK {
		t.Fatalf("compile: %d %s", code, errs)
	}
	if code, _, errs := runBuffered(t, "eval", "--bundle", bundle, "exec.path.gh"); code == exitOK || !strings.Contains(errs, "acme") {
		t.Errorf("a linking bundle without its org: exit %d, %s", code, errs)
	}
}

// regexpLine says whether some line of text matches re.
func regexpLine(text, re string) bool {
	return regexp.MustCompile(`(?m)^` + re).MatchString(text)
}
