package zon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/diag"
)

// checkMatchesSlow holds the error path to the participle reference: the
// same diagnostic (code, message, hint, span) or, for valid ZON, none.
func checkMatchesSlow(t testing.TB, src []byte) {
	t.Helper()
	got := check("x.zon", string(src))
	_, err := parseSlow("x.zon", src)
	if err == nil {
		if got != nil {
			t.Fatalf("%q: the error path rejects valid ZON: %v", src, got)
		}
		return
	}
	var want *diag.Diagnostic
	if !errors.As(err, &want) {
		t.Fatalf("%q: the reference error is not a diagnostic: %v", src, err)
	}
	if got == nil {
		t.Fatalf("%q: the error path accepts what the reference rejects: %v (%s)", src, want, want.Code)
	}
	if *got != *want {
		t.Fatalf("%q:\n got %s %v (hint %q) %+v\nwant %s %v (hint %q) %+v", src, got.Code, got, got.Hint, got.Span, want.Code, want, want.Hint, want.Span)
	}
}

// mutationTokens are inserted between tokens of the corpus inputs.
var mutationTokens = []string{",", ".", "{", "}", "(", ")", "[", "]", "=", "-", "+", ";", "..", ".*", "?", "*", "**", "!",
	"1", "-0", "x", "inf", "\"s\"", "'c'", "\\\\m\n", "@\"q\"", "@f", "fn", "struct", "comptime", "try", "or", "///d\n", "\x01", "\n"}

// mutations returns variants of src with one token dropped, doubled, or
// with another token put before it.
func mutations(src []byte) [][]byte {
	text := string(src)
	s := scanner{src: text, line: 1, noComments: true}
	var toks []rawTok
	for {
		tk, more := s.next()
		toks = append(toks, tk)
		if !more {
			break
		}
	}
	var out [][]byte
	for _, tk := range toks {
		out = append(out,
			[]byte(text[:tk.start]+text[tk.end:]),
			[]byte(text[:tk.end]+" "+text[tk.start:]))
		for _, m := range mutationTokens {
			out = append(out, []byte(text[:tk.start]+m+" "+text[tk.start:]))
		}
	}
	return out
}

func TestCheckMatchesParticiple(t *testing.T) {
	var inputs [][]byte
	for _, v := range loadVectors(t) {
		inputs = append(inputs, v.bytes(t))
	}
	for _, u := range []string{"(", "[", "{", ".{", "-", "!", ".{.a=", "a(", "@a(", ".{ 1, ", "comptime ", "fn(", "struct{", "?", "&", "x.", "1+", "x[", "[]", "[1]", "a.?", "a.*", "(.{"} {
		for _, n := range []int{1, 2, 3, 50} {
			inputs = append(inputs, []byte(strings.Repeat(u, n)), []byte(strings.Repeat(u, n)+"1"), []byte(".{ "+strings.Repeat(u, n)+" }"))
		}
	}
	for _, src := range inputs {
		checkMatchesSlow(t, src)
	}
	// Every mutation takes about a minute; ZON_EXHAUSTIVE=1 runs them all.
	stride := 17
	if os.Getenv("ZON_EXHAUSTIVE") != "" {
		stride = 1
	}
	n, i := 0, 0
	for _, src := range inputs {
		if len(src) > 200 {
			continue
		}
		for _, m := range mutations(src) {
			if i++; i%stride == 0 {
				checkMatchesSlow(t, m)
				n++
			}
		}
	}
	t.Logf("%d inputs and %d mutations agree", len(inputs), n)
}

// TestCheckLongInputs mutates inputs of thousands of tokens, so that the
// token ring wraps, and checks that no token had to be scanned again.
func TestCheckLongInputs(t *testing.T) {
	var long [][]byte
	long = append(long, genChockZON(6<<10))
	var b strings.Builder
	for i := 0; i < 100; i++ {
		b.WriteString(".{ .a = .{ 1, (2), x, -0, \"s\" }, ")
	}
	long = append(long, []byte(".{ "+b.String()+" }"))
	for _, src := range long {
		ms := mutations(src)
		for i := 0; i < len(ms); i += len(ms) / 25 {
			checkMatchesSlow(t, ms[i])
			p := newChecker("x.zon", string(ms[i]))
			p.result()
			if p.rescans != 0 {
				t.Fatalf("%d tokens scanned again", p.rescans)
			}
		}
	}
}

func TestCheckRealFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "zon", "real", "*.zon"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if d := check(f, string(src)); d != nil {
			t.Errorf("%s: the error path rejects a valid file: %v", filepath.Base(f), d)
		}
	}
}

// TestCheckRescan looks up a token that has left the ring: the fallback
// scans again and finds the same token, with its bracket depth.
func TestCheckRescan(t *testing.T) {
	src := "\xef\xbb\xbf.{ " + strings.Repeat(".{ 1, (2) }, ", 200) + "}"
	want := newChecker("r.zon", src).tok(7)
	p := newChecker("r.zon", src)
	p.tok(2 * ringSize)
	if got := p.tok(7); got != want || p.rescans != 1 {
		t.Fatalf("token 7 after the ring moved on: %+v (%d rescans), want %+v", got, p.rescans, want)
	}
	if want.depth != 3 || src[want.start:want.end] != "2" {
		t.Fatalf("token 7 is %q at depth %d", src[want.start:want.end], want.depth)
	}
}
