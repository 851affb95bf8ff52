package runtime

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/eval/load"
)

// The attacks of issue 27, run in real sandboxed calls of a real session,
// with a fake HOME (never the real one) holding fake secrets.

// fileSecrets are the default-denied paths under the fake HOME, each with
// a value no call may read.
var fileSecrets = map[string]string{
	".ssh/id_ed25519":          "FAKE-SSH-KEY",
	".aws/credentials":         "FAKE-AWS-KEY",
	".azure/accessTokens.json": "FAKE-AZURE",
	".config/gcloud/creds.db":  "FAKE-GCLOUD",
	".kube/config":             "FAKE-KUBE",
	".docker/config.json":      "FAKE-DOCKER",
	".netrc":                   "FAKE-NETRC",
	".git-credentials":         "FAKE-GITCRED",
	".config/gh/hosts.yml":     "FAKE-GH",
	".npmrc":                   "FAKE-NPMRC",
	".pypirc":                  "FAKE-PYPIRC",
	".gnupg/private.key":       "FAKE-GPG",
	".password-store/x.gpg":    "FAKE-PASS",
}

const filePolicy = `.{
    .policy = .{
        .allow = .{ "exec.path.cat", "exec.path.sh", "exec.path.git", "exec.path.ln", "exec.path.mkdir", "exec.path.ls",
                    "fs.read.~/.aws/config", "fs.read.~/.ssh/known_hosts", "fs.read.config/.env" },
    },
}`

const fileOrg = `.{ .name = "acme", .policy = .{ .deny = .{ "fs.read.~/.ssh/**" } } }`

// fileFixture is a session in a fresh git project, HOME a folder of fake
// secrets.
func fileFixture(t *testing.T, policy string, orgs ...string) (*fixture, string, string) {
	t.Helper()
	home, proj := t.TempDir(), t.TempDir()
	for p, v := range fileSecrets {
		write(t, filepath.Join(home, p), v)
	}
	write(t, filepath.Join(home, ".aws/config"), "region=fake-1")
	write(t, filepath.Join(home, ".ssh/known_hosts"), "fake-known-host")
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	write(t, filepath.Join(proj, ".env"), "FAKE-DOTENV")
	write(t, filepath.Join(proj, "sub/.env.local"), "FAKE-DOTENV-LOCAL")
	write(t, filepath.Join(proj, "config/.env"), "allowed-env")
	t.Chdir(proj)
	in := load.Input{Configs: []load.Source{{Name: "chock.zon", Data: []byte(policy)}}, Unlinted: true}
	for i, o := range orgs {
		in.Orgs = append(in.Orgs, load.Source{Name: "org" + string(rune('0'+i)) + ".zon", Data: []byte(o)})
	}
	p, ds, err := load.FromSources(context.Background(), in)
	if err != nil {
		t.Fatalf("%v\n%v", err, ds)
	}
	f := newFixtureWith(t, policy, nil, nil, func(o *Options) {
		o.Engine, o.Config = p.Engine, p.Config
		o.BaseEnv = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	})
	return f, home, proj
}

func write(t *testing.T, p, v string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) sh(t *testing.T, dir, script string) *Result {
	t.Helper()
	res, err := f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{Argv: []string{"sh", "-c", script}, Dir: dir}})
	if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return res
}

// TestFileDefaultsRefuseReads: every default-denied path is unreadable in
// a call, by its absolute path, by a relative one and through a symlink
// the call made; the rules' exceptions read.
func TestFileDefaultsRefuseReads(t *testing.T) {
	f, home, _ := fileFixture(t, filePolicy)
	for p, v := range fileSecrets {
		abs := filepath.Join(home, p)
		for _, how := range []struct{ dir, script string }{
			{"", "cat " + abs},
			{home, "cat " + p},
			{"", "ln -s " + abs + " link-" + strings.ReplaceAll(p, "/", "_") + " && cat link-" + strings.ReplaceAll(p, "/", "_")},
		} {
			res := f.sh(t, how.dir, how.script)
			if strings.Contains(res.Stdout+res.Stderr, v) || res.ExitCode == 0 {
				t.Errorf("%s (in %q) read %s: exit %d, %q %q", how.script, how.dir, p, res.ExitCode, res.Stdout, res.Stderr)
			}
		}
	}
	for _, c := range []struct{ path, want string }{{"~/.aws/config", "region=fake-1"}, {"~/.ssh/known_hosts", "fake-known-host"}, {"config/.env", "allowed-env"}} {
		res := f.sh(t, "", "cat "+strings.Replace(c.path, "~", home, 1))
		if res.ExitCode != 0 || res.Stdout != c.want {
			t.Errorf("%s: exit %d, %q %q", c.path, res.ExitCode, res.Stdout, res.Stderr)
		}
	}
	for _, p := range []string{".env", "sub/.env.local"} {
		res := f.sh(t, "", "cat "+p)
		if res.ExitCode == 0 || strings.Contains(res.Stdout, "FAKE") {
			t.Errorf("%s read: %q", p, res.Stdout)
		}
	}
	// The refusal names the rule.
	res := f.sh(t, "", "cat "+filepath.Join(home, ".aws/credentials"))
	if !strings.Contains(res.Stderr, "/.aws/credentials is not readable inside a call (fs.read.~/.aws/credentials: project fs.read.~/.aws/** (chock's defaults)") {
		t.Errorf("the refusal names no rule: %q", res.Stderr)
	}
}

// TestOrgDenyHoldsForFiles: an org's deny of ~/.ssh/** holds against the
// project's allow of a file in it.
func TestOrgDenyHoldsForFiles(t *testing.T) {
	f, home, _ := fileFixture(t, filePolicy, fileOrg)
	res := f.sh(t, "", "cat "+filepath.Join(home, ".ssh/known_hosts"))
	if res.ExitCode == 0 || strings.Contains(res.Stdout, "fake-known-host") {
		t.Fatalf("read past the org's deny: %q", res.Stdout)
	}
	if res := f.sh(t, "", "cat "+filepath.Join(home, ".aws/config")); res.Stdout != "region=fake-1" {
		t.Fatalf("~/.aws/config: %q %q", res.Stdout, res.Stderr)
	}
}

// TestNothingPlantedRunsLater: a call cannot write .git/config, plant a
// hook (its folder there or not) or set core.fsmonitor, and git outside
// the call afterwards runs nothing the call left.
func TestNothingPlantedRunsLater(t *testing.T) {
	for _, hooks := range []bool{true, false} {
		t.Run(map[bool]string{true: "hooks-present", false: "hooks-absent"}[hooks], func(t *testing.T) {
			f, _, proj := fileFixture(t, filePolicy)
			if !hooks {
				if err := os.RemoveAll(filepath.Join(proj, ".git/hooks")); err != nil {
					t.Fatal(err)
				}
			}
			marker := filepath.Join(t.TempDir(), "pwned")
			before, _ := os.ReadFile(filepath.Join(proj, ".git/config"))
			for _, script := range []string{
				"echo '[core] fsmonitor = touch " + marker + "' >> .git/config",
				"git config core.fsmonitor 'touch " + marker + "'",
				"mkdir -p .git/hooks; printf '#!/bin/sh\\ntouch " + marker + "\\n' > .git/hooks/pre-commit",
				"mv .git/hooks .git/hooks-old; mkdir .git/hooks && echo x > .git/hooks/post-checkout",
				"mv .git .git-old",
				"echo '[core] hooksPath = /tmp' >> .git/config.worktree",
				"mkdir -p evil && echo '[core] fsmonitor = touch " + marker + "' > evil/config && echo ../evil > .git/commondir",
				"mkdir -p .vscode && echo '{}' > .vscode/tasks.json",
				"echo 'touch " + marker + "' > .envrc",
			} {
				// A commondir no placeholder can stand for is moved aside
				// when the call ends; everything else fails in the call.
				if res := f.sh(t, "", script); res.ExitCode == 0 && !strings.Contains(res.Stderr, ".git/commondir.chock-refused\n") {
					t.Errorf("%s worked: %q", script, res.Stderr)
				}
			}
			if res := f.sh(t, "", "echo x >> .git/config"); !strings.Contains(res.Stderr, "/.git/config is not writable inside a call (fs.write..git/config: project fs.write..git/config (chock's defaults)") {
				t.Errorf("the refusal names no rule: %q", res.Stderr)
			}
			if after, _ := os.ReadFile(filepath.Join(proj, ".git/config")); string(after) != string(before) {
				t.Errorf(".git/config changed:\n%s", after)
			}
			for _, p := range []string{".git/hooks/pre-commit", ".git/hooks/post-checkout", ".git/commondir", ".vscode/tasks.json", ".git-old"} {
				if _, err := os.Lstat(filepath.Join(proj, p)); err == nil {
					t.Errorf("%s is there after the calls", p)
				}
			}
			if b, err := os.ReadFile(filepath.Join(proj, ".envrc")); err == nil && len(b) > 0 {
				t.Errorf(".envrc holds %q", b)
			}
			cmd := exec.Command("git", "status", "--porcelain")
			cmd.Dir = proj
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git status: %v %s", err, out)
			}
			cmd = exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
			cmd.Dir = proj
			cmd.CombinedOutput()
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("git outside the call ran what a call planted")
			}
			// The placeholders go with the session.
			f.s.Close()
			for _, p := range []string{".envrc", ".vscode", ".gitconfig", ".mcp.json"} {
				if _, err := os.Lstat(filepath.Join(proj, p)); err == nil {
					t.Errorf("the placeholder %s is left after the session", p)
				}
			}
			if _, err := os.Lstat(filepath.Join(proj, ".git/hooks")); (err == nil) != hooks {
				t.Errorf(".git/hooks there: %v, want %v (a placeholder left behind?)", err == nil, hooks)
			}
		})
	}
}

// TestGitFileFollowed: a .git file (a separate git dir, as a worktree or
// submodule has) is followed to its git dir, whose config and hooks are
// protected as .git/config and .git/hooks/** are, and the .git file itself
// cannot be rewritten to point elsewhere.
func TestGitFileFollowed(t *testing.T) {
	f, _, proj := fileFixture(t, filePolicy)
	store := filepath.Join(proj, "store")
	if out, err := exec.Command("git", "init", "-q", "--separate-git-dir", store, filepath.Join(proj, "wt")).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	// A session started in the folder with the .git file.
	t.Chdir(filepath.Join(proj, "wt"))
	f2 := newFixtureWith(t, filePolicy, nil, nil, func(o *Options) {
		o.Engine, o.Config = f.s.opts.Engine, f.s.opts.Config
		o.BaseEnv = f.s.opts.BaseEnv
		o.Writable = []string{store}
	})
	for _, script := range []string{
		"echo '[core] fsmonitor = x' >> " + store + "/config",
		"echo x > " + store + "/hooks/pre-commit",
		"echo 'gitdir: /tmp/elsewhere' > .git",
		"git config core.fsmonitor x",
	} {
		if res := f2.sh(t, "", script); res.ExitCode == 0 {
			t.Errorf("%s worked", script)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(store, "config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the git dir's config was written:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(store, "hooks/pre-commit")); err == nil {
		t.Error("a hook was planted in the git dir")
	}
}
