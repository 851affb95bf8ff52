// Package safetext is chock's one printer for untrusted text: whatever a
// file, a server, a program or an argv put in a string is shown so that it
// cannot drive the terminal it is printed on. Control characters (C0, DEL,
// C1) and bytes that are not UTF-8 become \xNN; the invisible format
// characters that reorder or hide text (bidi controls, zero-width
// characters, U+FEFF) become \uNNNN. JSON keeps JSON's own escapes
// (\u00NN), so its values are unchanged.
package safetext

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Hidden reports whether r changes how the text around it reads without
// showing itself: a format character (Unicode category Cf: bidi controls,
// zero-width characters, the soft hyphen, tags, U+FEFF), a default
// ignorable code point (variation selectors, the combining grapheme
// joiner, Hangul fillers), or a line or paragraph separator.
func Hidden(r rune) bool {
	if r < 0xad {
		return false
	}
	return unicode.In(r, hiddenTables...)
}

// hiddenTables are the tables Hidden reads.
var hiddenTables = []*unicode.RangeTable{unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Zl, unicode.Zp}

// hiddenRanges is Hidden as inclusive ranges, worked out once from its
// tables' ranges (a few thousand runes, where a walk of every rune costs
// tens of milliseconds at each process start that needs it).
var hiddenRanges = sync.OnceValue(func() [][2]rune {
	var rs []rune
	add := func(lo, hi, stride uint32) {
		for r := lo; r <= hi; r += stride {
			if Hidden(rune(r)) {
				rs = append(rs, rune(r))
			}
		}
	}
	for _, t := range hiddenTables {
		for _, r := range t.R16 {
			add(uint32(r.Lo), uint32(r.Hi), uint32(r.Stride))
		}
		for _, r := range t.R32 {
			add(r.Lo, r.Hi, r.Stride)
		}
	}
	slices.Sort(rs)
	rs = slices.Compact(rs)
	var out [][2]rune
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1][1] == r-1 {
			out[n-1][1] = r
		} else {
			out = append(out, [2]rune{r, r})
		}
	}
	return out
})

// HiddenRanges are the runes Hidden reports, as inclusive ranges (for a
// character class in another language, such as the compiled policy's).
func HiddenRanges() [][2]rune { return slices.Clone(hiddenRanges()) }

// Control reports whether r is a control character: C0, DEL or C1.
func Control(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// mode says which characters pass as they are.
type mode int

const (
	line mode = iota // nothing: one line, tabs and line breaks escaped too
	text             // tabs and line breaks pass: a block of lines
	jsn              // JSON: \u escapes; tabs and line breaks pass (JSON white space)
)

// Line shows s on one line: every control character, tab and line break
// included, as \xNN.
func Line(s string) string { return escape(s, line) }

// Text shows s as a block of lines: tabs and line breaks pass, every other
// control character is \xNN.
func Text(s string) string { return escape(s, text) }

// Safe reports whether s prints as it is, on one line.
func Safe(s string) bool { return escape(s, line) == s }

func escape(s string, m mode) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if needs(r, n, m) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	appendEscaped(&b, s[i:], m)
	return b.String()
}

func needs(r rune, n int, m mode) bool {
	if r == utf8.RuneError && n <= 1 {
		return true
	}
	if (r == '\n' || r == '\t') && m != line {
		return false
	}
	return Control(r) || Hidden(r)
}

type builder interface {
	WriteString(string) (int, error)
	WriteRune(rune) (int, error)
}

func appendEscaped(b builder, s string, m mode) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			if m == jsn {
				b.WriteString(`\ufffd`)
			} else {
				b.WriteString(fmt.Sprintf(`\x%02x`, s[i]))
			}
		case !needs(r, n, m):
			b.WriteString(s[i : i+n])
		case m == jsn && r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			b.WriteString(fmt.Sprintf(`\u%04x\u%04x`, r1, r2))
		case m == jsn:
			b.WriteString(fmt.Sprintf(`\u%04x`, r))
		case Control(r):
			b.WriteString(fmt.Sprintf(`\x%02x`, r))
		case r > 0xffff:
			b.WriteString(fmt.Sprintf(`\U%08x`, r))
		default:
			b.WriteString(fmt.Sprintf(`\u%04x`, r))
		}
		i += n
	}
}

// JSON makes marshalled JSON safe to print: DEL, C1, the hidden format
// characters and any raw control byte (a line break and a tab excepted)
// become \u escapes, which JSON reads back as the same characters, and a
// byte that is not UTF-8 becomes \ufffd, as encoding/json writes it.
func JSON(b []byte) []byte {
	s := string(b)
	out := escape(s, jsn)
	if len(out) == len(s) && out == s {
		return b
	}
	return []byte(out)
}

// Writer writes through the printer: in text mode (NewWriter) every write
// is shown as Text shows it; in JSON mode (NewJSONWriter) as JSON does. A
// character split across two writes is put back together; Flush writes
// what is left of one.
type Writer struct {
	w       io.Writer
	m       mode
	pending []byte
}

// NewWriter is a writer for text output: tabs and line breaks pass.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w, m: text} }

// NewJSONWriter is a writer for JSON output.
func NewJSONWriter(w io.Writer) *Writer { return &Writer{w: w, m: jsn} }

// Write escapes p and writes it; it reports len(p) written on success.
func (w *Writer) Write(p []byte) (int, error) {
	buf := p
	if len(w.pending) > 0 {
		buf = append(w.pending, p...)
		w.pending = nil
	}
	// Hold back an incomplete UTF-8 sequence at the end for the next write.
	if k := incompleteTail(buf); k > 0 {
		w.pending = append([]byte(nil), buf[len(buf)-k:]...)
		buf = buf[:len(buf)-k]
	}
	if len(buf) == 0 {
		return len(p), nil
	}
	s := string(buf)
	out := escape(s, w.m)
	if _, err := io.WriteString(w.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held-back partial character, escaped as the bytes it is.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	s := string(w.pending)
	w.pending = nil
	_, err := io.WriteString(w.w, escape(s, w.m))
	return err
}

// incompleteTail is the length of a UTF-8 sequence begun and not finished
// at the end of b (0 when there is none).
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return 0
		}
		if c >= 0xc0 { // a lead byte: is its sequence longer than what is here?
			need := 2
			switch {
			case c >= 0xf0:
				need = 4
			case c >= 0xe0:
				need = 3
			}
			if need > k && !utf8.FullRune(b[len(b)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}

// Trim returns s cut to at most limit runes around rune position at, with
// "…" where it was cut, and the position of at in the result; for source
// excerpts of very long lines (a binary file is one line).
func Trim(s string, at, limit int) (string, int) {
	rs := []rune(s)
	if len(rs) <= limit {
		return s, at
	}
	start := max(0, at-limit/2)
	end := start + limit
	if end > len(rs) {
		end = len(rs)
		start = max(0, end-limit)
	}
	var b bytes.Buffer
	pos := at - start
	if start > 0 {
		b.WriteString("…")
		pos++
	}
	b.WriteString(string(rs[start:end]))
	if end < len(rs) {
		b.WriteString("…")
	}
	return b.String(), pos
}

// Strip removes from s what a peer should not pass on to another: every
// control character but the line break and the tab, every hidden format
// character (Hidden), and every byte that is not UTF-8; then cuts it to at
// most limit bytes, at a character boundary, ending in "…" where it was
// cut. It is for untrusted text that is handed on rather than shown (an
// upstream server's tool description, re-served to a client): there is no
// terminal to escape for, so nothing is escaped, only dropped.
func Strip(s string, limit int) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || (Control(r) && r != '\n' && r != '\t') || Hidden(r) {
			clean = false
			break
		}
		i += n
	}
	if !clean {
		var b strings.Builder
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			if !((r == utf8.RuneError && n <= 1) || (Control(r) && r != '\n' && r != '\t') || Hidden(r)) {
				b.WriteString(s[i : i+n])
			}
			i += n
		}
		s = b.String()
	}
	if limit <= 0 || len(s) <= limit {
		return s
	}
	const ellipsis = "…"
	cut := max(0, limit-len(ellipsis))
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
