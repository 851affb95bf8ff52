package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/waitfor"
)

// signalSession is a chock run started as a process of its own, with a
// file-bound secret in its first call, which runs until it is stopped.
type signalSession struct {
	t       *testing.T
	dir     string // the project, where the call writes what it did
	tmp     string // TMPDIR: where the secret file is
	state   string // CHOCK_STATE_DIR: the session log
	cmd     *exec.Cmd
	stdout  bytes.Buffer
	stderr  *bufio.Reader
	errText strings.Builder
	done    chan error
}

const signalSecret = "sig-secret-value-4242"

func startSignalSession(t *testing.T, call string, flags ...string) *signalSession {
	t.Helper()
	root := t.TempDir()
	ss := &signalSession{t: t, dir: filepath.Join(root, "p"), tmp: filepath.Join(root, "tmp"), state: filepath.Join(root, "state")}
	for _, d := range []string{ss.dir, ss.tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	conf := `.{
    .policy = .{ .allow = .{ "exec.path.sh", "exec.path.sleep", "exec.path.setsid", "secret.use.SIG_KEY" } },
    .programs = .{ .{ .name = "sh", .calls = .{ "exec.path.sleep", "exec.path.setsid" } } },
    .secrets = .{.{ .name = "SIG_KEY", .to = "exec.path.sh", .bind = "file", .as = "KEYFILE" }},
    .credentials = .{ .store = .env },
}
`
	os.WriteFile(filepath.Join(ss.dir, "chock.zon"), []byte(conf), 0o644)
	// The call's environment is chock's minimal one: the folder goes in
	// the command itself.
	argv, _ := json.Marshal([]string{"sh", "-c", strings.ReplaceAll(call, "$CALLDIR", ss.dir)})
	script := fmt.Sprintf("{\"tool\":\"exec\",\"argv\":%s}\n{\"tool\":\"exec\",\"argv\":[\"sh\",\"-c\",\"echo second call ran\"]}\n", argv)
	os.WriteFile(filepath.Join(ss.dir, "script.jsonl"), []byte(script), 0o644)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ss.cmd = exec.Command(exe, append([]string{"run", "--config", "chock.zon", "--ask", "deny", "--script", "script.jsonl"}, flags...)...)
	ss.cmd.Dir = ss.dir
	ss.cmd.Env = append(os.Environ(), asChockEnv+"=1", "TMPDIR="+ss.tmp, "CHOCK_STATE_DIR="+ss.state,
		"SIG_KEY="+signalSecret)
	ss.cmd.Stdout = &ss.stdout
	pr, err := ss.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	ss.stderr = bufio.NewReader(pr)
	if err := ss.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ss.done = make(chan error, 1)
	t.Cleanup(func() { ss.cmd.Process.Kill() })
	return ss
}

// waitFor waits for path to exist; the call writes it once it runs.
func (ss *signalSession) waitFor(path string) {
	ss.t.Helper()
	if ok, err := waitfor.File(path, 30*time.Second); !ok || err != nil {
		ss.t.Fatalf("%s never appeared: %v", path, err)
	}
}

// readStderrUntil reads stderr lines until one holds want.
func (ss *signalSession) readStderrUntil(want string) {
	ss.t.Helper()
	for {
		line, err := ss.stderr.ReadString('\n')
		ss.errText.WriteString(line)
		if strings.Contains(line, want) {
			return
		}
		if err != nil {
			ss.t.Fatalf("stderr ended without %q:\n%s", want, ss.errText.String())
		}
	}
}

// wait waits for chock to exit and returns its exit code.
func (ss *signalSession) wait() int {
	ss.t.Helper()
	rest, _ := io.ReadAll(ss.stderr)
	ss.errText.Write(rest)
	err := ss.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		ss.t.Fatal(err)
	}
	return ss.cmd.ProcessState.ExitCode()
}

// secretFiles are what of the call's file-bound secrets TMPDIR shows
// outside the call: in a sandbox, an empty directory its tmpfs covers.
func (ss *signalSession) secretFiles() []string {
	m, _ := filepath.Glob(filepath.Join(ss.tmp, "chock-secret-*"))
	return m
}

// withMarker are the pids of host processes whose command line holds
// marker (a call's pids are its own pid namespace's, so a call cannot
// tell them).
func withMarker(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if bytes.Contains(b, []byte(marker)) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// goneAll waits for each process carrying marker to exit, 2 s in all at
// most, and returns those still there.
func goneAll(marker string) []int {
	deadline := time.Now().Add(2 * time.Second)
	for _, pid := range withMarker(marker) {
		waitfor.Exit(pid, time.Until(deadline))
	}
	return withMarker(marker)
}

func (ss *signalSession) pid(name string) int {
	ss.t.Helper()
	b, err := os.ReadFile(filepath.Join(ss.dir, name))
	if err != nil {
		ss.t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		ss.t.Fatal(err)
	}
	return n
}

// alive says whether pid runs (a zombie waiting to be reaped is dead).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z"
}

// sessionOf is pid's session id (0 when it cannot be read).
func sessionOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 4 {
		return 0
	}
	sid, _ := strconv.Atoi(f[3]) // state ppid pgrp session
	return sid
}

// gone waits for pid to be dead, 2 s at most.
func gone(pid int) bool {
	ok, err := waitfor.Exit(pid, 2*time.Second)
	return ok && err == nil
}

func (ss *signalSession) events() []map[string]any {
	ss.t.Helper()
	files, _ := filepath.Glob(filepath.Join(ss.state, "sessions", "*.jsonl"))
	if len(files) == 0 {
		files, _ = filepath.Glob(filepath.Join(ss.state, "*", "*.jsonl"))
	}
	if len(files) != 1 {
		ss.t.Fatalf("session logs: %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		ss.t.Fatal(err)
	}
	if bytes.Contains(b, []byte(signalSecret)) {
		ss.t.Error("the secret's value is in the session log")
	}
	var evs []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var ev map[string]any
		if err := json.Unmarshal(l, &ev); err != nil {
			ss.t.Fatalf("log line %q: %v", l, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestFirstSignal stops a session in the middle of a call with a real
// signal: the call's processes are killed, the secret file deleted, the
// next call never runs, session.end says why, and chock exits 128+n.
func TestFirstSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(signalName(sig), func(t *testing.T) {
			marker := fmt.Sprintf("600.%d%d", os.Getpid(), sig)
			ss := startSignalSession(t, `sleep `+marker+` & test -s "$KEYFILE" && echo up > "$CALLDIR/started"; setsid sleep `+marker+` & wait`)
			ss.waitFor(filepath.Join(ss.dir, "started"))
			// The file is inside the call's sandbox only: outside, TMPDIR
			// holds the empty directory its tmpfs is mounted on.
			if f := ss.secretFiles(); len(f) != 1 {
				t.Fatalf("secret files while the call runs: %v, want its mount point", f)
			} else if ents, err := os.ReadDir(f[0]); err != nil || len(ents) != 0 {
				t.Fatalf("the secret's mount point holds %v outside the sandbox (%v)", ents, err)
			}
			ss.cmd.Process.Signal(sig)
			code := ss.wait()
			if want := 128 + int(sig); code != want {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, want, ss.errText.String())
			}
			if f := ss.secretFiles(); len(f) != 0 {
				t.Errorf("secret files left: %v", f)
			}
			if left := goneAll(marker); len(left) != 0 {
				for _, p := range left {
					syscall.Kill(p, syscall.SIGKILL)
				}
				t.Errorf("the call's children %v outlived the session", left)
			}
			if strings.Contains(ss.stdout.String(), "second call ran") {
				t.Error("the call after the signal ran")
			}
			evs := ss.events()
			last := evs[len(evs)-1]
			reason := "interrupted by " + signalName(sig)
			if last["kind"] != "session.end" || last["reason"] != reason {
				t.Errorf("last event %v, want session.end with reason %q", last, reason)
			}
			var result map[string]any
			for _, ev := range evs {
				if ev["kind"] == "tool.result" {
					result = ev
				}
				if ev["kind"] == "tool.call" && ev["call"] == "c2" {
					t.Error("the second call was logged as called")
				}
			}
			if result == nil || result["outcome"] != "error" || result["error"] != "the call was stopped: "+reason {
				t.Errorf("tool.result %v", result)
			}
		})
	}
}

// TestSecondSignal stops a session whose call cannot be stopped quickly
// (a process it started in a session of its own holds its output open):
// the second signal exits at once, killing the call and deleting its
// secret file, without waiting to write session.end.
func TestSecondSignal(t *testing.T) {
	// Without a sandbox (a setsid child cannot leave one's pid namespace).
	ss := startSignalSession(t, `setsid sleep 600 & echo $! > "$CALLDIR/escaped"; echo $$ > "$CALLDIR/sh"; echo up > "$CALLDIR/started"; sleep 600`, "--no-sandbox")
	ss.waitFor(filepath.Join(ss.dir, "started"))
	escaped, sh := ss.pid("escaped"), ss.pid("sh")
	t.Cleanup(func() { syscall.Kill(escaped, syscall.SIGKILL) })
	// Until it has called setsid the escaped process is still in the
	// call's process group, and the first signal would kill it too.
	// Nothing tells of another process calling setsid: its session is
	// read.
	waitfor.Poll(t, 6*time.Second, fmt.Sprintf("process %d leaving the call's session", escaped), func() bool { return sessionOf(escaped) == escaped })
	ss.cmd.Process.Signal(syscall.SIGINT)
	ss.readStderrUntil("a second signal exits at once")
	// The call's own process group is killed; chock now waits for the
	// output the escaped process holds open. That is when the second
	// signal comes.
	if !gone(sh) {
		t.Fatal("the first signal did not kill the call")
	}
	ss.cmd.Process.Signal(syscall.SIGTERM)
	code := ss.wait()
	if code != 130 {
		t.Errorf("exit code %d, want 130 (the first signal's)\nstderr:\n%s", code, ss.errText.String())
	}
	if !strings.Contains(ss.errText.String(), "SIGTERM again: calls killed, secret files deleted, exiting now") {
		t.Errorf("stderr:\n%s", ss.errText.String())
	}
	if f := ss.secretFiles(); len(f) != 0 {
		t.Errorf("secret files left: %v", f)
	}
	for _, ev := range ss.events() {
		if ev["kind"] == "session.end" {
			t.Errorf("session.end was written: the second signal did not exit at once")
		}
	}
}

// TestSignalStopsAnyCommand: a command with no session to stop (zon json
// blocked reading a FIFO) exits at the first signal, 128+n.
func TestSignalStopsAnyCommand(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "in.zon")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "zon", "json", fifo)
	cmd.Env = append(os.Environ(), asChockEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // returns once chock has it open
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 143 {
		t.Fatalf("exit code %d (%v), want 143", code, cmd.ProcessState)
	}
}

// TestClosedOutputPipe: chock run | head -n1. The reader goes away; the
// session stops as on a signal (the background command killed, session.end
// with the reason, no further call) and chock exits 141.
func TestClosedOutputPipe(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	conf := ".{ .policy = .{ .allow = .{ \"exec.path.sh\", \"exec.path.sleep\" } } }\n"
	os.WriteFile(filepath.Join(root, "chock.zon"), []byte(conf), 0o644)
	script := `{"tool":"exec","argv":["sleep","321"],"background":true}
{"tool":"exec","argv":["sh","-c","sleep 2; echo second"]}
{"tool":"exec","argv":["sh","-c","echo third call ran > ` + root + `/third"]}
`
	os.WriteFile(filepath.Join(root, "s.jsonl"), []byte(script), 0o644)
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "run", "--ask", "deny", "--script", "s.jsonl")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), asChockEnv+"=1", "CHOCK_STATE_DIR="+state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "[1] exec sleep 321") {
		t.Fatalf("first line %q, %v", line, err)
	}
	out.Close() // head -n1 is done
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 141 {
		t.Fatalf("exit code %d (%v), want 141", code, cmd.ProcessState)
	}
	if _, err := os.Stat(filepath.Join(root, "third")); err == nil {
		t.Error("the call after the closed pipe ran")
	}
	ss := &signalSession{t: t, state: state}
	evs := ss.events()
	last := evs[len(evs)-1]
	if last["kind"] != "session.end" || last["reason"] != "interrupted by a closed output pipe (SIGPIPE)" {
		t.Errorf("last event %v", last)
	}
	for _, ev := range evs {
		if ev["kind"] == "tool.result" && ev["background"] == true {
			if pid, ok := ev["pid"].(float64); ok && !gone(int(pid)) {
				t.Errorf("the background command %v outlived the session", pid)
			}
		}
	}
	// The kill is not waited for by chock's exit, and a background call's
	// tool.result names no pid: sleep 321 is found by its command line,
	// and each one found is given the 2 s gone gives to die.
	b, _ := exec.Command("pgrep", "-f", "sleep 321").Output()
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil && !gone(pid) {
			t.Errorf("sleep 321 still runs: %d", pid)
		}
	}
}
