package lint

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/internal/peakrss"
)

// genPolicyFile makes a chock.zon of about size bytes the way a large
// project writes one: .allow and .deny lists of patterns, .rules structs
// with a reason, a comment every few rules, secrets and servers. It is
// lint-clean: every rule changes something (the denies narrow an ask, so
// that rule-redundant has nothing to say).
func genPolicyFile(size int) []byte {
	var b strings.Builder
	b.Grow(size + 1024)
	b.WriteString("// A generated policy.\n.{\n    .policy = .{\n        .default = .deny,\n        .ask = .{ \"net.fetch.*\", \"mcp.*.tool.*\" },\n        .allow = .{\n")
	b.WriteString("            \"secret.use.GITHUB_TOKEN\",\n            \"mcp.notion.host.com.notion.*\",\n            \"mcp.notion.tool.search\",\n            \"mcp.time.tool.*\",\n")
	for i := 0; b.Len() < size/4; i++ {
		fmt.Fprintf(&b, "            \"exec.path.tool%d\",\n", i)
	}
	b.WriteString("        },\n        .deny = .{\n")
	for i := 0; b.Len() < size*7/20; i++ {
		fmt.Fprintf(&b, "            \"net.fetch.com.example%d.*\",\n", i)
	}
	b.WriteString("        },\n        .rules = .{\n")
	decisions := [...]string{"allow", "deny"}
	for i := 0; b.Len() < size-600; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&b, "            // team %d\n", i/10)
		}
		fmt.Fprintf(&b, "            .{ .action = \"mcp.server%d.tool.op%d\", .decision = .%s, .why = \"rule %d for the team's workflow\" },\n",
			i%50, i, decisions[i%2], i)
	}
	b.WriteString(`        },
    },
    .secrets = .{
        .{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" },
    },
    .mcp_servers = .{
        .{ .name = "notion", .url = "https://mcp.notion.com/mcp" },
        .{ .name = "time", .command = .{"mcp-server-time"} },
    },
}
`)
	return []byte(b.String())
}

// lintLikeCLI does what `chock lint FILE` does before it prints: read the
// file (cmd/chock readInput), load it (load), lint it, drop repeats and
// sort (lintAll).
func lintLikeCLI(path string) (diag.List, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, 256<<20+1))
	if err != nil {
		return nil, err
	}
	sources := map[string][]byte{path: src}
	c, all := config.Load(path, src)
	if c != nil {
		all = append(all, Run(Input{Config: c})...)
	}
	seen := map[string]bool{}
	out := all[:0:0]
	for _, d := range all {
		k := fmt.Sprintf("%s|%d|%s|%s", d.Span.File, d.Span.Start.Offset, d.Code, d.Message)
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	out.Sort()
	runtime.KeepAlive(sources)
	return out, nil
}

const memoryFileEnv = "CHOCK_LINT_MEMORY_FILE"

// TestLintMemoryChild is the child process of lintPeakRSS: it lints one
// file and prints its peak resident set size.
func TestLintMemoryChild(t *testing.T) {
	path := os.Getenv(memoryFileEnv)
	if path == "" {
		return // the child process of TestLintMemory; not a skip
	}
	if _, err := lintLikeCLI(path); err != nil {
		t.Fatal(err)
	}
	if err := peakrss.Print(); err != nil {
		t.Fatal(err)
	}
}

// lintPeakRSS lints the file in a child process, with the garbage
// collector's defaults, and returns the child's peak resident set size in
// bytes. Linux only.
func lintPeakRSS(tb testing.TB, path string) int64 {
	tb.Helper()
	return peakrss.Child(tb, "TestLintMemoryChild", memoryFileEnv+"="+path)
}

// writePolicy writes a generated policy of about size bytes to a file.
func writePolicy(tb testing.TB, size int) (string, int) {
	tb.Helper()
	src := genPolicyFile(size)
	path := filepath.Join(tb.TempDir(), "chock-"+strconv.Itoa(size>>20)+"MB.zon")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path, len(src)
}

// TestLintMemory: reading, decoding and linting a 10 MB policy as chock
// lint does peaks at no more than 20 times the input's size.
func TestLintMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the peak RSS comes from Linux's /proc")
	}
	path, size := writePolicy(t, 10<<20)
	if ds, err := lintLikeCLI(path); err != nil || len(ds) > 0 {
		t.Fatalf("the generated policy is not lint-clean: %v %v", err, ds)
	}
	rss := lintPeakRSS(t, path)
	ratio := float64(rss) / float64(size)
	t.Logf("input %d bytes, peak RSS %d bytes: %.1fx", size, rss, ratio)
	if ratio > 20 {
		t.Errorf("peak RSS is %.1f times the input, want at most 20", ratio)
	}
}

// BenchmarkScaleLint lints generated policies of 1, 10 and 100 MB the way
// chock lint does, and reports the time per MB and the peak RSS of a child
// process doing it once, against the input's size.
func BenchmarkScaleLint(b *testing.B) {
	for _, size := range []int{1 << 20, 10 << 20, 100 << 20} {
		b.Run(strconv.Itoa(size>>20)+"MB", func(b *testing.B) {
			path, n := writePolicy(b, size)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			// One untimed run first, as in the zon scale benchmarks: a
			// single timed run at 100 MB would also fault in a fresh heap.
			if _, err := lintLikeCLI(path); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := lintLikeCLI(path); err != nil {
					b.Fatal(err)
				}
			}
			mb := float64(n) / (1 << 20)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N)/mb, "ms/MB")
			if runtime.GOOS == "linux" {
				b.ReportMetric(float64(lintPeakRSS(b, path))/float64(n), "peak-RSS/input")
			}
		})
	}
}
