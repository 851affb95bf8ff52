package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// BenchmarkRunOneCall is #31's session start: the real chock binary (with
// chock-sandbox beside it, as installed) running chock run of a one-call
// script (exec true, sandboxed) under a one-rule policy, with this
// machine's PATH, as a whole process: the policy's compile, the PATH's
// scan and every program name's decision, the file plan, the call. It
// reports the median wall time of a run.
func BenchmarkRunOneCall(b *testing.B) {
	dir := b.TempDir()
	for _, p := range []string{"chock", "chock-sandbox"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, p), "github.com/chockhq/chock/cmd/"+p).CombinedOutput(); err != nil {
			b.Fatalf("building %s: %v\n%s", p, err, out)
		}
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		b.Fatal(err)
	}
	files := map[string]string{
		"chock.zon":    `.{ .policy = .{ .allow = .{"exec.path.true"} } }` + "\n",
		"script.jsonl": `{"tool":"exec","argv":["true"]}` + "\n",
	}
	for n, s := range files {
		if err := os.WriteFile(filepath.Join(work, n), []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	env := append(os.Environ(), "CHOCK_STATE_DIR="+filepath.Join(dir, "state"))
	run := func() time.Duration {
		cmd := exec.Command(filepath.Join(dir, "chock"), "run", "--script", "script.jsonl")
		cmd.Dir, cmd.Env = work, env
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(t0)
		if err != nil || !strings.Contains(string(out), "exit 0") {
			b.Fatalf("chock run: %v\n%s", err, out)
		}
		return took
	}
	run() // warm the page cache
	var ts []time.Duration
	b.ResetTimer()
	for b.Loop() {
		ts = append(ts, run())
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	b.ReportMetric(float64(ts[len(ts)/2].Microseconds())/1000, "median-ms/run")
	b.ReportMetric(float64(len(strings.Split(os.Getenv("PATH"), ":"))), "path-folders")
}
