package config

import (
	"fmt"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/zon"
)

// The fields of every block, each written once: a block is one table of
// fields, which the decoder walks (the fields it knows, the unknown-field
// diagnostics and their did-you-mean, the fields an entry needs) and the
// reference (reference.go, and from it docs/chock-zon.md) reads.

// outcome is what decoding one field gave.
type outcome uint8

const (
	// fieldRead: the field is read.
	fieldRead outcome = iota
	// fieldWrong: the field is written but wrong; the entry holding it is
	// dropped once all its problems are reported.
	fieldWrong
	// fieldUnread: the value could not be read at all (the wrong type); a
	// field the entry needs counts as missing.
	fieldUnread
)

// fieldDef is one field of a block whose model is T: its reference entry,
// and how the decoder reads it into the model.
type fieldDef[T any] struct {
	RefField
	// need, for a field the block must have, is what the missing-field
	// hint tells the file to add; the reference's default is then
	// "required".
	need string
	// refused says the block may not hold the field: decode only reports
	// it, and the reference and the known-field hints leave it out.
	refused bool
	// decode reads the field f into x, reporting its problems.
	decode func(d *decoder, f field, x *T) outcome
}

// block is one table of fields: a struct of chock.zon or org.zon, or each
// entry of a list of structs, and what the reference says of it as a
// whole.
type block[T any] struct {
	// what names the block in diagnostics: "a secret", ".policy".
	what string
	// open says other parts of Chock read fields of the block too: an
	// unknown field is then reported only when it is a near miss of a
	// known one (an unknown block), in the order the fields are read.
	open bool
	// summary, example (a whole document that writes every field) and
	// codes (the lint codes about the block as a whole) are the block's
	// RefBlock.
	summary, example string
	codes            []string
	fields           []fieldDef[T]
	// known are the names of the fields the block may hold, in table
	// order; hint is the unknown-field hint that lists them.
	known []string
	hint  string
}

// newBlock fills in what b's fields give: the known fields and the hint.
func newBlock[T any](b *block[T]) *block[T] {
	for _, f := range b.fields {
		if !f.refused {
			b.known = append(b.known, f.Name)
		}
	}
	b.hint = "known fields: ." + strings.Join(b.known, ", .")
	return b
}

// ref is the block's reference, as it stands in file at path.
func (b *block[T]) ref(file, path string) RefBlock {
	out := RefBlock{File: file, Path: path, Summary: b.summary, Example: b.example, Codes: b.codes}
	for _, f := range b.fields {
		if f.refused {
			continue
		}
		r := f.RefField
		if f.need != "" {
			r.Default = "required"
		}
		out.Fields = append(out.Fields, r)
	}
	return out
}

// index is the place of the field named name in the table, or -1.
func (b *block[T]) index(name string) int {
	for i := range b.fields {
		if b.fields[i].Name == name {
			return i
		}
	}
	return -1
}

// given is the set of fields, by their place in the table, written with a
// value that could be read.
type given uint64

func (g given) has(i int) bool { return g&(1<<i) != 0 }

// decode reads the fields of struct v (an empty literal counts as one with
// no fields) into x. A field not in the table is reported: an unknown
// field with a did-you-mean, all of them first; in an open block only a
// near miss, as an unknown block, where it stands. ok is false when a
// field is wrong.
func (b *block[T]) decode(d *decoder, v zon.Node, x *T) (g given, ok bool) {
	n := d.structLen(v, b.what)
	if !b.open {
		for i := 0; i < n; i++ {
			if name := v.FieldName(i); b.index(name) < 0 {
				hint := b.hint
				if near := action.Nearest(name, b.known); near != "" {
					hint = fmt.Sprintf("did you mean .%s?", near)
				}
				d.add(v.FieldNameSpan(i), diag.Error, CodeUnknownField, fmt.Sprintf("unknown field .%s in %s", name, b.what), hint)
			}
		}
	}
	ok = true
	for i := 0; i < n; i++ {
		f := field{Name: v.FieldName(i), Value: v.FieldValue(i), strct: v, index: i}
		j := b.index(f.Name)
		if j < 0 {
			// A closed block's unknown fields are reported above.
			if b.open {
				if near := action.Nearest(f.Name, b.known); near != "" {
					d.add(f.NameSpan(), diag.Error, CodeUnknownBlock,
						fmt.Sprintf("unknown block .%s", f.Name), fmt.Sprintf("did you mean .%s?", near))
				}
			}
			continue
		}
		switch b.fields[j].decode(d, f, x) {
		case fieldRead:
			g |= 1 << j
		case fieldWrong:
			g |= 1 << j
			ok = false
		case fieldUnread:
			g &^= 1 << j
		}
	}
	return g, ok
}

// entry decodes v, an entry of a list of structs, into x: false when v is
// not a struct, lacks a field the block needs (each reported at the
// entry's start) or has a wrong one.
func (b *block[T]) entry(d *decoder, v zon.Node, x *T) bool {
	g, ok := b.decode(d, v, x)
	if !isStruct(v) {
		return false
	}
	for j, f := range b.fields {
		if f.need != "" && !g.has(j) {
			d.add(startSpan(v.Span()), diag.Error, CodeMissingField, fmt.Sprintf("%s needs .%s", b.what, f.Name), "add "+f.need)
			ok = false
		}
	}
	return ok
}

// entries appends to dst each entry of the list v (what names it) that b
// decodes, each into the T that start makes for it.
func entries[T any](d *decoder, dst []*T, v zon.Node, what string, b *block[T], start func(zon.Node) *T) []*T {
	for j, n := 0, d.listLen(v, what); j < n; j++ {
		e := v.Elem(j)
		if x := start(e); b.entry(d, e, x) {
			dst = append(dst, x)
		}
	}
	return dst
}

// list decodes a list of b's entries, named what, into the slice of T
// that at gives, each entry starting as start makes it.
func list[T, E any](what string, b *block[E], start func(zon.Node) *E, at func(*T) *[]*E) func(*decoder, field, *T) outcome {
	return func(d *decoder, f field, x *T) outcome {
		p := at(x)
		*p = entries(d, *p, f.Value, what, b, start)
		return fieldRead
	}
}

// text decodes a string field, named what, into the Text of T that at
// gives.
func text[T any](what string, at func(*T) *Text) func(*decoder, field, *T) outcome {
	return func(d *decoder, f field, x *T) outcome {
		var ok bool
		*at(x), ok = d.text(f.Value, what)
		return readText(ok)
	}
}

// texts decodes a list of strings, named what, each element elem, into
// the field of T that at gives.
func texts[T any](what, elem string, at func(*T) *Field[[]Text]) func(*decoder, field, *T) outcome {
	return func(d *decoder, f field, x *T) outcome {
		out := Field[[]Text]{Set: true, Span: f.Value.Span()}
		for j, n := 0, d.listLen(f.Value, what); j < n; j++ {
			if t, ok := d.text(f.Value.Elem(j), elem); ok {
				out.Value = append(out.Value, t)
			}
		}
		*at(x) = out
		return fieldRead
	}
}

// readText is the outcome of reading a string: fieldUnread when it is not
// one.
func readText(ok bool) outcome {
	if ok {
		return fieldRead
	}
	return fieldUnread
}

// wrongUnless is fieldWrong unless ok.
func wrongUnless(ok bool) outcome {
	if ok {
		return fieldRead
	}
	return fieldWrong
}
