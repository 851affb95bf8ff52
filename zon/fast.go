package zon

// The fast path. Well-formed documents are read by this small
// recursive-descent parser into a Tree. It accepts exactly what the
// participle grammar plus gen accept (a differential test and a fuzz target
// hold it to that), and on anything else it gives up, so that the error
// path (check.go) reports the error with Zig's position and wording.

import (
	"math"

	"github.com/alecthomas/participle/v2/lexer"
)

type fastParser struct {
	t   *Tree
	src string
	// The scanner is pulled lazily; ring holds the tokens peeked at,
	// from head on.
	sc    scanner
	ring  [4]rawTok
	head  int
	nbuf  int
	depth int
	// stack holds the child nodes of the open containers.
	stack []uint32
	// laneEq is where the '=' laneFieldHead found ends.
	laneEq int
}

// fastTree parses a well-formed document, or reports ok == false. It
// returns the comments it met when keepComments is set.
func fastTree(file string, src []byte, text string, keepComments bool) (t *Tree, comments []Comment, ok bool) {
	p := &fastParser{
		t:   &Tree{File: file, Src: src, text: text},
		src: text,
		sc:  scanner{src: text, line: 1, noComments: !keepComments},
	}
	if len(text) >= 3 && text[0] == 0xEF && text[1] == 0xBB && text[2] == 0xBF {
		p.sc.pos = 3
	}
	if _, ok = p.value(); !ok || p.peek(0).typ != lexer.EOF {
		return nil, nil, false
	}
	// Collect the comments after the value.
	for p.sc.pos < len(text) {
		if t, _ := p.sc.next(); t.typ != lexer.EOF {
			return nil, nil, false
		}
	}
	p.t.indexLines()
	return p.t, p.sc.comments, true
}

// fastParse is the fast path to Values.
func fastParse(file, src string) (v *Value, comments []Comment, ok bool) {
	t, comments, ok := fastTree(file, []byte(src), src, true)
	if !ok {
		return nil, nil, false
	}
	return t.document(comments).Value, comments, true
}

// peek returns the token k ahead (k < 4); past the end, EOF.
func (p *fastParser) peek(k int) *rawTok {
	for p.nbuf <= k {
		p.ring[(p.head+p.nbuf)&3], _ = p.sc.next()
		p.nbuf++
	}
	return &p.ring[(p.head+k)&3]
}

// advance drops n peeked tokens.
func (p *fastParser) advance(n int) {
	p.peek(n - 1)
	p.head = (p.head + n) & 3
	p.nbuf -= n
}

// is reports whether t is the one-byte punctuation c.
func (p *fastParser) is(t *rawTok, c byte) bool {
	return t.typ == tokPunct && t.end == t.start+1 && p.src[t.start] == c
}

func isName(t *rawTok) bool { return t.typ == tokIdent || t.typ == tokQuotedIdent }

// value parses one value and returns its node.
func (p *fastParser) value() (uint32, bool) {
	if nd, ok := p.laneValue(); ok {
		return p.t.add(nd), p.plainEnd()
	}
	if p.nbuf == 0 && p.sc.pos+1 < len(p.src) && p.src[p.sc.pos] == '.' && p.src[p.sc.pos+1] == '{' {
		// laneValue left the white space skipped: .{ is next, two tokens.
		dot := p.sc.pos
		p.sc.pos += 2
		return p.initListBody(dot)
	}
	t := p.peek(0)
	switch t.typ {
	case tokPunct:
		switch {
		case p.is(t, '.'):
			n := p.peek(1)
			if isName(n) {
				dot, nameStart, end := t.start, n.start, n.end
				nd := node{kind: uint8(KindEnum), start: uint32(dot), end: uint32(end), aux: uint32(nameStart)}
				if n.typ == tokQuotedIdent {
					name, ok := p.quotedName(n)
					if !ok {
						return 0, false
					}
					nd.flags, nd.aux = flagStr, p.str(name)
				}
				p.advance(2)
				return p.t.add(nd), p.plainEnd()
			}
			if p.is(n, '{') {
				return p.initList()
			}
			return 0, false
		case p.is(t, '-'):
			minus := t.start
			n := p.peek(1)
			switch {
			case n.typ == tokNumber:
				nd, ok := p.number(n)
				if !ok {
					return 0, false
				}
				switch {
				case nd.kind == uint8(KindFloat):
					nd.val = math.Float64bits(-math.Float64frombits(nd.val))
				case nd.flags&flagBig != 0:
					b := p.t.bigs[nd.aux]
					b.Neg(b)
					if b.IsInt64() {
						p.t.bigs = p.t.bigs[:nd.aux]
						nd.flags, nd.aux, nd.val = 0, 0, uint64(b.Int64())
					}
				case nd.val == 0:
					return 0, false // -0: let the error path explain
				default:
					nd.val = uint64(-int64(nd.val))
				}
				nd.start = uint32(minus)
				p.advance(2)
				return p.t.add(nd), p.plainEnd()
			case n.typ == tokIdent && p.src[n.start:n.end] == "inf":
				nd := node{kind: uint8(KindFloat), start: uint32(minus), end: uint32(n.end), val: math.Float64bits(math.Inf(-1))}
				p.advance(2)
				return p.t.add(nd), p.plainEnd()
			}
		}
		return 0, false
	case tokString:
		nd := node{kind: uint8(KindString), start: uint32(t.start), end: uint32(t.end)}
		tok := p.src[t.start:t.end]
		if containsByte(tok, '\\') {
			s, lerr := parseString(tok)
			if lerr != nil {
				return 0, false
			}
			nd.flags, nd.aux = flagStr, p.str(s)
		}
		p.advance(1)
		return p.t.add(nd), p.plainEnd()
	case tokMLString:
		return p.multiline()
	case tokNumber:
		nd, ok := p.number(t)
		if !ok {
			return 0, false
		}
		p.advance(1)
		return p.t.add(nd), p.plainEnd()
	case tokChar:
		r, lerr := parseChar(p.src[t.start:t.end])
		if lerr != nil {
			return 0, false
		}
		nd := node{kind: uint8(KindChar), start: uint32(t.start), end: uint32(t.end), val: uint64(r)}
		p.advance(1)
		return p.t.add(nd), p.plainEnd()
	case tokIdent:
		nd := node{start: uint32(t.start), end: uint32(t.end)}
		switch p.src[t.start:t.end] {
		case "true":
			nd.kind, nd.flags = uint8(KindBool), flagTrue
		case "false":
			nd.kind = uint8(KindBool)
		case "null":
			nd.kind = uint8(KindNull)
		case "inf":
			nd.kind, nd.val = uint8(KindFloat), math.Float64bits(math.Inf(1))
		case "nan":
			nd.kind, nd.val = uint8(KindFloat), math.Float64bits(math.NaN())
		default:
			return 0, false
		}
		p.advance(1)
		return p.t.add(nd), p.plainEnd()
	}
	return 0, false
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// str keeps a string that is not a slice of the source.
func (p *fastParser) str(s string) uint32 {
	p.t.strs = append(p.t.strs, s)
	return uint32(len(p.t.strs) - 1)
}

// plainEnd checks that what follows a value cannot continue it as a Zig
// expression (an operator, a suffix or an initializer), which only the
// error path can judge.
func (p *fastParser) plainEnd() bool {
	if p.nbuf == 0 && p.space() {
		if c := p.sc.src[p.sc.pos]; c == ',' || c == '}' {
			return true
		}
	}
	t := p.peek(0)
	return t.typ == lexer.EOF || p.is(t, ',') || p.is(t, '}')
}

// number decodes a number token into a node spanning it.
func (p *fastParser) number(t *rawTok) (node, bool) {
	n, lerr := parseNumber(p.src[t.start:t.end])
	if lerr != nil {
		return node{}, false
	}
	nd := node{kind: uint8(KindInt), start: uint32(t.start), end: uint32(t.end)}
	switch {
	case n.isFloat:
		nd.kind, nd.val = uint8(KindFloat), math.Float64bits(n.f)
	case n.big != nil:
		p.t.bigs = append(p.t.bigs, n.big)
		nd.flags, nd.aux = flagBig, uint32(len(p.t.bigs)-1)
	default:
		nd.val = uint64(n.i)
	}
	return nd, true
}

func (p *fastParser) multiline() (uint32, bool) {
	first := p.peek(0)
	nd := node{kind: uint8(KindString), flags: flagMultiline | flagStr, start: uint32(first.start)}
	var buf []byte
	for n := 0; p.peek(0).typ == tokMLString; n++ {
		t := p.peek(0)
		line := p.src[t.start+2 : t.end]
		end := t.end
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
			end--
		}
		if n > 0 {
			buf = append(buf, '\n')
		}
		buf = append(buf, line...)
		nd.end = uint32(end)
		p.advance(1)
	}
	nd.aux = p.str(string(buf))
	return p.t.add(nd), p.plainEnd()
}

// quotedName decodes an @"..." name; bad names go to the error path.
func (p *fastParser) quotedName(t *rawTok) (string, bool) {
	dec, lerr := parseString(p.src[t.start+1 : t.end])
	if lerr != nil || dec == "" || containsByte(dec, 0) {
		return "", false
	}
	return dec, true
}

// initList parses .{ ... } with the dot next.
func (p *fastParser) initList() (uint32, bool) {
	dot := p.peek(0).start
	p.advance(2) // . {
	return p.initListBody(int(dot))
}

// initListBody parses a container from what follows its .{, the dot at
// offset dot.
func (p *fastParser) initListBody(dot int) (uint32, bool) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > MaxDepth {
		return 0, false // the error path reports it
	}
	kind := KindTuple
	if _, _, ok := p.laneFieldHead(); ok {
		kind = KindStruct
	} else {
		t := p.peek(0)
		if p.is(t, '}') {
			nd := node{kind: uint8(KindEmpty), start: uint32(dot), end: uint32(t.end)}
			p.advance(1)
			return p.t.add(nd), p.plainEnd()
		}
		if p.is(t, '.') && isName(p.peek(1)) && p.is(p.peek(2), '=') {
			kind = KindStruct
		}
	}
	self := p.t.add(node{kind: uint8(kind), start: uint32(dot)})
	base := len(p.stack)
	var ok bool
	if kind == KindStruct {
		ok = p.structBody(base)
	} else {
		ok = p.tupleBody()
	}
	if !ok {
		return 0, false
	}
	// The closing brace is next.
	var end uint32
	if p.nbuf == 0 && p.space() && p.src[p.sc.pos] == '}' {
		p.sc.pos++
		end = uint32(p.sc.pos)
	} else {
		end = p.peek(0).end
		p.advance(1)
	}
	nd := p.t.node(self)
	nd.end = uint32(end)
	nd.aux = uint32(len(p.t.kids))
	nd.val = uint64(len(p.stack) - base)
	if kind == KindTuple {
		p.t.nelems += len(p.stack) - base
	}
	p.t.kids = append(p.t.kids, p.stack[base:]...)
	p.stack = p.stack[:base]
	return self, p.plainEnd()
}

func (p *fastParser) tupleBody() bool {
	for {
		e, ok := p.value()
		if !ok {
			return false
		}
		p.stack = append(p.stack, e)
		if closed, ok := p.afterElement(); closed || !ok {
			return ok
		}
	}
}

// structBody parses the fields of a struct whose children start at
// p.stack[base].
func (p *fastParser) structBody(base int) bool {
	var names map[string]struct{}
	for {
		var f node
		var name string
		if start, end, ok := p.laneFieldHead(); ok {
			p.sc.pos = p.laneEq
			f = node{kind: kindField, start: uint32(start), end: uint32(end)}
			name = p.src[start:end]
		} else {
			t, n1, n2 := p.peek(0), p.peek(1), p.peek(2)
			if !p.is(t, '.') || !isName(n1) || !p.is(n2, '=') {
				return false
			}
			f = node{kind: kindField, start: uint32(n1.start), end: uint32(n1.end)}
			name = p.src[n1.start:n1.end]
			if n1.typ == tokQuotedIdent {
				var ok bool
				if name, ok = p.quotedName(n1); !ok {
					return false
				}
				f.flags, f.aux = flagStr, p.str(name)
			}
			p.advance(3)
		}
		// Duplicates go to the error path, which reports them as Zig does.
		nfields := len(p.stack) - base
		if names != nil {
			if _, dup := names[name]; dup {
				return false
			}
			names[name] = struct{}{}
		} else {
			for _, k := range p.stack[base:] {
				if p.t.fieldName(p.t.node(k)) == name {
					return false
				}
			}
			if nfields == 8 {
				names = make(map[string]struct{}, 16)
				for _, k := range p.stack[base:] {
					names[p.t.fieldName(p.t.node(k))] = struct{}{}
				}
				names[name] = struct{}{}
			}
		}
		p.stack = append(p.stack, p.t.add(f))
		if _, ok := p.value(); !ok {
			return false
		}
		if closed, ok := p.afterElement(); closed || !ok {
			return ok
		}
	}
}

// afterElement reads what follows an element: a ',' (and maybe the
// closing '}'), or the '}', which it leaves next. closed says the container
// ends; ok is false for anything else.
func (p *fastParser) afterElement() (closed, ok bool) {
	if p.nbuf == 0 && p.space() {
		switch p.sc.src[p.sc.pos] {
		case ',':
			p.sc.pos++
			if p.space() {
				return p.sc.src[p.sc.pos] == '}', true
			}
			return p.is(p.peek(0), '}'), true
		case '}':
			return true, true
		}
	}
	t := p.peek(0)
	if p.is(t, ',') {
		p.advance(1)
		t = p.peek(0)
	} else if !p.is(t, '}') {
		return false, false
	}
	return p.is(t, '}'), true
}

// The lane: the commonest shapes read straight from the bytes, with no
// token, while no token is peeked. Each recognises its shape whole, or
// leaves everything as it was, but for the white space it skipped, which
// the scanner skips alike (lines counted, comments kept), for the token
// path.

// space skips white space and comments as the scanner does, and says
// whether a byte the lane may read follows: not the end, not a '/' that
// starts no comment, not a comment that is a token (a doc comment, or one
// the scanner calls invalid), which it leaves peeked.
func (p *fastParser) space() bool {
	s := &p.sc
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case ' ', '\t', '\r':
			s.pos++
		case '\n':
			s.pos++
			s.line++
			s.lineStart = s.pos
		case '/':
			if s.pos+1 >= len(s.src) || s.src[s.pos+1] != '/' {
				return false
			}
			if t, isTok := s.comment(); isTok {
				p.ring[p.head] = t
				p.nbuf = 1
				return false
			}
		default:
			return true
		}
	}
	return false
}

// laneIdent is the end of the plain identifier (not a keyword) that
// starts at i, or -1.
func (p *fastParser) laneIdent(i int) int {
	src := p.src
	if i >= len(src) || !isIdentStart(src[i]) {
		return -1
	}
	j := i + 1
	for j < len(src) && isIdentChar(src[j]) {
		j++
	}
	if isKeyword(src[i:j]) {
		return -1
	}
	return j
}

// laneFieldHead reports whether `.name =` comes next, a plain name and
// '=' alone (not == or =>), with blanks between but no line end; it
// returns the name's offsets and leaves where the '=' ends in p.laneEq,
// consuming nothing.
func (p *fastParser) laneFieldHead() (start, end int, ok bool) {
	if p.nbuf != 0 || !p.space() {
		return 0, 0, false
	}
	src, i := p.src, p.sc.pos
	if src[i] != '.' {
		return 0, 0, false
	}
	j := p.laneIdent(i + 1)
	if j < 0 {
		return 0, 0, false
	}
	k := j
	for k < len(src) && (src[k] == ' ' || src[k] == '\t') {
		k++
	}
	if k >= len(src) || src[k] != '=' || k+1 < len(src) && (src[k+1] == '=' || src[k+1] == '>') {
		return 0, 0, false
	}
	p.laneEq = k + 1
	return i + 1, j, true
}

// laneValue reads a string without escapes, or an enum literal with a
// plain name, and returns its node.
func (p *fastParser) laneValue() (node, bool) {
	if p.nbuf != 0 || !p.space() {
		return node{}, false
	}
	src, i := p.src, p.sc.pos
	switch src[i] {
	case '"':
		j := i + 1
		for j < len(src) && src[j] != '"' && src[j] != '\\' && src[j] >= 0x20 && src[j] != 0x7f {
			j++
		}
		if j < len(src) && src[j] == '"' {
			p.sc.pos = j + 1
			return node{kind: uint8(KindString), start: uint32(i), end: uint32(j + 1)}, true
		}
	case '.':
		if j := p.laneIdent(i + 1); j >= 0 {
			p.sc.pos = j
			return node{kind: uint8(KindEnum), start: uint32(i), end: uint32(j), aux: uint32(i + 1)}, true
		}
	}
	return node{}, false
}
