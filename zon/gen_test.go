package zon

// gen turns the Zig expression tree into a Value, rejecting everything that
// is not ZON the way Zig's ZonGen does: the outermost offending node is the
// one reported, at the token Zig reports it at. With grammar_test.go it is
// the reference the fast path (fast.go) and the error path (check.go) are
// tested against.

import (
	"fmt"
	"math"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/chockhq/chock/diag"
)

type gen struct {
	file string
	src  []byte
	// lines holds the byte offset of each line start, for offset → line:col.
	lines []int
	// at is what the Values it makes share for their positions.
	at *source
}

func newGen(file string, src []byte) *gen {
	g := &gen{file: file, src: src, lines: make([]int, 1, 64), at: newSource(file, string(src))}
	for i, b := range src {
		if b == '\n' {
			g.lines = append(g.lines, i+1)
		}
	}
	return g
}

// pos converts a byte offset into a Pos.
func (g *gen) pos(off int) diag.Pos {
	lo, hi := 0, len(g.lines)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if g.lines[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return diag.Pos{Line: lo + 1, Col: off - g.lines[lo] + 1, Offset: off}
}

func lpos(p lexer.Position) diag.Pos {
	return diag.Pos{Line: p.Line, Col: p.Column, Offset: p.Offset}
}

// span covers [start, end) given as a token position and an end offset.
func (g *gen) span(start lexer.Position, end int) diag.Span {
	return diag.Span{File: g.file, Start: lpos(start), End: g.pos(end)}
}

// place gives v the position [start, end), and checks that the span a
// Value works out from it is the one this reference works out on its own.
func (g *gen) place(v *Value, start lexer.Position, end int) *Value {
	v.src, v.start, v.end = g.at, uint32(start.Offset), uint32(end)
	if got, want := v.Span(), g.span(start, end); got != want {
		panic(fmt.Sprintf("Value.Span %+v, the reference's %+v", got, want))
	}
	return v
}

// field is a struct field named name, written from start to end.
func (g *gen) field(name string, start lexer.Position, end int) Field {
	f := Field{Name: name, src: g.at, start: uint32(start.Offset), end: uint32(end)}
	if got, want := f.NameSpan(), g.span(start, end); got != want {
		panic(fmt.Sprintf("Field.NameSpan %+v, the reference's %+v", got, want))
	}
	return f
}

func (g *gen) fail(code string, at lexer.Position, msg, hint string) *diag.Diagnostic {
	p := lpos(at)
	return &diag.Diagnostic{
		Span:     diag.Span{File: g.file, Start: p, End: p},
		Severity: diag.Error,
		Code:     code,
		Message:  msg,
		Hint:     hint,
	}
}

// failAt reports a literal error at byte off inside the token at tok.
func (g *gen) failAt(tok lexer.Position, off int, msg string) *diag.Diagnostic {
	p := tok
	p.Offset += off
	p.Column += off
	return g.fail(CodeLiteral, p, msg, "")
}

var binPrec = map[string]int{
	"or": 1, "and": 2,
	"==": 3, "!=": 3, "<": 3, ">": 3, "<=": 3, ">=": 3,
	"&": 4, "^": 4, "|": 4, "orelse": 4, "catch": 4,
	"<<": 5, ">>": 5, "<<|": 5,
	"+": 6, "-": 6, "++": 6, "+%": 6, "-%": 6, "+|": 6, "-|": 6,
	"*": 7, "/": 7, "%": 7, "**": 7, "*%": 7, "*|": 7, "||": 7,
	"!": 8,
}

func (g *gen) expr(e *astExpr) (*Value, error) {
	if len(e.Ops) > 0 {
		// The root of Zig's tree is the loosest-binding operator, the last of equals.
		root := e.Ops[0]
		for _, op := range e.Ops[1:] {
			if binPrec[op.Op] <= binPrec[root.Op] {
				root = op
			}
		}
		return nil, g.fail(CodeNotZON, root.Pos, fmt.Sprintf("operator '%s' is not allowed in ZON", root.Op), "")
	}
	return g.prefix(e.Left.Ops, e.Left.Operand)
}

func (g *gen) prefix(ops []*astPrefixOp, operand *astCurly) (*Value, error) {
	if len(ops) == 0 {
		return g.curly(operand)
	}
	op := ops[0]
	switch op.Op {
	case "-":
		if len(ops) > 1 {
			return nil, g.fail(CodeNotZON, op.Pos, "expected number or 'inf' after '-'", "")
		}
		prim := plainPrimary(operand)
		if prim == nil || (prim.Number == nil && (prim.Ident == nil || *prim.Ident != "inf")) {
			return nil, g.fail(CodeNotZON, op.Pos, "expected number or 'inf' after '-'", "")
		}
		v, err := g.primary(prim)
		if err != nil {
			return nil, err
		}
		g.place(v, op.Pos, int(v.end))
		switch v.Kind {
		case KindFloat:
			v.Float = -v.Float
		case KindInt:
			if v.Big == nil && v.Int == 0 {
				return nil, g.fail(CodeNotZON, prim.Pos, "integer literal '-0' is ambiguous",
					"use '0' for an integer zero, or '-0.0' for a floating-point signed zero")
			}
			if v.Big != nil {
				v.Big.Neg(v.Big)
				if v.Big.IsInt64() {
					v.Int, v.Big = v.Big.Int64(), nil
				}
			} else {
				v.Int = -v.Int
			}
		}
		return v, nil
	case "&":
		return nil, g.fail(CodeNotZON, op.Pos, "pointers are not available in ZON", "")
	case "try":
		return nil, g.fail(CodeNotZON, op.Pos, "control flow is not allowed in ZON", "")
	}
	return nil, g.fail(CodeNotZON, op.Pos, fmt.Sprintf("operator '%s' is not allowed in ZON", op.Op), "")
}

// plainPrimary returns the primary of an operand with no type, suffix or
// initializer around it, or nil.
func plainPrimary(c *astCurly) *astPrimary {
	if c.Init != nil || len(c.Type.Ops) > 0 || len(c.Type.Suffix.Ops) > 0 {
		return nil
	}
	return c.Type.Suffix.Primary
}

func (g *gen) curly(c *astCurly) (*Value, error) {
	if c.Init != nil {
		return nil, g.fail(CodeNotZON, typeStart(c.Type), "types are not available in ZON", "replace the type with '.'")
	}
	if len(c.Type.Ops) > 0 {
		return nil, g.fail(CodeNotZON, c.Type.Ops[0].Pos, "types are not available in ZON", "")
	}
	s := c.Type.Suffix
	if n := len(s.Ops); n > 0 {
		op := s.Ops[n-1]
		switch {
		case op.Deref:
			return nil, g.fail(CodeNotZON, op.Pos, "pointers are not available in ZON", "")
		case op.Field == "?":
			return nil, g.fail(CodeNotZON, op.Pos, "optionals are not available in ZON", "")
		case op.Field != "":
			return nil, g.fail(CodeNotZON, op.Pos, "field access is not allowed in ZON", "")
		case op.Index != nil:
			return nil, g.fail(CodeNotZON, op.Pos, "indexing is not allowed in ZON", "")
		default:
			return nil, g.fail(CodeNotZON, op.Pos, "function calls are not allowed in ZON", "")
		}
	}
	return g.primary(s.Primary)
}

func typeStart(t *astTypeExpr) lexer.Position {
	if len(t.Ops) > 0 {
		return t.Ops[0].Pos
	}
	return t.Suffix.Primary.Pos
}

func (g *gen) leaf(kind Kind, p *astPrimary, text string) *Value {
	return g.place(&Value{Kind: kind}, p.Pos, p.Pos.Offset+len(text))
}

func (g *gen) primary(p *astPrimary) (*Value, error) {
	switch {
	case p.Init != nil:
		return g.initList(p.Pos, p.Init.List)
	case p.Enum != nil:
		t := p.Enum.Name
		name, err := g.name(t.Pos, t.Value)
		if err != nil {
			return nil, err
		}
		return g.place(&Value{Kind: KindEnum, Str: name}, p.Pos, t.Pos.Offset+len(t.Value)), nil
	case p.Number != nil:
		v := g.leaf(KindInt, p, *p.Number)
		n, lerr := parseNumber(*p.Number)
		if lerr != nil {
			return nil, g.failAt(p.Pos, lerr.Off, lerr.Msg)
		}
		if n.isFloat {
			v.Kind, v.Float = KindFloat, n.f
		} else {
			v.Int, v.Big = n.i, n.big
		}
		return v, nil
	case p.String != nil:
		s, lerr := parseString(*p.String)
		if lerr != nil {
			return nil, g.failAt(p.Pos, lerr.Off, lerr.Msg)
		}
		v := g.leaf(KindString, p, *p.String)
		v.Str = s
		return v, nil
	case p.ML != nil:
		var b strings.Builder
		for i, l := range p.ML {
			t := l.Tok
			if i > 0 {
				b.WriteByte('\n')
			}
			line := t.Value[2:]
			line = strings.TrimSuffix(line, "\r")
			b.WriteString(line)
		}
		last := p.ML[len(p.ML)-1].Tok
		end := last.Pos.Offset + len(strings.TrimSuffix(last.Value, "\r"))
		return g.place(&Value{Kind: KindString, Multiline: true, Str: b.String()}, p.Pos, end), nil
	case p.Char != nil:
		r, lerr := parseChar(*p.Char)
		if lerr != nil {
			return nil, g.failAt(p.Pos, lerr.Off, lerr.Msg)
		}
		v := g.leaf(KindChar, p, *p.Char)
		v.Int = int64(r)
		return v, nil
	case p.Ident != nil:
		v := g.leaf(KindNull, p, *p.Ident)
		switch *p.Ident {
		case "true", "false":
			v.Kind, v.Bool = KindBool, *p.Ident == "true"
		case "null":
		case "inf":
			v.Kind, v.Float = KindFloat, math.Inf(1)
		case "nan":
			v.Kind, v.Float = KindFloat, math.NaN()
		default:
			return nil, g.fail(CodeNotZON, p.Pos, "invalid expression", "precede identifier with '.' for an enum literal")
		}
		return v, nil
	case p.Quoted != nil:
		return nil, g.fail(CodeNotZON, p.Pos, "invalid expression", "precede identifier with '.' for an enum literal")
	case p.Builtin != nil:
		return nil, g.fail(CodeNotZON, p.Pos, "builtin function calls are not allowed in ZON", "")
	case p.Group != nil:
		return nil, g.fail(CodeNotZON, p.Pos, "expression grouping is not allowed in ZON", "")
	case p.Block != nil:
		if len(p.Block.Stmts) == 0 {
			return nil, g.fail(CodeNotZON, p.Pos, "void literals are not available in ZON", "use an enum literal such as '.x' for a void union payload")
		}
		return nil, g.fail(CodeNotZON, p.Pos, "blocks are not allowed in ZON", "")
	case p.Container != nil, p.Fn != nil:
		return nil, g.fail(CodeNotZON, p.Pos, "types are not available in ZON", "")
	case p.Keyword != nil:
		switch k := p.Keyword.Keyword; k {
		case "comptime", "nosuspend", "resume", "suspend":
			return nil, g.fail(CodeNotZON, p.Pos, fmt.Sprintf("keyword '%s' is not allowed in ZON", k), "")
		case "error", "anyframe":
			return nil, g.fail(CodeNotZON, p.Pos, "types are not available in ZON", "")
		case "asm":
			return nil, g.fail(CodeNotZON, p.Pos, "inline asm is not allowed in ZON", "")
		default:
			return nil, g.fail(CodeNotZON, p.Pos, "control flow is not allowed in ZON", "")
		}
	}
	return nil, g.fail(CodeSyntax, p.Pos, "expected expression", "")
}

// name decodes a field or enum name token (bare or @"...").
func (g *gen) name(at lexer.Position, tok string) (string, error) {
	if tok[0] != '@' {
		return tok, nil
	}
	s, lerr := parseString(tok[1:])
	if lerr != nil {
		return "", g.failAt(at, lerr.Off+1, lerr.Msg)
	}
	if s == "" {
		return "", g.fail(CodeLiteral, at, "identifier cannot be empty", "")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", g.fail(CodeLiteral, at, "identifier cannot contain null bytes", "")
	}
	return s, nil
}

func (g *gen) initList(start lexer.Position, l *astInitList) (*Value, error) {
	end := l.Close.Pos.Offset + 1
	switch {
	case len(l.Fields) > 0:
		v := g.place(&Value{Kind: KindStruct, Fields: make([]Field, len(l.Fields))}, start, end)
		var seen map[string]int
		if len(l.Fields) > 8 {
			seen = make(map[string]int, len(l.Fields))
		}
		for i, f := range l.Fields {
			name, err := g.name(f.Name.Pos, f.Name.Value)
			if err != nil {
				return nil, err
			}
			v.Fields[i] = g.field(name, f.Name.Pos, f.Name.Pos.Offset+len(f.Name.Value))
		}
		for i := range v.Fields {
			name := v.Fields[i].Name
			first := -1
			if seen != nil {
				if j, ok := seen[name]; ok {
					first = j
				} else {
					seen[name] = i
				}
			} else {
				for j := 0; j < i; j++ {
					if v.Fields[j].Name == name {
						first = j
						break
					}
				}
			}
			if first >= 0 {
				d := g.fail(CodeDuplicate, l.Fields[first].Name.Pos, "duplicate struct field name",
					fmt.Sprintf("the field is named again at %d:%d", l.Fields[i].Name.Pos.Line, l.Fields[i].Name.Pos.Column))
				return nil, d
			}
		}
		for i, f := range l.Fields {
			fv, err := g.expr(f.Value)
			if err != nil {
				return nil, err
			}
			v.Fields[i].Value = fv
		}
		return v, nil
	case len(l.Values) > 0:
		v := g.place(&Value{Kind: KindTuple, Elems: make([]*Value, len(l.Values))}, start, end)
		for i, e := range l.Values {
			ev, err := g.expr(e)
			if err != nil {
				return nil, err
			}
			v.Elems[i] = ev
		}
		return v, nil
	}
	return g.place(&Value{Kind: KindEmpty}, start, end), nil
}
