package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/diag"
)

// FuzzLint: decoding and linting any input never panics, and every
// diagnostic is inside the file it names.
func FuzzLint(f *testing.F) {
	for _, tc := range catalogCases {
		f.Add(tc.Bad, tc.BadOrg)
		f.Add(tc.Good, tc.GoodOrg)
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "examples", "chock.zon")); err == nil {
		o, _ := os.ReadFile(filepath.Join("..", "..", "examples", "org.zon"))
		f.Add(string(b), string(o))
	}
	f.Fuzz(func(t *testing.T, project, org string) {
		var orgs []string
		if org != "" {
			orgs = append(orgs, org)
		}
		for _, d := range lintText(project, orgs...) {
			src := project
			if d.Span.File != "chock.zon" {
				src = org
			}
			if d.Span.Start.Offset < 0 || d.Span.Start.Offset > len(src) || d.Span.End.Offset > len(src) {
				t.Fatalf("%s: span %+v outside a %d-byte file", d.Code, d.Span, len(src))
			}
			if _, ok := CheckFor(d.Code); !ok {
				t.Fatalf("code %q is not in the catalog", d.Code)
			}
			if strings.HasPrefix(d.Message, "internal error") {
				t.Fatalf("panic: %s", d.Message)
			}
		}
	})
}

// genRules makes a chock.zon with n rules over a spread of namespaces.
func genRules(n int) string {
	var b strings.Builder
	b.WriteString(".{\n    .policy = .{\n        .rules = .{\n")
	decisions := []string{"allow", "ask", "deny"}
	for i := 0; i < n; i++ {
		var pat string
		switch i % 4 {
		case 0:
			pat = fmt.Sprintf("exec.path.tool%d", i)
		case 1:
			pat = fmt.Sprintf("mcp.server%d.tool.op%d", i%40, i)
		case 2:
			pat = fmt.Sprintf("net.fetch.com.example%d.*", i)
		default:
			pat = fmt.Sprintf("mcp.server%d.tool.*", i)
		}
		fmt.Fprintf(&b, "            .{ .action = %q, .decision = .%s, .why = \"rule %d\" },\n", pat, decisions[i%3], i)
	}
	b.WriteString("        },\n    },\n}\n")
	return b.String()
}

// BenchmarkLint10000 lints a 10,000-rule file, decoding included.
func BenchmarkLint10000(b *testing.B) {
	src := genRules(10000)
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		ds := lintText(src)
		if ds.HasErrors() {
			b.Fatal(diag.List(ds).Error())
		}
	}
}
