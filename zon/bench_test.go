package zon

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/internal/rounds"
)

// genChockZON makes a chock.zon-like document of about size bytes: policy
// lists, rules with reasons, secrets and servers, as a large project has.
func genChockZON(size int) []byte {
	var b strings.Builder
	b.WriteString(".{\n    .policy = .{\n        .default = .deny,\n        .rules = .{\n")
	for i := 0; b.Len() < size-400; i++ {
		fmt.Fprintf(&b, "            .{ .action = \"mcp.server%d.tool.do_thing_%d\", .decision = .allow, .why = \"rule %d for the team's workflow\" },\n", i%50, i, i)
		if i%7 == 0 {
			fmt.Fprintf(&b, "            // reviewed %d\n", i)
			fmt.Fprintf(&b, "            .{ .action = \"exec.path.tool%d\", .decision = .ask, .limit = %d, .weight = %d.5 },\n", i, i*13, i)
		}
	}
	b.WriteString("        },\n    },\n    .secrets = .{\n        .{ .name = \"GITHUB_TOKEN\", .to = \"exec.path.gh\" },\n    },\n}\n")
	return []byte(b.String())
}

func largestRealFile(tb testing.TB) (string, []byte) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "zon", "real", "*.zon"))
	var best string
	var data []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		if len(b) > len(data) {
			best, data = f, b
		}
	}
	return filepath.Base(best), data
}

func benchInputs(b *testing.B) map[string][]byte {
	name, real := largestRealFile(b)
	return map[string][]byte{"chock1MiB": genChockZON(1 << 20), "real=" + name: real}
}

// BenchmarkParse measures ZON parsing throughput (MB/s) and allocations.
func BenchmarkParse(b *testing.B) {
	for name, src := range benchInputs(b) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse("bench.zon", src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkZONvsJSON interleaves, round by round in one process, Parse of
// each document with encoding/json decoding its JSON rendering into any,
// and reports the throughput ratio ZON/JSON (JSON's time over Parse's, the
// median of the rounds').
func BenchmarkZONvsJSON(b *testing.B) {
	for name, src := range benchInputs(b) {
		v, err := Parse("bench.zon", src)
		if err != nil {
			b.Fatal(err)
		}
		js := JSON(v)
		b.Run(name, func(b *testing.B) {
			r := rounds.Calls(b, 3,
				func(int) {
					var out any
					if err := json.Unmarshal(js, &out); err != nil {
						b.Fatal(err)
					}
				},
				func(int) {
					if _, err := Parse("bench.zon", src); err != nil {
						b.Fatal(err)
					}
				})
			r.Report(b, "zon/json", "json-ns/op", "zon-ns/op")
		})
	}
}
