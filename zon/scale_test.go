package zon

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chockhq/chock/diag"
)

// manyElements writes a tuple of n one-digit elements, ten to a line, after
// an opening ".{" line, and then tail. The tail's first byte is on line
// n/10 + 2, column 1.
func manyElements(n int, tail string) []byte {
	var b strings.Builder
	b.Grow(3*n + len(tail) + 8)
	b.WriteString(".{\n")
	for i := 0; i < n; i++ {
		if i%10 == 9 {
			b.WriteString("1,\n")
		} else {
			b.WriteString("1, ")
		}
	}
	b.WriteString(tail)
	return []byte(b.String())
}

func wantDiag(t *testing.T, src []byte, code string, line, col int, msg string) {
	t.Helper()
	_, err := Parse("big.zon", src)
	var d *diag.Diagnostic
	if !errors.As(err, &d) {
		t.Fatalf("want a diagnostic, got %v", err)
	}
	got := fmt.Sprintf("%s %d:%d %s", d.Code, d.Span.Start.Line, d.Span.Start.Col, d.Message)
	want := fmt.Sprintf("%s %d:%d %s", code, line, col, msg)
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestErrorPastMillionElements: an error after more than a million elements
// is reported where it is, as Zig reports it, and not at an element-count
// bound of the parsing machinery.
func TestErrorPastMillionElements(t *testing.T) {
	const n = 1_100_000
	line := n/10 + 2
	t.Run("missing comma", func(t *testing.T) {
		src := manyElements(n, "1 2,\n}\n")
		wantDiag(t, src, CodeSyntax, line, 3, "expected ',' after initializer")
		// The error path alone, with its token ring wrapped many times.
		p := newChecker("big.zon", string(src))
		if d := p.result(); d == nil || d.Span.Start.Line != line || p.rescans != 0 {
			t.Fatalf("the error path alone: %v, %d tokens scanned again", d, p.rescans)
		}
	})
	t.Run("ambiguous -0", func(t *testing.T) {
		wantDiag(t, manyElements(n, "-0,\n}\n"), CodeNotZON, line, 2, "integer literal '-0' is ambiguous")
	})
	t.Run("syntax error after a ZON error", func(t *testing.T) {
		// Zig parses the whole file before it checks ZON: the syntax error wins.
		src := manyElements(n, "1 2,\n}\n")
		copy(src[3:], "(1),  ") // two elements become one; no byte moves
		wantDiag(t, src, CodeSyntax, line, 3, "expected ',' after initializer")
	})
	t.Run("struct fields", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(".{\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, ".f%d = 1,\n", i)
		}
		b.WriteString(".g = 1 .h = 2,\n}\n")
		wantDiag(t, []byte(b.String()), CodeSyntax, n+2, 11, "expected ',' after initializer")
	})
}

// TestDepthBoundKeepsEarlierError: nesting past MaxDepth is refused, but not
// in place of a syntax error that comes before it.
func TestDepthBoundKeepsEarlierError(t *testing.T) {
	deep := strings.Repeat(".{", MaxDepth+1) + strings.Repeat("}", MaxDepth+1)
	wantDiag(t, []byte(".{ 1 2, "+deep+" }"), CodeSyntax, 1, 6, "expected ',' after initializer")
	wantDiag(t, []byte(".{ -0, "+deep+" }"), CodeTooDeep, 1, 7+2*MaxDepth, fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
	// Keyword expressions and function types nest without brackets.
	wantDiag(t, []byte(strings.Repeat("comptime ", MaxDepth+1)+"1"), CodeTooDeep, 1, 1+9*MaxDepth, fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
	wantDiag(t, []byte(strings.Repeat("fn() ", MaxDepth+1)+"u8"), CodeTooDeep, 1, 1+5*MaxDepth, fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
	wantDiag(t, []byte("1 2 "+strings.Repeat("comptime ", MaxDepth+1)), CodeSyntax, 1, 3, "expected 'EOF', found a number literal")
	// A well-formed file of more than a million elements parses.
	v, err := Parse("big.zon", manyElements(1_100_000, "1 }"))
	if err != nil || len(v.Elems) != 1_100_001 {
		t.Fatalf("a well-formed tuple of 1,100,001 elements: %v", err)
	}
}
