package main

import (
	"context"
	"fmt"
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
	}
	return s.String()
}

// exitCodeFor is the shell's exit code for a process stopped by s: 128+n
// (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
func exitCodeFor(s syscall.Signal) int { return 128 + int(s) }

// aborts are what must happen before chock exits at once: a session's
// Abort. A command registers them; nil is a valid, empty list.
type aborts struct {
	mu  sync.Mutex
	fns []func()
}

func (a *aborts) add(f func()) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.fns = append(a.fns, f)
	a.mu.Unlock()
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

// runWithSignals runs a command as the chock process does: under the stop
// signals. It returns the exit code: the command's own, or 128+n when a
// signal stopped it.
func runWithSignals(args []string, io stdio) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	io.aborts = &aborts{}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopSignals...)
	defer signal.Stop(sigs)
	var first atomic.Int32
	go func() {
		s, ok := (<-sigs).(syscall.Signal)
		if !ok {
			return
		}
		first.Store(int32(s))
		fmt.Fprintf(io.err, "chock: %s: stopping; a second signal exits at once\n", signalName(s))
		cancel(signalError{s})
		s2, ok := (<-sigs).(syscall.Signal)
		if !ok {
			return
		}
		io.aborts.run()
		fmt.Fprintf(io.err, "chock: %s again: calls killed, secret files deleted, exiting now\n", signalName(s2))
		os.Exit(exitCodeFor(s))
	}()
	code := run(ctx, args, io)
	if s := first.Load(); s != 0 {
		return exitCodeFor(syscall.Signal(s))
	}
	return code
}
