package load

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/benchgen"
	"github.com/chockhq/chock/internal/peakrss"
	"github.com/chockhq/chock/internal/rounds"
)

const loadChildEnv = "CHOCK_LOAD_CHILD"

// loadJobs are what a load child process can do with a file: load a
// policy from its chock.zon (decode, lint, compile once, prepare; what
// chock eval --config, run and mcp serve do), compile it into a bundle
// (chock compile), or load a policy from that bundle (eval --bundle).
// Each then decides one action.
var loadJobs = map[string]func(src []byte) (*Policy, error){
	"sources": func(src []byte) (*Policy, error) {
		p, _, err := FromSources(context.Background(), Input{Configs: []Source{{Name: "chock.zon", Data: src}}})
		return p, err
	},
	"compile": func(src []byte) (*Policy, error) {
		l, err := Read(Input{Configs: []Source{{Name: "chock.zon", Data: src}}})
		if err != nil {
			return nil, err
		}
		if ds := l.Lint(); ds.HasErrors() {
			return nil, ds
		}
		out, err := compile.Compile(compile.Input{Config: l.Configs[0]})
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		return nil, out.WriteBundle(&b, nil)
	},
	"bundle": func(src []byte) (*Policy, error) {
		return FromBundle(context.Background(), "bundle.tar.gz", src, compile.ReadOptions{})
	},
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLoadChild is the child process of BenchmarkLoad100000: it runs one
// job on one file and prints the CPU and wall time it took and its peak
// resident set size.
func TestLoadChild(t *testing.T) {
	job, path, ok := strings.Cut(os.Getenv(loadChildEnv), ":")
	if !ok {
		return // the child process of the load benchmark; not a skip
	}
	w0, c0 := time.Now(), cpuTime()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loadJobs[job](src)
	if err != nil {
		t.Fatal(err)
	}
	if p != nil {
		if _, err := p.Engine.Decide(context.Background(), "exec.path.tool8", config.Loop); err != nil {
			t.Fatal(err)
		}
	}
	fmt.Printf("load-cpu %d\nload-wall %d\n", cpuTime()-c0, time.Since(w0))
	if err := peakrss.Print(); err != nil {
		t.Fatal(err)
	}
}

// loadChild runs job on the file at path in a child process, with the
// garbage collector's defaults, and returns its CPU and wall seconds and
// its peak resident set size in bytes.
func loadChild(b *testing.B, job, path string) (cpu, wall float64, rss int64) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadChildEnv+"="+job+":"+path, "GOGC=100", "GOMEMLIMIT=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "load-cpu":
			cpu = time.Duration(n).Seconds()
		case "load-wall":
			wall = time.Duration(n).Seconds()
		case "peak-rss":
			rss = n
		}
	}
	if rss == 0 {
		b.Fatalf("the child printed no figures:\n%s", out)
	}
	return cpu, wall, rss
}

// BenchmarkLoad100000 loads a 100,000-rule policy from its chock.zon
// (decode, lint, one compile, every query prepared, one decision) in a
// fresh process, three times, and reports the medians of its CPU and wall
// time and peak resident set size; and the same for chock compile's work
// (decode, lint, compile, write the bundle) and for loading the policy
// from that bundle.
func BenchmarkLoad100000(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(dir, "chock.zon")
	policy := []byte(benchgen.Policy(100000))
	if err := os.WriteFile(src, policy, 0o644); err != nil {
		b.Fatal(err)
	}
	c, ds := config.Load("chock.zon", policy)
	if ds.HasErrors() {
		b.Fatal(ds)
	}
	out, err := compile.Compile(compile.Input{Config: c})
	if err != nil {
		b.Fatal(err)
	}
	var bb bytes.Buffer
	if err := out.WriteBundle(&bb, nil); err != nil {
		b.Fatal(err)
	}
	bundle := filepath.Join(dir, "bundle.tar.gz")
	if err := os.WriteFile(bundle, bb.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	out, c, policy = nil, nil, nil
	figures := map[string][3][]float64{}
	for b.Loop() {
		for range 3 {
			for _, job := range []string{"sources", "compile", "bundle"} {
				path := src
				if job == "bundle" {
					path = bundle
				}
				cpu, wall, rss := loadChild(b, job, path)
				f := figures[job]
				f[0], f[1], f[2] = append(f[0], cpu), append(f[1], wall), append(f[2], float64(rss)/(1<<30))
				figures[job] = f
			}
		}
	}
	for job, f := range figures {
		b.ReportMetric(rounds.Median(f[0]), job+"-cpu-s")
		b.ReportMetric(rounds.Median(f[1]), job+"-wall-s")
		b.ReportMetric(rounds.Median(f[2]), job+"-peak-GiB")
	}
}
