package waitfor

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

func TestSignalUntil(t *testing.T) {
	var s Signal
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
			s.Notify()
		}
	}()
	s.Until(t, 10*time.Second, "three notifies", func() bool { return n.Load() == 3 })
}

func TestSignalWithinTimesOut(t *testing.T) {
	var s Signal
	if s.Within(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds held")
	}
}

func TestPollWithin(t *testing.T) {
	start := time.Now()
	if !PollWithin(10*time.Second, func() bool { return time.Since(start) > 30*time.Millisecond }) {
		t.Fatal("the condition never held")
	}
	if PollWithin(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds held")
	}
}

func TestExit(t *testing.T) {
	c := exec.Command("sleep", "30")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Wait()
	if ok, err := Exit(c.Process.Pid, 20*time.Millisecond); ok || err != nil {
		t.Fatalf("a running process exited: %v %v", ok, err)
	}
	c.Process.Kill()
	if ok, err := Exit(c.Process.Pid, 10*time.Second); !ok || err != nil {
		t.Fatalf("a killed process did not exit: %v %v", ok, err)
	}
}

func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if ok, err := File(path, 20*time.Millisecond); ok || err != nil {
		t.Fatalf("a missing file: %v %v", ok, err)
	}
	go os.WriteFile(path, []byte("x"), 0o600)
	if ok, err := File(path, 10*time.Second); !ok || err != nil {
		t.Fatalf("a written file: %v %v", ok, err)
	}
}
