// Command testreport runs go test with -json and prints what a person
// needs: one line per package, the whole output of every failing test, and
// a last line naming every test that was skipped and why, so a test that
// needs a real peer cannot vanish from a run unnoticed. It exits with go
// test's own exit code. make test runs it.
//
// Usage: go run ./internal/cmd/testreport [go test flags] [packages]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// event is one line of go test -json (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "testreport:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "testreport:", err)
		return 2
	}
	r := newReport(stdout)
	if err := r.read(out); err != nil {
		fmt.Fprintln(stderr, "testreport: reading go test's output:", err)
	}
	werr := cmd.Wait()
	r.summary()
	var exit *exec.ExitError
	switch {
	case werr == nil:
		return 0
	case errors.As(werr, &exit):
		return exit.ExitCode()
	}
	fmt.Fprintln(stderr, "testreport:", werr)
	return 2
}

// report gathers the events of one run.
type report struct {
	w       io.Writer
	outputs map[string][]string // package/test → its output lines
	skipped []string
}

func newReport(w io.Writer) *report { return &report{w: w, outputs: map[string][]string{}} }

func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			// Not an event (a build failure prints plain text): show it.
			fmt.Fprintln(r.w, sc.Text())
			continue
		}
		r.add(ev)
	}
	return sc.Err()
}

func (r *report) add(ev event) {
	key := ev.Package + "\x00" + ev.Test
	switch ev.Action {
	case "output":
		if ev.Test == "" {
			// Package lines: "ok", "FAIL", "?", build errors, a panic.
			if line := strings.TrimRight(ev.Output, "\n"); !quiet(line) {
				fmt.Fprintln(r.w, line)
			}
			return
		}
		r.outputs[key] = append(r.outputs[key], ev.Output)
	case "skip":
		if ev.Test != "" {
			r.skipped = append(r.skipped, fmt.Sprintf("%s.%s (%s)", path.Base(ev.Package), ev.Test, reason(r.outputs[key])))
		}
		delete(r.outputs, key)
	case "fail":
		if ev.Test != "" {
			for _, l := range r.outputs[key] {
				fmt.Fprint(r.w, l)
			}
		}
		delete(r.outputs, key)
	case "pass":
		delete(r.outputs, key)
	}
}

// quiet is a package-level line a passing run need not show.
func quiet(line string) bool {
	return line == "PASS" || line == "" || strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, "testing: warning: no tests")
}

// reason is what a skipped test said last before it was skipped.
func reason(lines []string) string {
	why := "no reason given"
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		// "file_test.go:12: message" → "message"
		if _, msg, ok := strings.Cut(t, ": "); ok && strings.Contains(t[:strings.Index(t, ": ")], ".go:") {
			t = msg
		}
		why = t
	}
	return why
}

// summary prints the one line that names every skip.
func (r *report) summary() {
	if len(r.skipped) == 0 {
		fmt.Fprintln(r.w, "skipped: none")
		return
	}
	fmt.Fprintf(r.w, "skipped %d: %s\n", len(r.skipped), strings.Join(r.skipped, "; "))
}
