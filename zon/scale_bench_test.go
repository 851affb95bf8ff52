package zon

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chockhq/chock/internal/peakrss"
)

// scaleSizes are the input sizes the scale benchmarks run at.
var scaleSizes = []int{1 << 20, 10 << 20, 100 << 20}

func sizeName(size int) string { return fmt.Sprintf("%dMB", size>>20) }

// rulesDoc makes a policy of about size bytes whose rules list is on one
// line, or one rule a line.
func rulesDoc(size int, oneLine bool) []byte {
	var b strings.Builder
	b.Grow(size + 256)
	sep := "\n            "
	if oneLine {
		sep = " "
	}
	b.WriteString(".{ .policy = .{ .rules = .{" + sep)
	for i := 0; b.Len() < size-64; i++ {
		fmt.Fprintf(&b, `.{ .action = "exec.path.tool%d", .decision = .allow, .why = "rule %d" },`+"%s", i, i, sep)
	}
	b.WriteString("} } }\n")
	return []byte(b.String())
}

// brokenDoc is genChockZON with a missing comma in its last rule, so that
// the whole file is read before the error is found.
func brokenDoc(size int) []byte {
	src := genChockZON(size)
	at := bytes.LastIndex(src, []byte("        },\n    },\n    .secrets"))
	return append(src[:at:at], append([]byte("            .{ .action = \"x\" } .{},\n"), src[at:]...)...)
}

// scaleJobs are what a scale child process can run on a file.
var scaleJobs = map[string]func(src []byte) error{
	"parse": func(src []byte) error {
		_, err := Parse("scale.zon", src)
		return err
	},
	"error": func(src []byte) error {
		if _, err := Parse("scale.zon", src); err == nil {
			return fmt.Errorf("no error")
		}
		return nil
	},
	"fmt": func(src []byte) error {
		doc, err := ParseDocument("scale.zon", src)
		if err != nil {
			return err
		}
		Format(doc)
		return nil
	},
}

const scaleChildEnv = "ZON_SCALE_CHILD"

// TestScaleChild is the child process of peakRSS: it runs one job on one
// file and prints its peak resident set size.
func TestScaleChild(t *testing.T) {
	job, path, ok := strings.Cut(os.Getenv(scaleChildEnv), ":")
	if !ok {
		return // the child process of the scale benchmarks; not a skip
	}
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := scaleJobs[job](src); err != nil {
		t.Fatal(err)
	}
	if err := peakrss.Print(); err != nil {
		t.Fatal(err)
	}
}

// peakRSS runs job on src in a child process and returns the child's peak
// resident set size over the input's size, or 0 off Linux.
func peakRSS(b *testing.B, job string, src []byte) float64 {
	if runtime.GOOS != "linux" {
		return 0
	}
	path := filepath.Join(b.TempDir(), job+".zon")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		b.Fatal(err)
	}
	rss := peakrss.Child(b, "TestScaleChild", scaleChildEnv+"="+job+":"+path)
	return float64(rss) / float64(len(src))
}

// benchScale runs job on src and reports the time per MB and the peak RSS
// of a child process running it once, both against the input's size. One
// run goes first, untimed: at 100 MB a single timed run would otherwise
// also pay for faulting in a fresh heap, which smaller sizes spread over
// many runs.
func benchScale(b *testing.B, job string, src []byte) {
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	run := scaleJobs[job]
	if err := run(src); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := run(src); err != nil {
			b.Fatal(err)
		}
	}
	mb := float64(len(src)) / (1 << 20)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N)/mb, "ms/MB")
	if r := peakRSS(b, job, src); r > 0 {
		b.ReportMetric(r, "peak-RSS/input")
	}
}

// BenchmarkScaleParse parses generated policies of 1, 10 and 100 MB.
func BenchmarkScaleParse(b *testing.B) {
	for _, size := range scaleSizes {
		b.Run(sizeName(size), func(b *testing.B) { benchScale(b, "parse", genChockZON(size)) })
	}
}

// BenchmarkScaleError parses the same policies broken in their last rule:
// the error path reads the whole file after the fast path gave up.
func BenchmarkScaleError(b *testing.B) {
	for _, size := range scaleSizes {
		b.Run(sizeName(size), func(b *testing.B) { benchScale(b, "error", brokenDoc(size)) })
	}
}

// BenchmarkScaleFormat runs fmt (parse and format) on policies of 1, 10
// and 100 MB whose rules are on one line, or one a line.
func BenchmarkScaleFormat(b *testing.B) {
	for _, layout := range []string{"one-line", "one-per-line"} {
		for _, size := range scaleSizes {
			b.Run(layout+"/"+sizeName(size), func(b *testing.B) {
				benchScale(b, "fmt", rulesDoc(size, layout == "one-line"))
			})
		}
	}
}
