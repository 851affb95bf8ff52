package runtime

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/runtime/credstore"
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
