package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: its controlling side and the terminal
// a process is given.
func openPTY(t *testing.T) (control, term *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(control.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(control.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { control.Close(); term.Close() })
	return control, term
}

// TestMCPServeWideningAcceptedAtTerminal: with --ask prompt, a widening
// edit is put to the person at chock's terminal (a real pty, never the
// agent's channel), and a yes swaps it in.
func TestMCPServeWideningAcceptedAtTerminal(t *testing.T) {
	control, term := openPTY(t)
	g := startGatewayWith(t, `.{ .policy = .{ .allow = .{ "exec.path.echo" } } }`, true, func(c *exec.Cmd) {
		c.Stdin, c.Stdout = term, term
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	}, "--ask", "prompt")
	term.Close()
	cs := g.connect("2025-11-25", nil)
	defer cs.Close()
	if text, isErr := call(t, cs, "exec", argv("ls")); !isErr {
		t.Fatalf("ls before the edit = %q", text)
	}
	g.write(`.{ .policy = .{ .allow = .{ "exec.path.echo", "exec.path.ls" } } }`)
	// The question, on the terminal; the answer, typed there.
	seen := make(chan string, 1)
	go func() {
		r := bufio.NewReader(control)
		var b strings.Builder
		for {
			c, err := r.ReadByte()
			if err != nil {
				seen <- b.String()
				return
			}
			b.WriteByte(c)
			if strings.HasSuffix(b.String(), "Swap the edited policy in? [y/N] ") {
				seen <- b.String()
				return
			}
		}
	}()
	text := <-seen
	if !strings.Contains(text, "exec.path.ls") || !strings.Contains(text, "widens what the agent may do") {
		t.Fatalf("the terminal was asked:\n%s", text)
	}
	if _, err := control.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(g.allStderr(), "swapped in from chock.zon") }, g.allStderr)
	if text, isErr := call(t, cs, "exec", argv("ls")); isErr {
		t.Errorf("ls after the accepted edit = %q", text)
	}
}

// TestCompileRevisionIsTheContents: chock compile names the same revision
// for chock.zon, its absolute path, dir/chock.zon, and a copy elsewhere.
func TestCompileRevisionIsTheContents(t *testing.T) {
	root := t.TempDir()
	policy := `.{ .policy = .{ .allow = .{ "exec.path.gh" } } }`
	for _, d := range []string{"p", "copy/p"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
		os.WriteFile(filepath.Join(root, d, "chock.zon"), []byte(policy), 0o644)
	}
	rev := regexp.MustCompile(`revision ([0-9a-f]{16})`)
	compileRev := func(config string) string {
		t.Helper()
		var stderr strings.Builder
		out := filepath.Join(t.TempDir(), "b.tar.gz")
		if code := run(context.Background(), []string{"compile", "-o", out, config}, stdio{in: strings.NewReader(""), out: io.Discard, err: &stderr}); code != 0 {
			t.Fatalf("compile %s: %d %s", config, code, stderr.String())
		}
		m := rev.FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("no revision in %q", stderr.String())
		}
		return m[1]
	}
	t.Chdir(filepath.Join(root, "p"))
	want := compileRev("chock.zon")
	for _, c := range []string{filepath.Join(root, "p", "chock.zon"), "../p/chock.zon", filepath.Join(root, "copy/p/chock.zon")} {
		if got := compileRev(c); got != want {
			t.Errorf("%s: revision %s, want %s", c, got, want)
		}
	}
}

// TestConnectedServerStarts: the .mcp.json chock connect writes names the
// policy relative to the project, and the server it names starts, as a
// client starts it, with the project as its working directory.
func TestConnectedServerStarts(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "chock.zon"), []byte(`.{ .policy = .{ .allow = .{ "exec.path.echo" } } }`), 0o644)
	t.Chdir(dir)
	t.Setenv("CHOCK_STATE_DIR", filepath.Join(dir, "state"))
	var stderr strings.Builder
	if code := run(context.Background(), []string{"connect", "claude-code"}, stdio{in: strings.NewReader(""), out: io.Discard, err: &stderr}); code != 0 {
		t.Fatalf("connect: %d %s", code, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, ".mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		MCPServers map[string]struct{ Args []string } `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	args := f.MCPServers["chock"].Args
	if !slices.Equal(args, []string{"mcp", "serve", "--config", "chock.zon"}) || strings.Contains(string(raw), dir) {
		t.Fatalf(".mcp.json names a machine's path or other arguments: %s", raw)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asChockEnv+"=1")
	c := mcp.NewClient(&mcp.Implementation{Name: "connect-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if text, isErr := call(t, cs, "exec", argv("echo", "started")); isErr || !strings.Contains(text, "started") {
		t.Errorf("exec echo through the connected server = %q (error %v)", text, isErr)
	}
}
