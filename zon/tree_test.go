package zon

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// nodeDiff describes the first difference between a tree node, read
// through the Node accessors, and the Value made from it, or returns "".
func nodeDiff(path string, n Node, v *Value) string {
	if n.Kind() != v.Kind || n.Span() != v.Span() || n.Offset() != v.Span().Start.Offset {
		return fmt.Sprintf("%s: %v %+v vs %v %+v", path, n.Kind(), n.Span(), v.Kind, v.Span())
	}
	switch v.Kind {
	case KindStruct:
		if n.Len() != len(v.Fields) {
			return fmt.Sprintf("%s: %d vs %d fields", path, n.Len(), len(v.Fields))
		}
		for i, f := range v.Fields {
			if n.FieldName(i) != f.Name || n.FieldNameSpan(i) != f.NameSpan() {
				return fmt.Sprintf("%s: field %d %q %+v vs %q %+v", path, i, n.FieldName(i), n.FieldNameSpan(i), f.Name, f.NameSpan())
			}
			if d := nodeDiff(path+"."+f.Name, n.FieldValue(i), f.Value); d != "" {
				return d
			}
		}
	case KindTuple:
		if n.Len() != len(v.Elems) {
			return fmt.Sprintf("%s: %d vs %d elements", path, n.Len(), len(v.Elems))
		}
		for i, e := range v.Elems {
			if d := nodeDiff(fmt.Sprintf("%s[%d]", path, i), n.Elem(i), e); d != "" {
				return d
			}
		}
	case KindFloat:
		if f := n.Float(); f != v.Float && !(math.IsNaN(f) && math.IsNaN(v.Float)) || math.Signbit(f) != math.Signbit(v.Float) {
			return fmt.Sprintf("%s: %v vs %v", path, f, v.Float)
		}
	case KindInt, KindChar:
		if n.Int() != v.Int || (n.Big() == nil) != (v.Big == nil) || n.Big() != nil && n.Big().Cmp(v.Big) != 0 {
			return fmt.Sprintf("%s: %v %v vs %v %v", path, n.Int(), n.Big(), v.Int, v.Big)
		}
	default:
		if n.Str() != v.Str || n.Multiline() != v.Multiline || n.Bool() != v.Bool || n.Len() != 0 {
			return fmt.Sprintf("%s: %q %v %v vs %+v", path, n.Str(), n.Multiline(), n.Bool(), v)
		}
	}
	return ""
}

// checkTreeMatchesValues holds ParseTree's nodes to ParseDocument's Values.
func checkTreeMatchesValues(t testing.TB, src []byte) {
	t.Helper()
	tree, terr := ParseTree("x.zon", src)
	doc, derr := ParseDocument("x.zon", src)
	if (terr == nil) != (derr == nil) || terr != nil && terr.Error() != derr.Error() {
		t.Fatalf("%q: ParseTree %v, ParseDocument %v", src, terr, derr)
	}
	if terr != nil {
		return
	}
	if d := nodeDiff("$", tree.Root(), doc.Value); d != "" {
		t.Fatalf("%q: %s", src, d)
	}
}

func TestTreeMatchesValues(t *testing.T) {
	for _, v := range loadVectors(t) {
		checkTreeMatchesValues(t, v.bytes(t))
	}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "zon", "real", "*.zon"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkTreeMatchesValues(t, src)
	}
	for _, g := range layouts {
		checkTreeMatchesValues(t, []byte(g(300)))
	}
}

func TestTreePos(t *testing.T) {
	tree, err := ParseTree("p.zon", []byte("\xef\xbb\xbf.{\n  1,\r\n\n  .a }"))
	if err != nil {
		t.Fatal(err)
	}
	for off, want := range map[int]string{0: "1:1", 3: "1:4", 5: "1:6", 6: "2:1", 10: "2:5", 11: "2:6", 12: "3:1", 13: "4:1", 17: "4:5", 19: "4:7"} {
		if p := tree.Pos(off); fmt.Sprintf("%d:%d", p.Line, p.Col) != want || p.Offset != off {
			t.Errorf("offset %d: %+v, want %s", off, p, want)
		}
	}
}
