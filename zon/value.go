// Package zon reads ZON (Zig Object Notation) as Zig's own std.zon accepts it
// (Zig 0.15): struct, tuple and empty literals, enum literals, byte strings
// with every escape, multiline strings, character literals, integers of any
// size, every float form, nan, inf, null, booleans and comments.
//
// Every Value knows the Span it was read from, so a later diagnostic can
// point at it: it keeps byte offsets, and works out the line and column
// when asked. Parse reports the first error as a *diag.Diagnostic whose
// position agrees with Zig's own compiler.
package zon

import (
	"math/big"
	"sort"

	"github.com/chockhq/chock/diag"
)

// Kind is what a Value is.
type Kind uint8

// The kinds of ZON value.
const (
	KindStruct Kind = iota // .{ .a = 1 }
	KindTuple              // .{ 1, 2 }
	KindEmpty              // .{}
	KindString             // "x" or \\x lines
	KindEnum               // .name
	KindChar               // 'x'
	KindInt                // 42, 0xff, any size
	KindFloat              // 1.5, 0x1p3, nan, inf, -inf
	KindBool               // true, false
	KindNull               // null
)

var kindNames = [...]string{"struct", "tuple", "empty literal", "string", "enum literal", "character", "integer", "float", "bool", "null"}

// String names the kind for messages ("struct", "string", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Value is one ZON value. Which fields are meaningful depends on Kind.
type Value struct {
	Kind Kind
	// Multiline is true for a string written as \\ lines.
	Multiline bool
	// Bool holds a bool.
	Bool bool

	// Where the value is written: bytes [start, end) of a document.
	start, end uint32
	src        *source

	// Fields holds a struct's fields in source order.
	Fields []Field
	// Elems holds a tuple's elements.
	Elems []*Value
	// Str holds a string's bytes (which need not be UTF-8) or an enum literal's name.
	Str string
	// Int holds an integer that fits in int64 (also a char's code point).
	Int int64
	// Big holds an integer that does not fit in int64; nil otherwise.
	Big *big.Int
	// Float holds a float, including NaN and ±Inf.
	Float float64
}

// Span is where the value is written: its file, and the line, column and
// byte offset of its first byte and of the byte past its last.
func (v *Value) Span() diag.Span { return v.src.span(v.start, v.end) }

// Field is one named field of a struct literal.
type Field struct {
	Name  string
	Value *Value

	// Where the name is written, without the leading dot.
	src        *source
	start, end uint32
}

// NameSpan is where the field's name is written, without the leading dot.
func (f *Field) NameSpan() diag.Span { return f.src.span(f.start, f.end) }

// source is a document's name and where its lines start, which its Values
// share, to work their positions out from byte offsets.
type source struct {
	file  string
	lines []uint32 // the offset where each line starts
}

// newSource indexes the lines of text.
func newSource(file, text string) *source {
	s := &source{file: file, lines: make([]uint32, 1, len(text)/32+1)}
	for i := 0; i < len(text); i++ {
		if text[i] == '\n' {
			s.lines = append(s.lines, uint32(i+1))
		}
	}
	return s
}

// pos converts a byte offset into a position.
func (s *source) pos(off uint32) diag.Pos {
	line := sort.Search(len(s.lines), func(i int) bool { return s.lines[i] > off }) - 1
	return diag.Pos{Line: line + 1, Col: int(off-s.lines[line]) + 1, Offset: int(off)}
}

// span is the span of bytes [start, end); the zero span without a source.
func (s *source) span(start, end uint32) diag.Span {
	if s == nil {
		return diag.Span{}
	}
	return diag.Span{File: s.file, Start: s.pos(start), End: s.pos(end)}
}

// Field returns the struct field named name, or nil.
func (v *Value) Field(name string) *Value {
	if v == nil {
		return nil
	}
	for i := range v.Fields {
		if v.Fields[i].Name == name {
			return v.Fields[i].Value
		}
	}
	return nil
}

// IsContainer reports whether v is a struct, tuple or empty literal.
func (v *Value) IsContainer() bool {
	return v.Kind == KindStruct || v.Kind == KindTuple || v.Kind == KindEmpty
}

// Len is the number of fields or elements of a container (0 otherwise).
func (v *Value) Len() int {
	switch v.Kind {
	case KindStruct:
		return len(v.Fields)
	case KindTuple:
		return len(v.Elems)
	}
	return 0
}

// BigInt returns an integer value as a big.Int.
func (v *Value) BigInt() *big.Int {
	if v.Big != nil {
		return new(big.Int).Set(v.Big)
	}
	return big.NewInt(v.Int)
}
