package zon

import (
	"fmt"
	"os"

	"github.com/chockhq/chock/diag"
)

// Diagnostic codes for ZON syntax errors.
const (
	CodeSyntax    = "zon-syntax"    // the text is not a Zig expression
	CodeNotZON    = "zon-not-zon"   // a Zig expression ZON does not allow
	CodeLiteral   = "zon-literal"   // a malformed number, string, char or name
	CodeDuplicate = "zon-duplicate" // a struct names a field twice
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
	text := string(src)
	if v, comments, ok := fastParse(filename, text); ok {
		return &Document{File: filename, Src: src, Value: v, Comments: comments}, nil
	}
	if d := check(filename, text); d != nil {
		return nil, d
	}
	// The fast path takes every valid document; the fuzz target holds it to that.
	return nil, &diag.Diagnostic{
		Span:     diag.Span{File: filename, Start: diag.Pos{Line: 1, Col: 1}},
		Severity: diag.Error, Code: CodeSyntax,
		Message: "internal error: the fast path declined a valid document",
	}
}

// MaxDepth bounds how deeply brackets may nest, and how deeply keyword
// expressions and function types (which nest without brackets) may, so
// that no input can exhaust the stack of a parser. The error path reports
// it at the token past the bound, unless an error comes before it.
const MaxDepth = 1000

// CodeTooDeep is the diagnostic code for nesting past MaxDepth.
const CodeTooDeep = "zon-too-deep"
