// Package diag holds the one diagnostic type every chock package reports with:
// a position span, a stable code, a severity, a message and an optional hint.
package diag

import (
	"fmt"
	"sort"
	"strings"
)

// Pos is a point in a source file. Line and Col are 1-based; Col counts
// bytes, as Zig's own compiler does. Offset is the 0-based byte offset.
type Pos struct {
	Line   int `json:"line"`
	Col    int `json:"col"`
	Offset int `json:"offset"`
}

// IsValid reports whether p names a real position.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Span is the extent of a node: Start inclusive, End exclusive.
type Span struct {
	File  string `json:"file,omitempty"`
	Start Pos    `json:"start"`
	End   Pos    `json:"end"`
}

// String formats the span's start as file:line:col.
func (s Span) String() string {
	file := s.File
	if file == "" {
		file = "<input>"
	}
	if !s.Start.IsValid() {
		return file
	}
	return fmt.Sprintf("%s:%d:%d", file, s.Start.Line, s.Start.Col)
}

// Severity orders how bad a diagnostic is.
type Severity int

// Severities, least severe first.
const (
	Info Severity = iota
	Warning
	Error
)

// String returns the lower-case name used in output ("error", "warning", "info").
func (s Severity) String() string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	default:
		return "info"
	}
}

// MarshalText makes a Severity encode as its name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses a severity name.
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "error":
		*s = Error
	case "warning":
		*s = Warning
	case "info":
		*s = Info
	default:
		return fmt.Errorf("unknown severity %q", b)
	}
	return nil
}

// Diagnostic is one finding about a source file. It is data; *Diagnostic is
// also an error, so a single diagnostic can be returned where an error is.
type Diagnostic struct {
	Span     Span     `json:"span"`
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Hint     string   `json:"hint,omitempty"`
}

// Error formats the diagnostic as "file:line:col: message".
func (d *Diagnostic) Error() string {
	return d.Span.String() + ": " + d.Message
}

// List is a collection of diagnostics. A non-empty List with at least one
// error is an error.
type List []*Diagnostic

// Error joins the diagnostics one per line.
func (l List) Error() string {
	var b strings.Builder
	for i, d := range l {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(d.Error())
	}
	return b.String()
}

// HasErrors reports whether any diagnostic is an error.
func (l List) HasErrors() bool { return l.Count(Error) > 0 }

// Count returns how many diagnostics have severity s.
func (l List) Count(s Severity) int {
	n := 0
	for _, d := range l {
		if d.Severity == s {
			n++
		}
	}
	return n
}

// Sort orders the list by file, offset, then code, keeping equal entries stable.
func (l List) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.Span.File != b.Span.File {
			return a.Span.File < b.Span.File
		}
		if a.Span.Start.Offset != b.Span.Start.Offset {
			return a.Span.Start.Offset < b.Span.Start.Offset
		}
		return a.Code < b.Code
	})
}

// Plural is n and noun, the noun with an s unless n is 1: "1 error",
// "2 errors", "0 notes".
func Plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
