// Package peakrss reads a process's peak resident set size, for the
// memory figures of chock's scale tests and benchmarks.
package peakrss

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Self is this process's peak resident set size in bytes, from Linux's
// /proc/self/status (VmHWM). Unlike getrusage's ru_maxrss it counts this
// program only: a child's ru_maxrss starts at its parent's peak, which
// exec keeps.
func Self() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// Print writes this process's peak, as the last thing a child test does,
// in the line Child reads.
func Print() error {
	hwm, err := Self()
	if err != nil {
		return err
	}
	fmt.Printf("peak-rss %d\n", hwm)
	return nil
}

// Child runs the test binary's test named test in a child process, with
// env added and the garbage collector's defaults, and returns the peak the
// child printed (Print).
func Child(tb testing.TB, test string, env ...string) int64 {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), "GOGC=100", "GOMEMLIMIT=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "peak-rss "); ok {
			if rss, err := strconv.ParseInt(v, 10, 64); err == nil {
				return rss
			}
		}
	}
	tb.Fatalf("child printed no peak RSS:\n%s", out)
	return 0
}
