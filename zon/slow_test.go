package zon

// The participle path: the reference the fast path and the error path are
// held to by the differential tests and the fuzz target. Production code
// does not use it: participle's engine bounds every repetition at
// participle.MaxIterations elements (a package-level setting) and needs
// hundreds of bytes per token, so check.go ports its matching rules to a
// streaming reader instead.

import (
	"errors"
	"fmt"
	"io"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
	"github.com/chockhq/chock/diag"
)

// parseSlow runs the participle grammar and the ZON checks. It is the
// reference the fast path is tested against, and the path that words errors.
func parseSlow(filename string, src []byte) (*Document, error) {
	if err := checkDepth(filename, src); err != nil {
		return nil, err
	}
	toks, comments := tokenize(filename, src)
	g := newGen(filename, src)
	plex, lerr := lexer.Upgrade(&sliceLexer{toks: toks})
	if lerr != nil {
		return nil, lerr
	}
	ast, perr := zonParser.ParseFromLexer(plex)
	if perr != nil {
		return nil, g.syntaxError(toks, perr)
	}
	v, gerr := g.expr(ast.Expr)
	if gerr != nil {
		return nil, gerr
	}
	return &Document{File: filename, Src: src, Value: v, Comments: comments}, nil
}

func checkDepth(filename string, src []byte) error {
	text := string(src)
	toks, _ := scanAll(text)
	depth := 0
	for _, t := range toks {
		if t.typ != tokPunct {
			continue
		}
		switch text[t.start:t.end] {
		case "{", "(", "[":
			depth++
			if depth > MaxDepth {
				p := diag.Pos{Line: int(t.line), Col: int(t.col), Offset: int(t.start)}
				return &diag.Diagnostic{
					Span:     diag.Span{File: filename, Start: p, End: p},
					Severity: diag.Error, Code: CodeTooDeep,
					Message: fmt.Sprintf("nesting deeper than %d levels", MaxDepth),
				}
			}
		case "}", ")", "]":
			depth--
		}
	}
	return nil
}

// syntaxError turns a participle error into a Zig-worded diagnostic.
func (g *gen) syntaxError(toks []lexer.Token, err error) error {
	var perr participle.Error
	if !errors.As(err, &perr) {
		return err
	}
	at := perr.Position()
	// Find the offending token and the one before it.
	idx := len(toks) - 1
	for i, t := range toks {
		if t.Pos.Offset >= at.Offset {
			idx = i
			break
		}
	}
	found := toks[idx]
	msg := "expected expression, found " + tokenDescription(found)
	if idx > 0 {
		prev := toks[idx-1]
		depth := 0
		for _, t := range toks[:idx] {
			if t.Type == tokPunct {
				switch t.Value {
				case "{", "(", "[":
					depth++
				case "}", ")", "]":
					depth--
				}
			}
		}
		endsValue := prev.Type != tokPunct || prev.Value == "}" || prev.Value == ")" || prev.Value == "]" || prev.Value == ".*"
		switch {
		case prev.Type == tokPunct && prev.Value == "." && found.Type != tokInvalid:
			msg = "expected pointer dereference, optional unwrap, or field access, found " + tokenDescription(found)
		case endsValue && prev.Type != tokKeyword && depth == 0:
			msg = "expected 'EOF', found " + tokenDescription(found)
		case endsValue && prev.Type != tokKeyword:
			msg = "expected ',' after initializer"
		case prev.Type == tokPunct && prev.Value == "," && found.Type == tokPunct && found.Value != "}":
			msg = "expected field initializer or expression, found " + tokenDescription(found)
		}
	}
	p := lpos(found.Pos)
	if idx > 0 && toks[idx-1].Pos.Line != found.Pos.Line {
		// Like Zig, point just past the previous token when the offending
		// one starts a new line: that is where something is missing.
		prev := toks[idx-1]
		p = g.pos(prev.Pos.Offset + len(prev.Value))
	}
	return &diag.Diagnostic{
		Span:     diag.Span{File: g.file, Start: p, End: p},
		Severity: diag.Error,
		Code:     CodeSyntax,
		Message:  msg,
	}
}

func symbols() map[string]lexer.TokenType {
	return map[string]lexer.TokenType{
		"EOF":         lexer.EOF,
		"Ident":       tokIdent,
		"QuotedIdent": tokQuotedIdent,
		"Keyword":     tokKeyword,
		"Builtin":     tokBuiltin,
		"String":      tokString,
		"MLString":    tokMLString,
		"Char":        tokChar,
		"Number":      tokNumber,
		"Punct":       tokPunct,
		"Invalid":     tokInvalid,
		"DocComment":  tokDocComment,
	}
}

// tokenDescription is how an error names a token kind, in Zig's words.
func tokenDescription(t lexer.Token) string { return describeToken(t.Type, t.Value) }

// lexDef is the participle lexer.Definition. Parsing goes through Lex, which
// also returns the comments; participle only sees the tokens.
type lexDef struct{}

func (lexDef) Symbols() map[string]lexer.TokenType { return symbols() }

func (lexDef) Lex(filename string, r io.Reader) (lexer.Lexer, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	toks, _ := tokenize(filename, src)
	return &sliceLexer{toks: toks}, nil
}

// sliceLexer hands out pre-made tokens.
type sliceLexer struct {
	toks []lexer.Token
	i    int
}

func (l *sliceLexer) Next() (lexer.Token, error) {
	t := l.toks[l.i]
	if l.i < len(l.toks)-1 {
		l.i++
	}
	return t, nil
}

// scanAll splits src into raw tokens (EOF last) and comments.
func scanAll(src string) ([]rawTok, []Comment) {
	s := scanner{src: src, line: 1}
	toks := make([]rawTok, 0, len(src)/6+2)
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		s.pos = 3
	}
	for {
		t, ok := s.next()
		toks = append(toks, t)
		if !ok {
			return toks, s.comments
		}
	}
}

// tokenize splits src into participle tokens (EOF last) and comments.
func tokenize(filename string, src []byte) ([]lexer.Token, []Comment) {
	text := string(src)
	raw, comments := scanAll(text)
	toks := make([]lexer.Token, len(raw))
	for i, r := range raw {
		toks[i] = lexer.Token{
			Type:  r.typ,
			Value: text[r.start:r.end],
			Pos:   lexer.Position{Filename: filename, Offset: int(r.start), Line: int(r.line), Column: int(r.col)},
		}
	}
	return toks, comments
}
