package zon

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// notZigFmt lists the real files that `zig fmt` itself would change, so
// they cannot be used to check that fmt leaves zig fmt output alone. Each
// was checked against zig fmt's render rules (lib/std/zig/render.zig).
var notZigFmt = map[string]string{
	"Not-Nik__raylib-zig__build.zig.zon":                    "a struct spread over lines without a trailing comma; zig fmt joins it",
	"karlseguin__http.zig__build.zig.zon--1a3232ddc91e.zon": "2-space indent",
	"zigzap__zap__build.zig.zon--cd32fa6bc99b.zon":          "tab indent",
	"ziglang__zig__src__arch__x86_64__encodings.zon":        "one-element tuples written .{ x }; zig fmt writes .{x}",
}

// TestFormatRealFiles checks that every real file, which is zig fmt output,
// is already in canonical form, and that formatting keeps the value.
func TestFormatRealFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "zon", "real", "*.zon"))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := ParseDocument(f, src)
			if err != nil {
				t.Fatal(err)
			}
			got := Format(doc)
			if why, ok := notZigFmt[filepath.Base(f)]; ok {
				if string(got) == string(src) {
					t.Errorf("listed as not zig fmt output (%s) but fmt leaves it alone", why)
				}
				return
			}
			if string(got) != string(src) {
				t.Errorf("fmt changes a zig fmt file:\n%s", firstDiff(src, got))
			}
		})
	}
}

// firstDiff shows the lines around the first difference.
func firstDiff(a, b []byte) string {
	la, lb := splitLines(a), splitLines(b)
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			return "line " + itoa(i+1) + ":\n- " + x + "\n+ " + y
		}
	}
	return "(no line differs)"
}

func splitLines(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	if start < len(b) {
		out = append(out, string(b[start:]))
	}
	return out
}

func itoa(i int) string {
	return string(rune('0'+i/1000%10)) + string(rune('0'+i/100%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}

// TestFormatKeepsValue formats every valid vector and every real file and
// checks the value is unchanged and a second format changes nothing.
func TestFormatKeepsValue(t *testing.T) {
	var inputs [][]byte
	for _, v := range loadVectors(t) {
		if v.Valid {
			inputs = append(inputs, v.bytes(t))
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "zon", "real", "*.zon"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		inputs = append(inputs, b)
	}
	for _, src := range inputs {
		checkFormatRoundTrip(t, src)
	}
}

func checkFormatRoundTrip(t *testing.T, src []byte) {
	t.Helper()
	doc, err := ParseDocument("in.zon", src)
	if err != nil {
		return
	}
	once := Format(doc)
	doc2, err := ParseDocument("out.zon", once)
	if err != nil {
		t.Fatalf("fmt output does not parse: %v\ninput:\n%q\noutput:\n%q", err, src, once)
	}
	if a, b := TaggedJSON(doc.Value), TaggedJSON(doc2.Value); string(a) != string(b) {
		t.Fatalf("fmt changed the value\ninput: %q\noutput: %q\n%s\n%s", src, once, a, b)
	}
	twice := Format(doc2)
	if string(once) != string(twice) {
		t.Fatalf("fmt is not idempotent\ninput: %q\nonce:  %q\ntwice: %q", src, once, twice)
	}
	if len(doc.Comments) != len(doc2.Comments) {
		t.Fatalf("fmt lost comments: %d → %d\ninput: %q\noutput: %q", len(doc.Comments), len(doc2.Comments), src, once)
	}
	_ = reflect.DeepEqual
}
