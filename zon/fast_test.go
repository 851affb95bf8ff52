package zon

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// valueDiff describes the first difference between two values, spans
// included, or returns "".
func valueDiff(path string, a, b *Value) string {
	if a.Kind != b.Kind {
		return fmt.Sprintf("%s: kind %v vs %v", path, a.Kind, b.Kind)
	}
	if a.Span() != b.Span() {
		return fmt.Sprintf("%s: span %+v vs %+v", path, a.Span(), b.Span())
	}
	switch a.Kind {
	case KindStruct:
		if len(a.Fields) != len(b.Fields) {
			return fmt.Sprintf("%s: %d vs %d fields", path, len(a.Fields), len(b.Fields))
		}
		for i := range a.Fields {
			fa, fb := a.Fields[i], b.Fields[i]
			if fa.Name != fb.Name || fa.NameSpan() != fb.NameSpan() {
				return fmt.Sprintf("%s: field %d name %q %+v vs %q %+v", path, i, fa.Name, fa.NameSpan(), fb.Name, fb.NameSpan())
			}
			if d := valueDiff(path+"."+fa.Name, fa.Value, fb.Value); d != "" {
				return d
			}
		}
	case KindTuple:
		if len(a.Elems) != len(b.Elems) {
			return fmt.Sprintf("%s: %d vs %d elements", path, len(a.Elems), len(b.Elems))
		}
		for i := range a.Elems {
			if d := valueDiff(fmt.Sprintf("%s[%d]", path, i), a.Elems[i], b.Elems[i]); d != "" {
				return d
			}
		}
	case KindFloat:
		if a.Float != b.Float && !(math.IsNaN(a.Float) && math.IsNaN(b.Float)) || math.Signbit(a.Float) != math.Signbit(b.Float) {
			return fmt.Sprintf("%s: %v vs %v", path, a.Float, b.Float)
		}
	case KindInt:
		if a.BigInt().Cmp(b.BigInt()) != 0 || (a.Big == nil) != (b.Big == nil) {
			return fmt.Sprintf("%s: %v vs %v", path, a.BigInt(), b.BigInt())
		}
	default:
		if a.Str != b.Str || a.Int != b.Int || a.Bool != b.Bool || a.Multiline != b.Multiline {
			return fmt.Sprintf("%s: %+v vs %+v", path, a, b)
		}
	}
	return ""
}

// checkFastMatchesSlow holds the fast path to the participle reference:
// the same verdict, and on success the same value with the same spans.
func checkFastMatchesSlow(t testing.TB, src []byte) {
	t.Helper()
	fast, _, ok := fastParse("x.zon", string(src))
	slow, err := parseSlow("x.zon", src)
	if !ok {
		return // the fast path may always decline; the slow path then decides
	}
	if err != nil {
		t.Fatalf("fast path accepted what the grammar rejects: %q: %v", src, err)
	}
	if d := valueDiff("$", fast, slow.Value); d != "" {
		t.Fatalf("fast and participle paths differ on %q: %s", src, d)
	}
}

func TestFastPathMatchesParticiple(t *testing.T) {
	for _, v := range loadVectors(t) {
		checkFastMatchesSlow(t, v.bytes(t))
	}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "zon", "real", "*.zon"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, ok := fastParse(f, string(src)); !ok {
			t.Errorf("%s: the fast path declines a valid real file", filepath.Base(f))
		}
		checkFastMatchesSlow(t, src)
	}
}
