package zon

import (
	"bytes"
	"strings"
)

// Format lays a document out the way `zig fmt` writes ZON: 4-space indent;
// a container that ends in a trailing comma, or holds a comment or a
// multiline string, gets one element per line, anything else one line.
// Literals keep their source spelling, every comment is kept, a single
// blank line between elements is kept, and the value never changes.
func Format(doc *Document) []byte {
	out, _ := format(doc)
	return out
}

// format is Format, also returning how many steps it took: source bytes and
// comments looked at, elements laid out. The linearity test counts them.
func format(doc *Document) ([]byte, int) {
	f := &formatter{src: doc.Src, comments: doc.Comments, root: doc.Value, line: 1}
	f.topComments(int(doc.Value.start))
	f.value(doc.Value, 0)
	// Comments after the value.
	for f.next < len(f.comments) {
		c := f.comments[f.next]
		f.next++
		f.trailing(c, 0)
	}
	f.out.WriteByte('\n')
	return f.out.Bytes(), f.steps
}

type formatter struct {
	src      []byte
	comments []Comment
	next     int // first comment not yet written
	last     int // source offset just past what was last written
	// commentOpen is true while the output line ends in a comment: nothing
	// more may go on that line, or the comment would swallow it.
	commentOpen bool
	out         bytes.Buffer
	steps       int
	// root is the document's value. cmt and ml are where multiline's
	// searches resume in comments and in mls, the offsets of the
	// multiline strings (found on first use). lineOff and line are where
	// lineAt resumes counting lines.
	root          *Value
	cmt, ml       int
	mls           []int
	lineOff, line int
}

func (f *formatter) newline(indent int) {
	f.commentOpen = false
	f.out.WriteByte('\n')
	for i := 0; i < indent; i++ {
		f.out.WriteString("    ")
	}
}

// trailing writes a comment after what is on the line, or on a line of
// its own when it was on one in the source or a comment already ends the
// line.
func (f *formatter) trailing(c Comment, indent int) {
	if c.OwnLine || f.commentOpen {
		f.newline(indent)
	} else {
		f.out.WriteByte(' ')
	}
	f.out.WriteString(c.Text)
	f.commentOpen = true
}

// topComments writes the comments before the document's value, each on
// its own line, keeping a blank line where the source has one.
func (f *formatter) topComments(off int) {
	for f.next < len(f.comments) && f.comments[f.next].Offset < off {
		c := f.comments[f.next]
		f.next++
		if f.out.Len() > 0 && f.blankBetween(f.last, c.Offset) {
			f.out.WriteByte('\n')
		}
		f.out.WriteString(c.Text)
		f.out.WriteByte('\n')
		f.last = c.Offset + len(c.Text)
	}
	if f.out.Len() > 0 && f.blankBetween(f.last, off) {
		f.out.WriteByte('\n')
	}
}

// ownLineComments writes the comments before offset limit on lines of their
// own at indent. keepBlank says whether a blank line before the first may be kept.
func (f *formatter) ownLineComments(limit, indent int, keepBlank bool) {
	for f.next < len(f.comments) && f.comments[f.next].Offset < limit {
		f.steps++
		c := f.comments[f.next]
		f.next++
		if keepBlank && f.blankBetween(f.last, c.Offset) {
			f.out.WriteByte('\n')
		}
		keepBlank = true
		f.newline(indent)
		f.out.WriteString(c.Text)
		f.commentOpen = true
		f.last = c.Offset + len(c.Text)
	}
}

// blankBetween reports whether src[from:to] holds an empty line.
func (f *formatter) blankBetween(from, to int) bool {
	nl := -1
	for i := from; i < to; i++ {
		f.steps++
		switch f.src[i] {
		case '\n':
			if nl >= 0 {
				return true
			}
			nl = i
		case ' ', '\t', '\r':
		default:
			nl = -1
		}
	}
	return false
}

// multiline decides the layout of a container with elements es: one
// element a line when it ends in a trailing comma, or holds a comment or a
// multiline string. Containers are asked in source order, so the searches
// for comments and multiline strings resume where the last one stopped, and
// the whole layout is linear in the input.
func (f *formatter) multiline(v *Value, es []elem) bool {
	// A trailing comma is the token after the last element.
	if off := f.skipTrivia(int(es[len(es)-1].value.end)); off < len(f.src) && f.src[off] == ',' {
		return true
	}
	start, end := int(v.start), int(v.end)-1
	for f.cmt < len(f.comments) && f.comments[f.cmt].Offset <= start {
		f.cmt++
		f.steps++
	}
	if f.cmt < len(f.comments) && f.comments[f.cmt].Offset < end {
		return true
	}
	if f.mls == nil {
		f.mls = []int{}
		f.findMultiline(f.root)
	}
	for f.ml < len(f.mls) && f.mls[f.ml] < start {
		f.ml++
		f.steps++
	}
	return f.ml < len(f.mls) && f.mls[f.ml] < end
}

// findMultiline lists where the multiline strings under v start, in source
// order.
func (f *formatter) findMultiline(v *Value) {
	f.steps++
	switch v.Kind {
	case KindString:
		if v.Multiline {
			f.mls = append(f.mls, int(v.start))
		}
	case KindStruct:
		for _, fl := range v.Fields {
			f.findMultiline(fl.Value)
		}
	case KindTuple:
		for _, e := range v.Elems {
			f.findMultiline(e)
		}
	}
}

// skipTrivia returns the offset of the first byte at or after off that is
// not white space or part of a comment.
func (f *formatter) skipTrivia(off int) int {
	start := off
	defer func() { f.steps += off - start }()
	for off < len(f.src) {
		switch f.src[off] {
		case ' ', '\t', '\r', '\n':
			off++
			continue
		case '/':
			if off+1 < len(f.src) && f.src[off+1] == '/' {
				for off < len(f.src) && f.src[off] != '\n' {
					off++
				}
				continue
			}
		}
		break
	}
	return off
}

func (f *formatter) text(v *Value) []byte {
	return f.src[v.start:v.end]
}

func (f *formatter) value(v *Value, indent int) {
	switch v.Kind {
	case KindStruct, KindTuple, KindEmpty:
		f.container(v, indent)
	case KindEnum:
		f.out.WriteByte('.')
		f.out.Write(f.src[f.skipTrivia(int(v.start)+1):v.end])
	case KindString:
		if v.Multiline {
			for i, line := range strings.Split(v.Str, "\n") {
				if i > 0 {
					f.newline(indent)
				}
				f.out.WriteString(`\\`)
				f.out.WriteString(line)
			}
			return
		}
		f.out.Write(f.text(v))
	default:
		t := f.text(v)
		if len(t) > 0 && t[0] == '-' {
			f.out.WriteByte('-')
			f.out.Write(f.src[f.skipTrivia(int(v.start)+1):v.end])
			return
		}
		f.out.Write(t)
	}
}

// elemStart is where an element's source begins (a field's dot).
type elem struct {
	start int
	name  string // field name source text, "" for a tuple element
	value *Value
}

func (f *formatter) elems(v *Value) []elem {
	var es []elem
	switch v.Kind {
	case KindStruct:
		for _, fl := range v.Fields {
			dot := int(fl.start) - 1
			for dot > 0 && f.src[dot] != '.' {
				dot--
			}
			f.steps += int(fl.start) - dot
			name := string(f.src[fl.start:fl.end])
			es = append(es, elem{start: dot, name: name, value: fl.Value})
		}
	case KindTuple:
		for _, e := range v.Elems {
			es = append(es, elem{start: int(e.start), value: e})
		}
	}
	return es
}

func (f *formatter) container(v *Value, indent int) {
	es := f.elems(v)
	closeOff := int(v.end) - 1
	f.last = int(v.start) + 1
	if len(es) == 0 {
		if f.hasCommentBefore(closeOff) {
			f.out.WriteString(".{")
			f.ownLineComments(closeOff, indent+1, false)
			f.newline(indent)
			f.out.WriteString("}")
			return
		}
		f.out.WriteString(".{}")
		return
	}
	if !f.multiline(v, es) {
		if len(es) == 1 && v.Kind == KindTuple {
			f.out.WriteString(".{")
			f.elem(es[0], indent)
			f.out.WriteString("}")
			return
		}
		f.out.WriteString(".{ ")
		for i, e := range es {
			f.steps++
			if i > 0 {
				f.out.WriteString(", ")
			}
			f.elem(e, indent)
		}
		f.out.WriteString(" }")
		return
	}
	f.out.WriteString(".{")
	for i, e := range es {
		f.steps++
		// Comments before the element, on their own lines.
		wrote := f.next
		f.ownLineComments(e.start, indent+1, i > 0)
		if (i > 0 || f.next > wrote) && f.blankBetween(f.last, e.start) {
			f.out.WriteByte('\n')
		}
		f.newline(indent + 1)
		f.elem(e, indent+1)
		if e.value.Kind == KindString && e.value.Multiline {
			f.newline(indent + 1)
		}
		f.out.WriteByte(',')
		f.last = int(e.value.end)
		// A comment after the element on the same line stays there.
		endLine := e.value.src.pos(e.value.end).Line
		limit := closeOff
		if i+1 < len(es) {
			limit = es[i+1].start
		}
		for f.next < len(f.comments) {
			f.steps++
			c := f.comments[f.next]
			if c.Offset >= limit || c.OwnLine || c.Line != f.lineAfterComma(e.value, endLine) {
				break
			}
			f.next++
			f.trailing(c, indent+1)
			f.last = c.Offset + len(c.Text)
		}
	}
	// Comments after the last element.
	f.ownLineComments(closeOff, indent+1, true)
	f.newline(indent)
	f.out.WriteString("}")
}

// lineAfterComma is the line where a trailing comment of the element would
// sit: the element's last line, or for a multiline string the comma's line.
func (f *formatter) lineAfterComma(v *Value, endLine int) int {
	if v.Kind == KindString && v.Multiline {
		off := f.skipTrivia(int(v.end))
		if off < len(f.src) && f.src[off] == ',' {
			return f.lineAt(off)
		}
	}
	return endLine
}

// lineAt is the line of offset off. It is asked in source order and counts
// on from where it was last asked.
func (f *formatter) lineAt(off int) int {
	if off < f.lineOff {
		f.lineOff, f.line = 0, 1
	}
	f.steps += off - f.lineOff
	f.line += bytes.Count(f.src[f.lineOff:off], []byte{'\n'})
	f.lineOff = off
	return f.line
}

func (f *formatter) hasCommentBefore(off int) bool {
	return f.next < len(f.comments) && f.comments[f.next].Offset < off
}

func (f *formatter) elem(e elem, indent int) {
	if e.name == "" {
		f.value(e.value, indent)
		return
	}
	f.out.WriteByte('.')
	f.out.WriteString(e.name)
	if e.value.Kind == KindString && e.value.Multiline {
		f.out.WriteString(" =")
		f.newline(indent)
		f.value(e.value, indent)
		return
	}
	f.out.WriteString(" = ")
	f.value(e.value, indent)
}
