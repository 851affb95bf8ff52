package zon

import (
	"fmt"
	"strings"
	"testing"
)

// layouts are documents of about n elements laid out in ways that once
// made fmt quadratic, or could.
var layouts = map[string]func(n int) string{
	"rules on one line": func(n int) string {
		var b strings.Builder
		b.WriteString(".{ .policy = .{ .rules = .{ ")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, `.{ .action = "exec.path.tool%d", .decision = .allow, .why = "rule %d" }, `, i, i)
		}
		b.WriteString("} } }\n")
		return b.String()
	},
	"rules one per line": func(n int) string {
		var b strings.Builder
		b.WriteString(".{ .policy = .{ .rules = .{\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "    .{ .action = \"exec.path.tool%d\", .decision = .allow, .why = \"rule %d\" },\n", i, i)
		}
		b.WriteString("} } }\n")
		return b.String()
	},
	"numbers on one line": func(n int) string {
		var b strings.Builder
		b.WriteString(".{ ")
		for i := 0; i < 8*n; i++ {
			fmt.Fprintf(&b, "%d, ", i)
		}
		b.WriteString("}")
		return b.String()
	},
	"deep nesting": func(n int) string {
		var b strings.Builder
		for i := 0; i < MaxDepth-2; i++ {
			b.WriteString(".{ .a = ")
		}
		b.WriteString(".{ ")
		for i := 0; i < 4*n; i++ {
			fmt.Fprintf(&b, ".{ %d, .x }, ", i)
		}
		b.WriteString("}" + strings.Repeat(" }", MaxDepth-2))
		return b.String()
	},
	"many comments": func(n int) string {
		var b strings.Builder
		b.WriteString(".{ // top\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "    // rule %d\n    .{ .action = \"exec.path.tool%d\", .decision = .ask }, // after %d\n", i, i, i)
		}
		b.WriteString("}\n")
		return b.String()
	},
	"comments on one line each": func(n int) string {
		var b strings.Builder
		b.WriteString(".{ ")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, ".{ %d, %d }, // c%d\n", i, i, i)
		}
		b.WriteString("}\n")
		return b.String()
	},
	"multiline strings": func(n int) string {
		var b strings.Builder
		b.WriteString(".{\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "    .{ .doc =\n        \\\\line %d\n        \\\\more\n    , .n = %d }, // n\n", i, i)
		}
		b.WriteString("}\n")
		return b.String()
	},
	"long strings": func(n int) string {
		long := strings.Repeat("x", 1000)
		var b strings.Builder
		b.WriteString(".{ ")
		for i := 0; i < n/8; i++ {
			fmt.Fprintf(&b, "%q, ", long)
		}
		b.WriteString("}")
		return b.String()
	},
}

// TestFormatLinear counts fmt's steps (source bytes and comments looked at,
// elements laid out) on each layout at two sizes: they must stay within a
// constant of the bytes read and written, which quadratic work cannot.
func TestFormatLinear(t *testing.T) {
	for name, gen := range layouts {
		t.Run(name, func(t *testing.T) {
			var perByte [2]float64
			for i, n := range []int{2000, 8000} {
				src := gen(n)
				doc, err := ParseDocument("l.zon", []byte(src))
				if err != nil {
					t.Fatal(err)
				}
				out, steps := format(doc)
				perByte[i] = float64(steps) / float64(len(src)+len(out))
				if perByte[i] > 4 {
					t.Errorf("%d elements, %d bytes: %d steps, %.1f a byte", n, len(src), steps, perByte[i])
				}
			}
			t.Logf("steps a byte: %.2f at 2,000 elements, %.2f at 8,000", perByte[0], perByte[1])
		})
	}
}
