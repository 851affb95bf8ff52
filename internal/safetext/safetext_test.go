package safetext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
)

func TestLineAndText(t *testing.T) {
	for _, c := range []struct{ in, line, text string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, `\x1b[31mred\x1b[0m`},
		{"\x1b]0;title\x07", `\x1b]0;title\x07`, `\x1b]0;title\x07`},
		{"a\nb\tc\rd", `a\x0ab\x09c\x0dd`, "a\nb\tc\\x0dd"},
		{"nul\x00del\x7f", `nul\x00del\x7f`, `nul\x00del\x7f`},
		{"c1 \u009b csi", `c1 \x9b csi`, `c1 \x9b csi`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`, `bad \xff\xfe utf8`},
		{"rlo \u202eevil", `rlo \u202eevil`, `rlo \u202eevil`},
		{"zw\u200bsp \ufeff", `zw\u200bsp \ufeff`, `zw\u200bsp \ufeff`},
		{"ex\u00adec ex\u034fec \U000E0041 \ufe0f \u3164 \u2028 \u2029", `ex\u00adec ex\u034fec \U000e0041 \ufe0f \u3164 \u2028 \u2029`, `ex\u00adec ex\u034fec \U000e0041 \ufe0f \u3164 \u2028 \u2029`},
		{"cut \xe2\x80", `cut \xe2\x80`, `cut \xe2\x80`},
	} {
		if got := Line(c.in); got != c.line {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.line)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

// TestJSON: the escaped JSON reads back as the same value, and holds no
// byte a terminal acts on.
func TestJSON(t *testing.T) {
	v := map[string]string{"a": "\x1b[31m\u009b\x7f\u202e\u200b \U000E0041\u2028 x\ttab\nline"}
	b, _ := json.Marshal(v)
	out := JSON(b)
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if back["a"] != v["a"] {
		t.Errorf("read back %q, want %q", back["a"], v["a"])
	}
	for _, r := range string(out) {
		if Control(r) || Hidden(r) {
			t.Errorf("%q left in %s", r, out)
		}
	}
	if plain := []byte(`{"a":"b"}`); &JSON(plain)[0] != &plain[0] {
		t.Error("JSON copied a document it did not change")
	}
}

func TestWriterJoinsSplitCharacters(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	in := "é ✓ \U0001F600 \x1b!\u202e"
	for i := 0; i < len(in); i++ {
		w.Write([]byte{in[i]})
	}
	w.Flush()
	if want := `é ✓ ` + "\U0001F600" + ` \x1b!\u202e`; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	w.Write([]byte("end \xe2\x80"))
	w.Flush()
	if out.String() != `end \xe2\x80` {
		t.Errorf("a cut character at the end: %q", out.String())
	}
}

func TestTrim(t *testing.T) {
	long := strings.Repeat("a", 100) + "X" + strings.Repeat("b", 100)
	s, at := Trim(long, 100, 40)
	if []rune(s)[at] != 'X' || !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") || len([]rune(s)) != 42 {
		t.Errorf("%q %d", s, at)
	}
	if s, at := Trim("short", 2, 40); s != "short" || at != 2 {
		t.Errorf("%q %d", s, at)
	}
}

func FuzzLine(f *testing.F) {
	f.Add("\x1b[31m\u202e\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range Line(s) {
			if Control(r) || Hidden(r) || r == '\uFFFD' && !strings.ContainsRune(s, '\uFFFD') {
				t.Fatalf("Line(%q) holds %q", s, r)
			}
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		w.Write([]byte(s))
		w.Flush()
		if out.String() != Text(s) {
			t.Fatalf("writer %q, Text %q", out.String(), Text(s))
		}
	})
}

// TestHiddenRanges: Hidden is exactly HiddenRanges, which the compiled
// policy's character class is built from.
func TestHiddenRanges(t *testing.T) {
	in := func(r rune) bool {
		for _, rg := range HiddenRanges() {
			if r >= rg[0] && r <= rg[1] {
				return true
			}
		}
		return false
	}
	for r := rune(0); r <= 0x10ffff; r++ {
		if Hidden(r) != in(r) {
			t.Fatalf("U+%04X: Hidden %v, HiddenRanges %v", r, Hidden(r), in(r))
		}
	}
}

func TestStrip(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"plain text", 100, "plain text"},
		{"two\nlines\tand a tab", 100, "two\nlines\tand a tab"},
		{"\x1b[31mred\x1b[0m", 100, "[31mred[0m"},
		{"bidi \u202eevil\u202c zero\u200bwidth", 100, "bidi evil zerowidth"},
		{"bad \xff byte \x85 C1", 100, "bad  byte  C1"},
		{"abcdefghij", 8, "abcde…"},
		{"ééééé", 6, "é…"}, // never half a character
		{"short", 0, "short"},
	} {
		if got := Strip(tc.in, tc.limit); got != tc.want {
			t.Errorf("Strip(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
		if got := Strip(tc.in, tc.limit); tc.limit > 0 && len(got) > tc.limit {
			t.Errorf("Strip(%q, %d) is %d bytes", tc.in, tc.limit, len(got))
		}
	}
}

// TestHiddenRangesAreEveryHiddenRune: the ranges worked out from the
// tables are exactly the runes Hidden reports, over every rune.
func TestHiddenRangesAreEveryHiddenRune(t *testing.T) {
	ranges := HiddenRanges()
	i := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		for i < len(ranges) && ranges[i][1] < r {
			i++
		}
		in := i < len(ranges) && ranges[i][0] <= r && r <= ranges[i][1]
		if in != Hidden(r) {
			t.Fatalf("%U: in the ranges %v, Hidden %v", r, in, Hidden(r))
		}
	}
}
