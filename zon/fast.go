package zon

// The fast path. participle's reflective engine reads about 1 MB/s, far
// below what a CI step reading a large policy wants, so well-formed documents
// are read by this small recursive-descent parser over the same tokens. It
// accepts only what the participle grammar plus gen accept (a differential
// test and a fuzz target hold it to that), and on anything unexpected it
// gives up, so that the participle path reports the error with Zig's
// position and wording.

import (
	"math"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/chockhq/chock/diag"
)

type fastParser struct {
	file string
	src  string
	// The scanner is pulled lazily; buf holds the tokens peeked at.
	sc    scanner
	buf   [4]rawTok
	nbuf  int
	depth int
	// slab hands out Values in blocks to cut allocations.
	slab []Value
}

func (p *fastParser) newValue(k Kind) *Value {
	if len(p.slab) == 0 {
		p.slab = make([]Value, 128)
	}
	v := &p.slab[0]
	p.slab = p.slab[1:]
	v.Kind = k
	return v
}

func (p *fastParser) pos(t rawTok) diag.Pos {
	return diag.Pos{Line: t.line, Col: t.col, Offset: t.start}
}

// endPos is the position just past a single-line token.
func (p *fastParser) endPos(t rawTok) diag.Pos {
	return diag.Pos{Line: t.line, Col: t.col + t.end - t.start, Offset: t.end}
}

func (p *fastParser) isPunct(t rawTok, s string) bool {
	return t.typ == tokPunct && p.src[t.start:t.end] == s
}

// fastParse parses a well-formed document, or reports ok == false. It
// returns the comments it met.
func fastParse(file, src string) (v *Value, comments []Comment, ok bool) {
	p := &fastParser{file: file, src: src, sc: scanner{src: src, line: 1}}
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		p.sc.pos = 3
	}
	v, ok = p.value()
	if !ok || p.peek(0).typ != lexer.EOF {
		return nil, nil, false
	}
	// Collect the comments after the value.
	for p.sc.pos < len(src) {
		if t, _ := p.sc.next(); t.typ != lexer.EOF {
			return nil, nil, false
		}
	}
	return v, p.sc.comments, true
}

// peek returns the token k ahead (k < 4); past the end, EOF.
func (p *fastParser) peek(k int) rawTok {
	for p.nbuf <= k {
		t, _ := p.sc.next()
		p.buf[p.nbuf] = t
		p.nbuf++
	}
	return p.buf[k]
}

// advance drops n peeked tokens.
func (p *fastParser) advance(n int) {
	p.peek(n - 1)
	copy(p.buf[:], p.buf[n:p.nbuf])
	p.nbuf -= n
}

func (p *fastParser) value() (*Value, bool) {
	t := p.peek(0)
	switch t.typ {
	case tokPunct:
		switch p.src[t.start:t.end] {
		case ".":
			n := p.peek(1)
			if n.typ == tokIdent || n.typ == tokQuotedIdent {
				name, ok := p.name(n)
				if !ok {
					return nil, false
				}
				p.advance(2)
				v := p.newValue(KindEnum)
				v.Str = name
				v.Span = diag.Span{File: p.file, Start: p.pos(t), End: p.endPos(n)}
				return v, p.plainEnd()
			}
			if p.isPunct(n, "{") {
				return p.initList(t)
			}
			return nil, false
		case "-":
			n := p.peek(1)
			var v *Value
			switch {
			case n.typ == tokNumber:
				p.advance(2)
				var ok bool
				if v, ok = p.number(n); !ok {
					return nil, false
				}
				switch {
				case v.Kind == KindFloat:
					v.Float = -v.Float
				case v.Big != nil:
					v.Big.Neg(v.Big)
					if v.Big.IsInt64() {
						v.Int, v.Big = v.Big.Int64(), nil
					}
				case v.Int == 0:
					return nil, false // -0: let the full parser explain
				default:
					v.Int = -v.Int
				}
			case n.typ == tokIdent && p.src[n.start:n.end] == "inf":
				p.advance(2)
				v = p.newValue(KindFloat)
				v.Float = math.Inf(-1)
				v.Span.End = p.endPos(n)
			default:
				return nil, false
			}
			v.Span.File = p.file
			v.Span.Start = p.pos(t)
			return v, p.plainEnd()
		}
		return nil, false
	case tokString:
		s, lerr := parseString(p.src[t.start:t.end])
		if lerr != nil {
			return nil, false
		}
		p.advance(1)
		v := p.newValue(KindString)
		v.Str = s
		v.Span = diag.Span{File: p.file, Start: p.pos(t), End: p.endPos(t)}
		return v, p.plainEnd()
	case tokMLString:
		return p.multiline()
	case tokNumber:
		p.advance(1)
		v, ok := p.number(t)
		if !ok {
			return nil, false
		}
		v.Span.File = p.file
		v.Span.Start = p.pos(t)
		return v, p.plainEnd()
	case tokChar:
		r, lerr := parseChar(p.src[t.start:t.end])
		if lerr != nil {
			return nil, false
		}
		p.advance(1)
		v := p.newValue(KindChar)
		v.Int = int64(r)
		v.Span = diag.Span{File: p.file, Start: p.pos(t), End: p.endPos(t)}
		return v, p.plainEnd()
	case tokIdent:
		var v *Value
		switch p.src[t.start:t.end] {
		case "true", "false":
			v = p.newValue(KindBool)
			v.Bool = p.src[t.start] == 't'
		case "null":
			v = p.newValue(KindNull)
		case "inf":
			v = p.newValue(KindFloat)
			v.Float = math.Inf(1)
		case "nan":
			v = p.newValue(KindFloat)
			v.Float = math.NaN()
		default:
			return nil, false
		}
		p.advance(1)
		v.Span = diag.Span{File: p.file, Start: p.pos(t), End: p.endPos(t)}
		return v, p.plainEnd()
	}
	return nil, false
}

// plainEnd checks that what follows a value cannot continue it as a Zig
// expression (an operator, a suffix or an initializer), which only the
// full parser can judge.
func (p *fastParser) plainEnd() bool {
	t := p.peek(0)
	switch t.typ {
	case lexer.EOF:
		return true
	case tokPunct:
		s := p.src[t.start:t.end]
		return s == "," || s == "}"
	}
	return false
}

func (p *fastParser) number(t rawTok) (*Value, bool) {
	n, lerr := parseNumber(p.src[t.start:t.end])
	if lerr != nil {
		return nil, false
	}
	var v *Value
	if n.isFloat {
		v = p.newValue(KindFloat)
		v.Float = n.f
	} else {
		v = p.newValue(KindInt)
		v.Int, v.Big = n.i, n.big
	}
	v.Span.End = p.endPos(t)
	return v, true
}

func (p *fastParser) multiline() (*Value, bool) {
	first := p.peek(0)
	var buf []byte
	var last rawTok
	for n := 0; p.peek(0).typ == tokMLString; n++ {
		t := p.peek(0)
		line := p.src[t.start+2 : t.end]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		if n > 0 {
			buf = append(buf, '\n')
		}
		buf = append(buf, line...)
		last = t
		p.advance(1)
	}
	v := p.newValue(KindString)
	v.Multiline = true
	v.Str = string(buf)
	end := p.endPos(last)
	if last.end > last.start && p.src[last.end-1] == '\r' {
		end.Offset--
		end.Col--
	}
	v.Span = diag.Span{File: p.file, Start: p.pos(first), End: end}
	return v, p.plainEnd()
}

// name decodes a field or enum name token; bad names go to the full parser.
func (p *fastParser) name(t rawTok) (string, bool) {
	s := p.src[t.start:t.end]
	if t.typ == tokIdent {
		return s, true
	}
	dec, lerr := parseString(s[1:])
	if lerr != nil || dec == "" {
		return "", false
	}
	for i := 0; i < len(dec); i++ {
		if dec[i] == 0 {
			return "", false
		}
	}
	return dec, true
}

// initList parses .{ ... } with the dot next.
func (p *fastParser) initList(dot rawTok) (*Value, bool) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > MaxDepth {
		return nil, false // the full parser reports it
	}
	p.advance(2) // . {
	t := p.peek(0)
	if p.isPunct(t, "}") {
		p.advance(1)
		v := p.newValue(KindEmpty)
		v.Span = diag.Span{File: p.file, Start: p.pos(dot), End: p.endPos(t)}
		return v, p.plainEnd()
	}
	n1, n2 := p.peek(1), p.peek(2)
	if p.isPunct(t, ".") && (n1.typ == tokIdent || n1.typ == tokQuotedIdent) && p.isPunct(n2, "=") {
		return p.structBody(dot)
	}
	v := p.newValue(KindTuple)
	for {
		e, ok := p.value()
		if !ok {
			return nil, false
		}
		v.Elems = append(v.Elems, e)
		if closed, ok := p.afterElement(v, dot); closed || !ok {
			return v, ok
		}
	}
}

func (p *fastParser) structBody(dot rawTok) (*Value, bool) {
	v := p.newValue(KindStruct)
	var seen map[string]struct{}
	for {
		t, n1, n2 := p.peek(0), p.peek(1), p.peek(2)
		if !p.isPunct(t, ".") || (n1.typ != tokIdent && n1.typ != tokQuotedIdent) || !p.isPunct(n2, "=") {
			return nil, false
		}
		name, ok := p.name(n1)
		if !ok {
			return nil, false
		}
		// Duplicates go to the full parser, which reports them as Zig does.
		if seen != nil {
			if _, dup := seen[name]; dup {
				return nil, false
			}
			seen[name] = struct{}{}
		} else {
			for i := range v.Fields {
				if v.Fields[i].Name == name {
					return nil, false
				}
			}
			if len(v.Fields) == 8 {
				seen = make(map[string]struct{}, 16)
				for i := range v.Fields {
					seen[v.Fields[i].Name] = struct{}{}
				}
				seen[name] = struct{}{}
			}
		}
		p.advance(3)
		fv, ok := p.value()
		if !ok {
			return nil, false
		}
		v.Fields = append(v.Fields, Field{
			Name:     name,
			NameSpan: diag.Span{File: p.file, Start: p.pos(n1), End: p.endPos(n1)},
			Value:    fv,
		})
		if closed, ok := p.afterElement(v, dot); closed || !ok {
			return v, ok
		}
	}
}

// afterElement reads what follows an element of the container v opened at
// dot: a ',' (and maybe the closing '}'), or the '}'. closed says the
// container ended; ok is false for anything else.
func (p *fastParser) afterElement(v *Value, dot rawTok) (closed, ok bool) {
	t := p.peek(0)
	if p.isPunct(t, ",") {
		p.advance(1)
		t = p.peek(0)
	} else if !p.isPunct(t, "}") {
		return false, false
	}
	if p.isPunct(t, "}") {
		p.advance(1)
		v.Span = diag.Span{File: p.file, Start: p.pos(dot), End: p.endPos(t)}
		return true, p.plainEnd()
	}
	return false, true
}
