package zon

import (
	"fmt"
	"math"
	"math/big"

	"github.com/chockhq/chock/diag"
)

// Tree is a parsed document in compact form, for readers of large files:
// every value is a 24-byte node holding byte offsets, and a span is worked
// out only when asked for. A Value tree of the same document takes about
// eight times the memory. Its values are reached from Root.
type Tree struct {
	// File and Src are the document's name and source.
	File string
	Src  []byte

	text   string   // string(Src): unescaped strings are slices of it
	chunks [][]node // the nodes, in source order, nodeChunk to a chunk
	n      int      // how many nodes
	kids   []uint32 // each container's children, contiguous
	strs   []string // strings that are not a slice of text
	bigs   []*big.Int
	src    *source // the name and the line starts, which Values share
	// How many field nodes, and tuple elements, the nodes hold.
	nfields, nelems int
}

// MaxSize is the largest document a Tree can hold: nodes keep 32-bit offsets.
const MaxSize = math.MaxUint32

// nodeChunk is how many nodes a chunk holds; chunks after the first never
// move, so a large document's nodes are not copied as they grow.
const nodeChunk = 4096

// node is one value, or one struct field's name (kindField; its value is
// the next node). The meaning of aux and val depends on the kind:
//
//	struct, tuple: aux = offset in kids, val = number of children
//	string:        aux = index in strs when flagStr, else text[start+1:end-1]
//	enum:          aux = index in strs when flagStr, else the name's offset
//	field:         aux = index in strs when flagStr, else text[start:end]
//	int:           val = the int64, or aux = index in bigs when flagBig
//	float:         val = the float64's bits; char: val = the code point
type node struct {
	kind  uint8
	flags uint8
	start uint32
	end   uint32
	aux   uint32
	val   uint64
}

const kindField = 255

const (
	flagMultiline = 1 << iota
	flagTrue
	flagBig
	flagStr
)

func (t *Tree) node(i uint32) *node { return &t.chunks[i/nodeChunk][i%nodeChunk] }

func (t *Tree) add(n node) uint32 {
	if t.n%nodeChunk == 0 {
		// The first chunk grows as a small document needs; the others
		// are whole.
		size := nodeChunk
		if t.n == 0 {
			size = 16
		}
		t.chunks = append(t.chunks, make([]node, 0, size))
	}
	i := uint32(t.n)
	if n.kind == kindField {
		t.nfields++
	}
	c := &t.chunks[t.n/nodeChunk]
	*c = append(*c, n)
	t.n++
	return i
}

// indexLines records where every line starts.
func (t *Tree) indexLines() { t.src = newSource(t.File, t.text) }

// Pos converts a byte offset of the source into a position.
func (t *Tree) Pos(off int) diag.Pos { return t.src.pos(uint32(off)) }

// span is the span of bytes [start, end).
func (t *Tree) span(start, end uint32) diag.Span { return t.src.span(start, end) }

// Root is the document's value.
func (t *Tree) Root() Node { return Node{t: t} }

// Node is one value of a Tree; the zero Node is none.
type Node struct {
	t *Tree
	i uint32
}

func (n Node) node() *node { return n.t.node(n.i) }

// Kind is what the value is.
func (n Node) Kind() Kind { return Kind(n.node().kind) }

// Span is where the value is written.
func (n Node) Span() diag.Span {
	nd := n.node()
	return n.t.span(nd.start, nd.end)
}

// Offset is the byte offset where the value starts.
func (n Node) Offset() int { return int(n.node().start) }

// Len is the number of fields or elements of a container (0 otherwise).
func (n Node) Len() int {
	nd := n.node()
	if nd.kind == uint8(KindStruct) || nd.kind == uint8(KindTuple) {
		return int(nd.val)
	}
	return 0
}

func (n Node) kid(i int) uint32 { return n.t.kids[int(n.node().aux)+i] }

// Elem is a tuple's element i.
func (n Node) Elem(i int) Node { return Node{n.t, n.kid(i)} }

// FieldName is the name of a struct's field i.
func (n Node) FieldName(i int) string { return n.t.fieldName(n.t.node(n.kid(i))) }

// FieldNameSpan is where the name of a struct's field i is written,
// without the leading dot.
func (n Node) FieldNameSpan(i int) diag.Span {
	f := n.t.node(n.kid(i))
	return n.t.span(f.start, f.end)
}

// FieldValue is the value of a struct's field i.
func (n Node) FieldValue(i int) Node { return Node{n.t, n.kid(i) + 1} }

func (t *Tree) fieldName(f *node) string {
	if f.flags&flagStr != 0 {
		return t.strs[f.aux]
	}
	return t.text[f.start:f.end]
}

// Str is a string's bytes, or an enum literal's name.
func (n Node) Str() string {
	nd := n.node()
	switch {
	case nd.flags&flagStr != 0:
		return n.t.strs[nd.aux]
	case nd.kind == uint8(KindString):
		return n.t.text[nd.start+1 : nd.end-1]
	case nd.kind == uint8(KindEnum):
		return n.t.text[nd.aux:nd.end]
	}
	return ""
}

// Multiline reports whether a string is written as \\ lines.
func (n Node) Multiline() bool { return n.node().flags&flagMultiline != 0 }

// Int is an integer that fits in int64, or a character's code point.
func (n Node) Int() int64 {
	if nd := n.node(); nd.flags&flagBig == 0 {
		return int64(nd.val)
	}
	return 0
}

// Big is an integer that does not fit in int64; nil otherwise.
func (n Node) Big() *big.Int {
	if nd := n.node(); nd.flags&flagBig != 0 {
		return n.t.bigs[nd.aux]
	}
	return nil
}

// Float is a float's value.
func (n Node) Float() float64 { return math.Float64frombits(n.node().val) }

// Bool is a bool's value.
func (n Node) Bool() bool { return n.node().flags&flagTrue != 0 }

// ParseTree reads one ZON document into a Tree, without its comments. On
// failure the error is the *diag.Diagnostic that Parse gives.
func ParseTree(filename string, src []byte) (*Tree, error) {
	t, _, err := parseTree(filename, src, false)
	return t, err
}

// parseTree is ParseTree, keeping the comments when asked to.
func parseTree(filename string, src []byte, keepComments bool) (t *Tree, comments []Comment, err error) {
	defer func() {
		// A parser bug must never crash a batch of files: report it instead.
		if r := recover(); r != nil {
			t, comments, err = nil, nil, internalError(filename, r)
		}
	}()
	if len(src) > MaxSize {
		return nil, nil, &diag.Diagnostic{
			Span:     diag.Span{File: filename, Start: diag.Pos{Line: 1, Col: 1}},
			Severity: diag.Error, Code: CodeSyntax,
			Message: "a ZON document is at most 4 GiB",
		}
	}
	text := string(src)
	t, comments, ok := fastTree(filename, src, text, keepComments)
	if ok {
		return t, comments, nil
	}
	if d := check(filename, text); d != nil {
		return nil, nil, d
	}
	// The fast path takes every valid document; the fuzz target holds it to that.
	return nil, nil, internalError(filename, "the fast path declined a valid document")
}

func internalError(filename string, why any) *diag.Diagnostic {
	return &diag.Diagnostic{
		Span:     diag.Span{File: filename, Start: diag.Pos{Line: 1, Col: 1}},
		Severity: diag.Error, Code: CodeSyntax,
		Message: fmt.Sprintf("internal error: %v", why),
	}
}

// document turns the tree into Values, in one pass with an exact-size
// allocation for all values, one for all fields and one for all elements.
func (t *Tree) document(comments []Comment) *Document {
	m := materializer{t: t}
	m.vals = make([]Value, t.n-t.nfields)
	m.fields = make([]Field, t.nfields)
	m.elems = make([]*Value, t.nelems)
	v := m.value(0)
	return &Document{File: t.File, Src: t.Src, Value: v, Comments: comments}
}

// materializer hands out Values from exact-size slabs.
type materializer struct {
	t      *Tree
	vals   []Value
	fields []Field
	elems  []*Value
}

func (m *materializer) value(i uint32) *Value {
	t := m.t
	nd := t.node(i)
	v := &m.vals[0]
	m.vals = m.vals[1:]
	v.Kind = Kind(nd.kind)
	v.src, v.start, v.end = t.src, nd.start, nd.end
	switch v.Kind {
	case KindStruct:
		n := int(nd.val)
		v.Fields = m.fields[:n:n]
		m.fields = m.fields[n:]
		for k := 0; k < n; k++ {
			fi := t.kids[int(nd.aux)+k]
			f := t.node(fi)
			v.Fields[k] = Field{Name: t.fieldName(f), src: t.src, start: f.start, end: f.end}
			v.Fields[k].Value = m.value(fi + 1)
		}
	case KindTuple:
		n := int(nd.val)
		v.Elems = m.elems[:n:n]
		m.elems = m.elems[n:]
		for k := 0; k < n; k++ {
			v.Elems[k] = m.value(t.kids[int(nd.aux)+k])
		}
	case KindString, KindEnum:
		v.Str = Node{t, i}.Str()
		v.Multiline = nd.flags&flagMultiline != 0
	case KindInt, KindChar:
		if nd.flags&flagBig != 0 {
			v.Big = t.bigs[nd.aux]
		} else {
			v.Int = int64(nd.val)
		}
	case KindFloat:
		v.Float = math.Float64frombits(nd.val)
	case KindBool:
		v.Bool = nd.flags&flagTrue != 0
	}
	return v
}
