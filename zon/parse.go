package zon

import (
	"errors"
	"fmt"
	"os"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
	"github.com/chockhq/chock/diag"
)

// Document is a parsed ZON file: its value, its source and its comments.
type Document struct {
	File     string
	Src      []byte
	Value    *Value
	Comments []Comment
}

// Parse reads one ZON document. On failure the error is a *diag.Diagnostic
// positioned where Zig's own compiler reports the problem.
func Parse(filename string, src []byte) (*Value, error) {
	doc, err := ParseDocument(filename, src)
	if err != nil {
		return nil, err
	}
	return doc.Value, nil
}

// ParseFile reads and parses the named file.
func ParseFile(filename string) (*Document, error) {
	src, err := os.ReadFile(filename)
	if err != nil {
		return nil, err
	}
	return ParseDocument(filename, src)
}

// ParseDocument is Parse, keeping the comments and source for the formatter.
func ParseDocument(filename string, src []byte) (doc *Document, err error) {
	defer func() {
		// A parser bug must never crash a batch of files: report it instead.
		if r := recover(); r != nil {
			doc = nil
			err = &diag.Diagnostic{
				Span:     diag.Span{File: filename, Start: diag.Pos{Line: 1, Col: 1}},
				Severity: diag.Error, Code: CodeSyntax,
				Message: fmt.Sprintf("internal error: %v", r),
			}
		}
	}()
	if v, comments, ok := fastParse(filename, string(src)); ok {
		return &Document{File: filename, Src: src, Value: v, Comments: comments}, nil
	}
	return parseSlow(filename, src)
}

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

// MaxDepth bounds how deeply brackets may nest, so that no input can
// exhaust the stack of either parser.
const MaxDepth = 1000

// CodeTooDeep is the diagnostic code for nesting past MaxDepth.
const CodeTooDeep = "zon-too-deep"

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
				p := diag.Pos{Line: t.line, Col: t.col, Offset: t.start}
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
