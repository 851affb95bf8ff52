package zon

import (
	"os"
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
			doc, err = nil, internalError(filename, r)
		}
	}()
	t, comments, err := parseTree(filename, src, true)
	if err != nil {
		return nil, err
	}
	return t.document(comments), nil
}

// MaxDepth bounds how deeply brackets may nest, and how deeply keyword
// expressions and function types (which nest without brackets) may, so
// that no input can exhaust the stack of a parser. The error path reports
// it at the token past the bound, unless an error comes before it.
const MaxDepth = 1000

// CodeTooDeep is the diagnostic code for nesting past MaxDepth.
const CodeTooDeep = "zon-too-deep"
