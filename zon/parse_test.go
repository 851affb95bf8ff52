package zon

import (
	"errors"
	"strings"
	"testing"

	"github.com/chockhq/chock/diag"
)

// TestPathologicalInputs parses inputs that once made the participle path
// backtrack exponentially ("@a(" nested) or could exhaust the stack; each
// must be rejected with a positioned diagnostic. A regression shows up as
// this test hanging.
func TestPathologicalInputs(t *testing.T) {
	units := []string{"(", "[", "{", ".{", "-", "!", ".{.a=", "a(", "@a(", ".{ 1, ", "comptime ", "fn(", "struct{", "?", "&", "x.", "1+", "x[", "[]", "[1]", "a.?", "a.*", "(.{"}
	for _, u := range units {
		src := strings.Repeat(u, 200)
		_, err := Parse("p.zon", []byte(src))
		var d *diag.Diagnostic
		if !errors.As(err, &d) {
			t.Fatalf("%q x200: want a diagnostic, got %v", u, err)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	ok := strings.Repeat(".{", MaxDepth) + strings.Repeat("}", MaxDepth)
	if _, err := Parse("d.zon", []byte(ok)); err != nil {
		t.Fatalf("%d levels rejected: %v", MaxDepth, err)
	}
	deep := strings.Repeat(".{", MaxDepth+1) + strings.Repeat("}", MaxDepth+1)
	_, err := Parse("d.zon", []byte(deep))
	var d *diag.Diagnostic
	if !errors.As(err, &d) || d.Code != CodeTooDeep || d.Span.Start.Col != 2*MaxDepth+2 {
		t.Fatalf("want %s at col %d, got %v", CodeTooDeep, 2*MaxDepth+2, err)
	}
}

func TestSpans(t *testing.T) {
	src := ".{\n    .name = \"x\",\n    .list = .{ 1, -2 },\n}"
	v, err := Parse("s.zon", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	name := v.Field("name")
	if got := name.Span(); got.Start.Line != 2 || got.Start.Col != 13 || got.End.Col != 16 || got.File != "s.zon" {
		t.Errorf("name span %+v", got)
	}
	list := v.Field("list")
	if list.Span().Start.Col != 13 || list.Span().End.Col != 23 {
		t.Errorf("list span %+v", list.Span())
	}
	neg := list.Elems[1]
	if neg.Int != -2 || neg.Span().Start.Col != 19 || neg.Span().End.Col != 21 {
		t.Errorf("-2 span %+v value %d", neg.Span(), neg.Int)
	}
	if v.Fields[0].NameSpan().Start.Col != 6 {
		t.Errorf("field name span %+v", v.Fields[0].NameSpan())
	}
	if v.Span().End.Line != 4 || v.Span().End.Col != 2 {
		t.Errorf("root span %+v", v.Span())
	}
}
