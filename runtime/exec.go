package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/chockhq/chock/runtime/redact"
	"github.com/chockhq/chock/runtime/telemetry"
)

// ExecRequest is a call of the exec tool.
type ExecRequest struct {
	Argv       []string `json:"argv" jsonschema:"the program and its arguments"`
	Dir        string   `json:"dir,omitempty" jsonschema:"the working directory (default: where chock runs)"`
	Stdin      string   `json:"stdin,omitempty" jsonschema:"text given on standard input"`
	Background bool     `json:"background,omitempty" jsonschema:"start it and answer at once with its pid; a background program is given no secrets"`
}

// pipeGrace is how long a call's output is still read after its program
// exits (or is killed), for what a process it left behind holds open.
const pipeGrace = 2 * time.Second

// MaxOutput bounds what one call's stdout or stderr keeps.
const MaxOutput = 1 << 20

// boundedBuffer keeps the first MaxOutput bytes and counts the rest.
type boundedBuffer struct {
	buf     bytes.Buffer
	dropped int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	room := MaxOutput - b.buf.Len()
	if room <= 0 {
		b.dropped += len(p)
		return len(p), nil
	}
	if len(p) > room {
		b.buf.Write(p[:room])
		b.dropped += len(p) - room
		return len(p), nil
	}
	return b.buf.Write(p)
}

// killGroup kills a call's process: its process group (a call run with
// --no-sandbox) and the process itself, which in a sandbox is pid 1 of
// the call's pid namespace, so everything it started goes with it.
func killGroup(pid int) {
	if pid > 0 {
		syscall.Kill(-pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// runExec runs the program with the call's environment: the base one plus
// the secrets granted, in a sandbox of its own unless the session was
// started with --no-sandbox. Its output streams through the redactor.
func (s *Session) runExec(ctx context.Context, c *Call) (*Result, error) {
	r := c.Exec
	env := append(append([]string(nil), s.opts.BaseEnv...), c.env...)
	if tp := telemetry.TraceParent(ctx); tp != "" {
		// The convention some tools read to continue the call's trace.
		env = append(env, "TRACEPARENT="+tp)
	}
	var stdout, stderr boundedBuffer
	var ow, ew *redact.Writer
	cmd, err := s.started(ctx, c, env, func(cmd *exec.Cmd) {
		if r.Background {
			return // given nothing, waited for by nobody; stopped when the session ends
		}
		if r.Stdin != "" {
			cmd.Stdin = strings.NewReader(r.Stdin)
		}
		ow, ew = redact.NewWriter(&stdout, s.redact), redact.NewWriter(&stderr, s.redact)
		cmd.Stdout, cmd.Stderr = ow, ew
		cmd.WaitDelay = pipeGrace
	})
	if err != nil {
		s.release(c.filePlan)
		var refused *RefusedError
		switch {
		case errors.As(err, &refused) || cmd == nil:
			return nil, err
		case r.Dir != "":
			return nil, fmt.Errorf("starting %s in %s: %w", r.Argv[0], r.Dir, err)
		}
		return nil, fmt.Errorf("starting %s: %w", r.Argv[0], err)
	}
	if r.Background {
		s.mu.Lock()
		s.background = append(s.background, cmd.Process)
		s.mu.Unlock()
		go func() {
			cmd.Wait()
			s.release(c.filePlan)
		}()
		return &Result{Background: true, PID: cmd.Process.Pid}, nil
	}
	defer s.release(c.filePlan)
	defer c.net.close()
	s.track(cmd.Process.Pid)
	defer s.untrack(cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var runErr error
	timedOut, stopped := false, false
	select {
	case runErr = <-done:
	case <-ctx.Done():
		killGroup(cmd.Process.Pid)
		timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
		stopped = !timedOut
		runErr = <-done // the program is killed; WaitDelay bounds its pipes
	}
	// The process group goes too: children must not outlive the call.
	killGroup(cmd.Process.Pid)
	ow.Close()
	ew.Close()
	// Every connection of the call is over and logged before its result.
	c.net.close()
	res := &Result{Stdout: stdout.buf.String(), Stderr: stderr.buf.String(), TimedOut: timedOut,
		Truncated: stdout.dropped > 0 || stderr.dropped > 0, Network: c.net.lines()}
	if stopped {
		// Cancelled, not timed out: the session is stopping (a signal).
		return nil, fmt.Errorf("the call was stopped: %w", context.Cause(ctx))
	}
	var exitErr *exec.ExitError
	switch {
	case timedOut:
		res.ExitCode = -1
	case runErr == nil, errors.Is(runErr, exec.ErrWaitDelay):
		// ErrWaitDelay: the program exited, and something it left behind
		// held its output open; what came before is the result.
		res.ExitCode = cmd.ProcessState.ExitCode()
	case errors.As(runErr, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	default:
		return nil, runErr
	}
	s.fileRefusals(c, res)
	return res, nil
}
