// Package waitfor is how tests wait for something to happen rather than
// sleep for a while and hope it has: a Signal that whoever makes the
// thing happen notifies, a process's exit (Exit), a file's creation
// (File), and, only where nothing tells of it (another process's state),
// a condition polled until a deadline (Poll).
package waitfor

import (
	"sync"
	"testing"
	"time"
)

// Signal wakes whoever waits on it each time Notify is called. The zero
// Signal is ready to use.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// Notify wakes every waiter: something they may be waiting for happened.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// next is closed at the next Notify.
func (s *Signal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Until returns once cond holds, checking it at once and after each
// Notify; past timeout it fails t, saying what it waited for. Every
// change that can make cond true must be followed by a Notify.
func (s *Signal) Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !s.Within(timeout, cond) {
		t.Fatalf("after %s: %s", timeout, what)
	}
}

// Within is Until that says whether cond held within timeout instead of
// failing a test.
func (s *Signal) Within(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		next := s.next()
		if cond() {
			return true
		}
		select {
		case <-next:
		case <-deadline.C:
			return cond()
		}
	}
}

// pollEvery is how often Poll looks.
const pollEvery = 10 * time.Millisecond

// Poll returns once cond holds, looking every few milliseconds; past
// timeout it fails t, saying what it waited for. It is for a condition
// no event tells of, such as another process listening or a process
// group being empty: where something can be notified, use a Signal.
func Poll(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !PollWithin(timeout, cond) {
		t.Fatalf("after %s: %s", timeout, what)
	}
}

// PollWithin is Poll that says whether cond held within timeout instead
// of failing a test.
func PollWithin(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return cond()
		}
	}
	return true
}
