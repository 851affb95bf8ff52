package runtime

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/waitfor"
	"github.com/chockhq/chock/runtime/credstore"
	"github.com/chockhq/chock/runtime/sessionlog"
)

// The attacks of issue 24, each run for real in a real session, with the
// sandbox and with --no-sandbox: without it each attack works, which shows
// the test is the sandbox's.

// sandboxModes are the two ways each attack is run: in the sandbox (the
// attack must fail) and with --no-sandbox (it must work).
var sandboxModes = []struct {
	name      string
	noSandbox bool
}{{"sandbox", false}, {"no-sandbox", true}}

// TestRelativePathSeesTheSandbox (issue 24, item 1): started in a
// $HOME-like folder that holds the hidden file store, a call that names
// no dir cannot read the store by a relative path, and relative writes in
// the working directory work.
func TestRelativePathSeesTheSandbox(t *testing.T) {
	for _, m := range sandboxModes {
		t.Run(m.name, func(t *testing.T) {
			home := t.TempDir()
			cfg := filepath.Join(home, ".config", "chock")
			store, err := credstore.Open(config.StoreFile, credstore.Options{ConfigDir: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if err := store.Set(context.Background(), "GITHUB_TOKEN", values["GITHUB_TOKEN"]); err != nil {
				t.Fatal(err)
			}
			t.Chdir(home)
			f := newFixtureWith(t, attackPolicy, nil, nil, func(o *Options) {
				o.Store = store
				o.NoSandbox = m.noSandbox
				o.BaseEnv = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
			})
			run := func(dir string, argv ...string) *Result {
				t.Helper()
				res, err := f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{Argv: argv, Dir: dir}})
				if err != nil {
					t.Fatalf("%v: %v", argv, err)
				}
				return res
			}
			res := run("", "python3", "-c", "print(open('.config/chock/credentials.json').read().encode().hex())")
			read := strings.Contains(res.Stdout, hex.EncodeToString([]byte(values["GITHUB_TOKEN"])))
			if read != m.noSandbox {
				t.Fatalf("the store read by a relative path: read=%v, want %v (exit %d, stderr %q)", read, m.noSandbox, res.ExitCode, res.Stderr)
			}
			abs := run("", "python3", "-c", "print(open('"+filepath.Join(cfg, "credentials.json")+"').read().encode().hex())")
			if read := strings.Contains(abs.Stdout, hex.EncodeToString([]byte(values["GITHUB_TOKEN"]))); read != m.noSandbox {
				t.Fatalf("the store read by its absolute path: read=%v (exit %d, stderr %q)", read, abs.ExitCode, abs.Stderr)
			}
			// Relative writes in the working directory, named by no dir and
			// by a relative dir.
			if res := run("", "git", "init", "-q", "newrepo"); res.ExitCode != 0 {
				t.Fatalf("git init newrepo: %+v", res)
			}
			if st, err := os.Stat(filepath.Join(home, "newrepo", ".git")); err != nil || !st.IsDir() {
				t.Fatalf("git init newrepo made no repository: %v", err)
			}
			if res := run("newrepo", "git", "init", "-q", "inner"); res.ExitCode != 0 {
				t.Fatalf("git init inner in dir newrepo: %+v", res)
			}
			if _, err := os.Stat(filepath.Join(home, "newrepo", "inner", ".git")); err != nil {
				t.Fatalf("git init in a relative dir: %v", err)
			}
		})
	}
}

// TestStoreMadeDuringTheSessionIsHidden (issue 24, item 5): on a fresh
// state and config directory the session log's folder is hidden from the
// first call, and a store written during the session (`chock login` in
// another terminal) is hidden from the next call.
func TestStoreMadeDuringTheSessionIsHidden(t *testing.T) {
	for _, m := range sandboxModes {
		t.Run(m.name, func(t *testing.T) {
			fresh := t.TempDir()
			cfg, state := filepath.Join(fresh, "config", "chock"), filepath.Join(fresh, "state")
			t.Setenv("CHOCK_CONFIG_DIR", cfg)
			t.Setenv("CHOCK_STATE_DIR", state)
			store, err := credstore.Open(config.StoreFile, credstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			f := newFixtureWith(t, attackPolicy, nil, nil, func(o *Options) {
				o.Store = store
				o.LogDir = ""
				o.NoSandbox = m.noSandbox
			})
			for _, d := range []string{cfg, filepath.Join(state, "sessions")} {
				if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
					t.Errorf("%s at session start: %v", d, err)
				}
			}
			run := func(argv ...string) *Result {
				t.Helper()
				res, err := f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{Argv: argv}})
				if err != nil {
					t.Fatalf("%v: %v", argv, err)
				}
				return res
			}
			// The first call, and the log the session is writing.
			res := run("cat", f.s.LogPath())
			if read := strings.Contains(res.Stdout, "session.start"); read != m.noSandbox {
				t.Errorf("the first call read the session log: %v, want %v (exit %d, stderr %q)", read, m.noSandbox, res.ExitCode, res.Stderr)
			}
			// chock login, from outside, during the session.
			if err := store.Set(context.Background(), "GITHUB_TOKEN", values["GITHUB_TOKEN"]); err != nil {
				t.Fatal(err)
			}
			res = run("python3", "-c", "print(open('"+filepath.Join(cfg, "credentials.json")+"').read().encode().hex())")
			if read := strings.Contains(res.Stdout, hex.EncodeToString([]byte(values["GITHUB_TOKEN"]))); read != m.noSandbox {
				t.Fatalf("the next call read the store written during the session: %v, want %v (exit %d, stderr %q)", read, m.noSandbox, res.ExitCode, res.Stderr)
			}
		})
	}
}

// TestPersonsSocketsInTmpAreUnreachable (issue 24, item 6): the person's
// ssh-agent listens in /tmp; a call that names its socket cannot list the
// agent's keys, and a socket in $XDG_RUNTIME_DIR or /run does not
// answer. The session's calls share a /tmp of their own (TMPDIR
// points into it), the working directory under /tmp stays theirs, and
// session.start says which Landlock scopes the kernel gave.
func TestPersonsSocketsInTmpAreUnreachable(t *testing.T) {
	for _, p := range []string{"/usr/bin/ssh-agent", "/usr/bin/ssh-add", "/usr/bin/ssh-keygen"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is needed (.ci/run installs openssh-client): %v", p, err)
		}
	}
	// The person's agent, holding a key, as ssh-agent puts it: /tmp/ssh-XXXX/agent.N.
	dir, err := os.MkdirTemp("/tmp", "ssh-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.1")
	agent := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait() })
	if ok, err := waitfor.File(sock, 10*time.Second); !ok || err != nil {
		t.Fatalf("ssh-agent made no socket: %v", err)
	}
	key := filepath.Join(dir, "id")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "persons-key", "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v %s", err, out)
	}
	add := exec.Command("ssh-add", key)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("ssh-add: %v %s", err, out)
	}
	policy := strings.Replace(attackPolicy, `"exec.path.sh",`, `"exec.path.sh", "exec.path.ssh-add",`, 1)
	for _, m := range sandboxModes {
		t.Run(m.name, func(t *testing.T) {
			a := newAttack(t)
			// The person's runtime folder, with a socket listening in it.
			xdg := filepath.Join(a.work, "run-user")
			if err := os.Mkdir(xdg, 0o700); err != nil {
				t.Fatal(err)
			}
			listen(t, filepath.Join(xdg, "bus"))
			// A daemon's socket in /run (sessions and CI run as root, who may make one).
			runSock := fmt.Sprintf("/run/chock-test-%d.sock", os.Getpid())
			listen(t, runSock)
			t.Setenv("XDG_RUNTIME_DIR", xdg)
			f := newFixtureWith(t, policy, values, nil, func(o *Options) {
				o.NoSandbox = m.noSandbox
				o.BaseEnv = []string{"PATH=/usr/bin:/bin", "HOME=" + a.work}
			})
			run := func(argv ...string) *Result {
				t.Helper()
				res, err := f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{Argv: argv, Dir: a.work}})
				if err != nil {
					t.Fatalf("%v: %v", argv, err)
				}
				return res
			}
			res := run("env", "SSH_AUTH_SOCK="+sock, "ssh-add", "-l")
			if listed := strings.Contains(res.Stdout, "persons-key"); listed != m.noSandbox {
				t.Fatalf("ssh-add -l reached the person's agent: %v, want %v (exit %d, %q %q)", listed, m.noSandbox, res.ExitCode, res.Stdout, res.Stderr)
			}
			res = run("python3", "-c", "import socket; s = socket.socket(socket.AF_UNIX); s.connect('"+filepath.Join(xdg, "bus")+"'); print(s.recv(64).decode())")
			if answered := strings.Contains(res.Stdout, "answered"); answered != m.noSandbox {
				t.Fatalf("a socket in $XDG_RUNTIME_DIR answered: %v, want %v (exit %d, %q)", answered, m.noSandbox, res.ExitCode, res.Stderr)
			}
			res = run("python3", "-c", "import socket; s = socket.socket(socket.AF_UNIX); s.connect('"+runSock+"'); print(s.recv(64).decode())")
			if answered := strings.Contains(res.Stdout, "answered"); answered != m.noSandbox {
				t.Fatalf("a socket in /run answered: %v, want %v (exit %d, %q)", answered, m.noSandbox, res.ExitCode, res.Stderr)
			}
			// The working directory under /tmp is the call's.
			if res := run("sh", "-c", "echo here > made && cat made"); res.ExitCode != 0 || res.Stdout != "here\n" {
				t.Fatalf("writing in the working directory: %+v", res)
			}
			if b, err := os.ReadFile(filepath.Join(a.work, "made")); err != nil || string(b) != "here\n" {
				t.Fatalf("the working directory's file outside: %q %v", b, err)
			}
			if m.noSandbox {
				return
			}
			// The session's /tmp: one call's file is the next call's, not the machine's.
			name := fmt.Sprintf("chock-private-check-%d", os.Getpid())
			if res := run("sh", "-c", `echo "$TMPDIR" && echo x > /tmp/`+name); res.ExitCode != 0 || res.Stdout != "/tmp\n" {
				t.Fatalf("TMPDIR and /tmp in a call: %+v", res)
			}
			if res := run("cat", "/tmp/"+name); res.ExitCode != 0 || res.Stdout != "x\n" {
				t.Fatalf("the next call's /tmp: %+v", res)
			}
			if _, err := os.Stat("/tmp/" + name); err == nil {
				os.Remove("/tmp/" + name)
				t.Fatal("a call's /tmp is the machine's")
			}
			evs, err := sessionlog.Read(f.logDir, f.s.ID)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := evs[0]["landlock_abi"]; !ok || evs[0]["scoped"] == nil {
				t.Fatalf("session.start says nothing of the kernel's scopes: %v", evs[0])
			}
		})
	}
}

// listen serves a unix socket at path that answers "answered" to every
// connection, until the test ends.
func listen(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listening at %s (the test needs to): %v", path, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("answered\n"))
			c.Close()
		}
	}()
}

// TestDeniedNameOfAnAllowedFile (issue 24, item 4): /usr/bin/sh is dash.
// With exec.path.sh denied and exec.path.* allowed, python3's os.system()
// cannot run /bin/sh (as exec.path.dash), and a top-level dash is refused
// naming sh's rule.
func TestDeniedNameOfAnAllowedFile(t *testing.T) {
	if real, err := filepath.EvalSymlinks("/usr/bin/sh"); err != nil || filepath.Base(real) != "dash" {
		t.Fatalf("the test needs /usr/bin/sh to be dash (Debian's): %v %v", real, err)
	}
	policy := `.{ .policy = .{ .allow = .{ "exec.path.*" }, .deny = .{ "exec.path.sh" } } }`
	for _, m := range sandboxModes {
		t.Run(m.name, func(t *testing.T) {
			work := t.TempDir()
			f := newFixtureWith(t, policy, nil, nil, func(o *Options) {
				o.NoSandbox = m.noSandbox
				o.Writable = []string{work}
			})
			marker := filepath.Join(work, "ran")
			res, err := f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{Argv: []string{"python3", "-c", "import os; os.system('echo ran > " + marker + "')"}, Dir: work}})
			if err != nil {
				t.Fatal(err)
			}
			_, statErr := os.Stat(marker)
			if ran := statErr == nil; ran != m.noSandbox {
				t.Fatalf("os.system ran /bin/sh: %v, want %v (%+v)", ran, m.noSandbox, res)
			}
			// The top-level dash is decided as sh too, with or without the sandbox.
			_, err = f.s.Run(context.Background(), &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"dash", "-c", "echo ran > " + marker + "2"}, Dir: work}})
			var r *RefusedError
			if !errors.As(err, &r) || !strings.Contains(r.Reason, "is also exec.path.sh, which is deny") {
				t.Fatalf("a top-level dash: %v", err)
			}
			if _, err := os.Stat(marker + "2"); err == nil {
				t.Fatal("the top-level dash ran")
			}
			if m.noSandbox {
				return
			}
			evs, err := sessionlog.Read(f.logDir, f.s.ID)
			if err != nil {
				t.Fatal(err)
			}
			logged := false
			for _, ev := range evs {
				if ev["kind"] == "exec.nested" && ev["action"] == "exec.path.sh" && ev["decision"] == "deny" && ev["outcome"] == "refused" {
					logged = true
				}
			}
			if !logged {
				t.Error("no exec.nested of /bin/sh refused as exec.path.sh")
			}
		})
	}
}

// TestHiddenSocketGoneDuringTheSession: a daemon's socket in /run hidden
// at session start goes away (the daemon stopped): the next call runs,
// with nothing there to cover. Every call was refused ("hiding
// /run/….sock: it is gone since the session started").
func TestHiddenSocketGoneDuringTheSession(t *testing.T) {
	sock := fmt.Sprintf("/run/chock-test-gone-%d.sock", os.Getpid())
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatalf("listening at %s (the test needs to): %v", sock, err)
	}
	f := newFixture(t, `.{ .policy = .{ .allow = .{ "exec.path.true" } } }`, nil, nil)
	if !slices.Contains(f.s.hidden, sock) {
		t.Fatalf("%s is not hidden: %v", sock, f.s.hidden)
	}
	ln.Close() // removes the socket
	if _, err := os.Lstat(sock); err == nil {
		os.Remove(sock)
	}
	if res, err := f.exec(t, 20*time.Second, "true"); err != nil || res.ExitCode != 0 {
		t.Fatalf("a call after the socket went: %+v %v", res, err)
	}
}
