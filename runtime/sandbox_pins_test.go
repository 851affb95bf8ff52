package runtime

import (
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/runtime/credstore"
)

// TestHiddenFolderMovedAndADecoyLeft (issue 24, item 2): with the store
// under a writable folder (a CI layout), one call moves the folder above
// the hidden one and leaves a symlink to a decoy where it was; the next
// call does not read the moved store: its hiding is held to the folder
// the session started with, and a path that now opens another is
// refused.
func TestHiddenFolderMovedAndADecoyLeft(t *testing.T) {
	for _, m := range sandboxModes {
		t.Run(m.name, func(t *testing.T) {
			work := t.TempDir()
			cfg := filepath.Join(work, "cfg", "chock")
			store, err := credstore.Open(config.StoreFile, credstore.Options{ConfigDir: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if err := store.Set(context.Background(), "GITHUB_TOKEN", values["GITHUB_TOKEN"]); err != nil {
				t.Fatal(err)
			}
			f := newFixtureWith(t, attackPolicy, nil, nil, func(o *Options) {
				o.Store = store
				o.NoSandbox = m.noSandbox
				o.Writable = []string{work}
			})
			run := func(argv ...string) (*Result, error) {
				return f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{Argv: argv, Dir: work}})
			}
			res, err := run("python3", "-c", "import os; os.rename('cfg', 'moved'); os.makedirs('decoy/chock'); os.symlink('decoy', 'cfg')")
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("the move: %+v %v", res, err)
			}
			res, err = run("python3", "-c", "print(open('moved/chock/credentials.json').read().encode().hex())")
			read := err == nil && strings.Contains(res.Stdout, hex.EncodeToString([]byte(values["GITHUB_TOKEN"])))
			if read != m.noSandbox {
				t.Fatalf("the moved store read: %v, want %v (%+v, %v)", read, m.noSandbox, res, err)
			}
			if !m.noSandbox && (err == nil || !strings.Contains(err.Error(), "not the file it was when the session started")) {
				t.Errorf("the call after the move was not refused for it: %+v %v", res, err)
			}
		})
	}
}

// TestPathSwapUnderAWritableFolder (issue 24, item 3): a PATH folder
// inside a writable one; a call moves the folder above it away and puts a
// copy of curl where an allowed program was. The top-level call of the
// name is refused, and so is a nested exec of the same path: execution is
// granted to the file the session found, never to what the path names
// now; the session log says what the kernel did.
func TestPathSwapUnderAWritableFolder(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range sandboxModes {
		t.Run(m.name, func(t *testing.T) {
			work := t.TempDir()
			bin := filepath.Join(work, "a", "bin")
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			body, _ := os.ReadFile("/bin/true")
			if err := os.WriteFile(filepath.Join(bin, "tool"), body, 0o755); err != nil {
				t.Fatal(err)
			}
			policy := `.{ .policy = .{ .allow = .{ "exec.path.sh", "exec.path.mv", "exec.path.mkdir", "exec.path.cp", "exec.path.tool" }, .deny = .{ "exec.path.curl" } } }`
			f := newFixtureWith(t, policy, nil, nil, func(o *Options) {
				o.NoSandbox = m.noSandbox
				o.Writable = []string{work}
				o.BaseEnv = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=/nonexistent"}
			})
			run := func(argv ...string) (*Result, error) {
				return f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{Argv: argv, Dir: work}})
			}
			res, err := run("sh", "-c", "mv a a.old && mkdir -p a/bin && cp "+curl+" a/bin/tool")
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("the swap: %+v %v", res, err)
			}
			if _, err := run("tool", "--version"); err == nil && !m.noSandbox {
				t.Error("the swapped program ran as a top-level call")
			}
			res, err = run("sh", "-c", bin+"/tool --version")
			ran := err == nil && strings.Contains(res.Stdout, "libcurl")
			if ran != m.noSandbox {
				t.Fatalf("curl, swapped in, ran as a nested exec: %v, want %v (%+v, %v)", ran, m.noSandbox, res, err)
			}
		})
	}
}

// TestInitRightInTmp: a sandbox init (or chock) whose file is right in
// /tmp, a CI that builds there: its folder is the call's private /tmp, so
// the file itself is what stays read-only, and calls run. Every call was
// refused ("mounting /tmp read-only: it is not the file it was").
func TestInitRightInTmp(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp("/tmp", "chock-init-test-")
	if err != nil {
		t.Fatal(err)
	}
	init := f.Name()
	t.Cleanup(func() { os.Remove(init) })
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	f.Chmod(0o755)
	f.Close()
	fx := newFixtureWith(t, `.{ .policy = .{ .allow = .{ "exec.path.sh" } } }`, nil, nil, func(o *Options) { o.SandboxInit = init })
	res, err := fx.exec(t, 20*time.Second, "sh", "-c", "echo ran > /tmp/inside; read l < /tmp/inside; echo $l; echo x >> "+init+" || echo read-only")
	if err != nil || !strings.Contains(res.Stdout, "ran") || !strings.Contains(res.Stdout, "read-only") {
		t.Fatalf("a call with the init in /tmp: %+v %v", res, err)
	}
}
