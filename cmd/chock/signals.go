package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// stopSignals are the signals that stop chock: the first cancels the
// command's context, so a session kills its calls, deletes file-bound
// secrets and writes session.end with the reason; a second exits at once
// after the aborts (the same killing and deleting, without waiting).
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig syscall.Signal }

func (e signalError) Error() string { return "interrupted by " + signalName(e.sig) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGPIPE:
		return "a closed output pipe (SIGPIPE)"
	}
	return s.String()
}

// exitCodeFor is the shell's exit code for a process stopped by s: 128+n
// (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
func exitCodeFor(s syscall.Signal) int { return 128 + int(s) }

// aborts are what must happen before chock exits at once: a session's
// Abort. A command that can stop gracefully (a session) registers one; a
// command that has none is stopped by the first signal, once no write of
// its own is half done (critical). nil is a valid, empty list.
type aborts struct {
	mu  sync.Mutex
	fns []func()
	// exits run before any exit at once (a terminal's state restored).
	exits []func()
	// writing is held by a write that must not be cut short.
	writing sync.RWMutex
}

func (a *aborts) add(f func()) { a.push(func() { a.fns = append(a.fns, f) }) }

// atExit registers f to run before chock exits at once, whatever stops it.
func (a *aborts) atExit(f func()) { a.push(func() { a.exits = append(a.exits, f) }) }

// push runs add under the lock, on aborts that are there.
func (a *aborts) push(add func()) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	add()
}

// exit runs the exit functions and exits with code.
func (a *aborts) exit(code int) {
	a.mu.Lock()
	for _, f := range a.exits {
		f()
	}
	a.mu.Unlock()
	os.Exit(code)
}

// graceful says whether something registered a graceful stop.
func (a *aborts) graceful() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.fns) > 0
}

func (a *aborts) run() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range a.fns {
		f()
	}
}

// critical runs f, a write of the command's output, so that a signal
// exits only before or after it: never with a temporary file left.
func (a *aborts) critical(f func() error) error {
	if a == nil {
		return f()
	}
	a.writing.RLock()
	defer a.writing.RUnlock()
	return f()
}

// pipeWatch reports a write to a closed pipe (chock run | head): the
// reader is gone, and that stops chock as SIGPIPE would, gracefully.
type pipeWatch struct {
	w     io.Writer
	onErr func()
}

func (p pipeWatch) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.onErr()
	}
	return n, err
}

// stopper carries out the stop signals of one run.
type stopper struct {
	ab     *aborts
	cancel context.CancelCauseFunc
	errw   io.Writer
	first  atomic.Int32
}

// stop acts on signal sig: the first stops the command (a session
// gracefully, through its context; anything else at once), a second exits
// at once after the aborts. A closed output pipe (SIGPIPE) only ever
// stops, never counts as the second.
func (st *stopper) stop(sig syscall.Signal) {
	if !st.first.CompareAndSwap(0, int32(sig)) {
		if sig == syscall.SIGPIPE {
			return // more writes to the closed pipe while stopping
		}
		st.ab.run()
		fmt.Fprintf(st.errw, "chock: %s again: calls killed, secret files deleted, exiting now\n", signalName(sig))
		st.ab.exit(exitCodeFor(syscall.Signal(st.first.Load())))
	}
	if !st.ab.graceful() {
		st.ab.writing.Lock() // a write under way finishes first
		st.ab.exit(exitCodeFor(sig))
	}
	if sig != syscall.SIGPIPE {
		fmt.Fprintf(st.errw, "chock: %s: stopping; a second signal exits at once\n", signalName(sig))
	}
	st.cancel(signalError{sig})
}

// runWithSignals runs a command as the chock process does: under the stop
// signals. It returns the exit code: the command's own, or 128+n when a
// signal stopped it.
func runWithSignals(args []string, std stdio) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	st := &stopper{ab: &aborts{}, cancel: cancel, errw: std.err}
	std.aborts = st.ab
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, stopSignals...)
	// With SIGPIPE notified, a write to a closed pipe fails with EPIPE
	// instead of killing chock; a closed stdout or stderr then stops it
	// (pipeWatch), and any other pipe (an MCP server's) is its writer's
	// business.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	defer signal.Stop(pipes)
	go func() {
		for range pipes {
		}
	}()
	go func() {
		for s := range sigs {
			if sig, ok := s.(syscall.Signal); ok {
				st.stop(sig)
			}
		}
	}()
	closed := func() { st.stop(syscall.SIGPIPE) }
	std.out, std.err = pipeWatch{std.out, closed}, pipeWatch{std.err, closed}
	code := run(ctx, args, std)
	if s := st.first.Load(); s != 0 {
		return exitCodeFor(syscall.Signal(s))
	}
	return code
}
