package diag

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/chockhq/chock/internal/safetext"
)

// Sources maps a file name to its contents, for source excerpts.
type Sources map[string][]byte

// lineIndex finds lines of the source files, indexing each file once.
type lineIndex struct {
	src   Sources
	index map[string][]int // line start offsets
}

// line returns 1-based line n of file, without its line end.
func (x *lineIndex) line(file string, n int) (string, bool) {
	src, ok := x.src[file]
	if !ok || n < 1 {
		return "", false
	}
	starts, ok := x.index[file]
	if !ok {
		starts = []int{0}
		for i, c := range src {
			if c == '\n' {
				starts = append(starts, i+1)
			}
		}
		x.index[file] = starts
	}
	if n > len(starts) {
		return "", false
	}
	end := len(src)
	if n < len(starts) {
		end = starts[n] - 1
	}
	return strings.TrimSuffix(string(src[starts[n-1]:end]), "\r"), true
}

// WriteText writes each diagnostic as
//
//	file:line:col: severity: message [code]
//	    hint: ...
//	   12 | source line
//	      |       ^~~~
func WriteText(w io.Writer, l List, src Sources) error {
	lines := &lineIndex{src: src, index: map[string][]int{}}
	for _, d := range l {
		fmt.Fprintf(w, "%s: %s: %s [%s]\n", safetext.Line(d.Span.String()), d.Severity, safetext.Line(d.Message), d.Code)
		if d.Hint != "" {
			fmt.Fprintf(w, "    hint: %s\n", safetext.Line(d.Hint))
		}
		if text, ok := lines.line(d.Span.File, d.Span.Start.Line); ok && d.Span.Start.IsValid() {
			Excerpt(w, text, d.Span)
		}
	}
	return nil
}

// excerptWidth bounds a shown source line, in characters: a longer line
// (a binary file is often one) is cut around the caret.
const excerptWidth = 160

// Excerpt writes one source line and a caret under the span's start (and
// tildes to its end when the span stays on the line). The line is shown
// through the one printer for untrusted text, control characters as
// \xNN, and the caret stays under the character it points at.
func Excerpt(w io.Writer, text string, s Span) {
	num := fmt.Sprint(s.Start.Line)
	pad := strings.Repeat(" ", len(num))
	col := min(max(s.Start.Col-1, 0), len(text))
	end := min(col+1, len(text))
	if s.End.Line == s.Start.Line && s.End.Col > s.Start.Col+1 {
		end = min(s.End.Col-1, len(text))
	}
	// Escape the three parts apart, so the caret and tildes count the
	// characters as shown; a tab keeps its width under the caret.
	// (A source line holds no line break.)
	before, span, after := safetext.Text(text[:col]), safetext.Text(text[col:max(end, col)]), safetext.Text(text[max(end, col):])
	shown, at := safetext.Trim(before+span+after, utf8.RuneCountInString(before), excerptWidth)
	rs := []rune(shown)
	var under strings.Builder
	for _, c := range rs[:at] {
		if c == '\t' {
			under.WriteByte('\t')
		} else {
			under.WriteByte(' ')
		}
	}
	under.WriteByte('^')
	if n := min(utf8.RuneCountInString(span), len(rs)-at) - 1; n > 0 {
		under.WriteString(strings.Repeat("~", n))
	}
	fmt.Fprintf(w, "  %s | %s\n  %s | %s\n", num, shown, pad, under.String())
}

// jsonDiag is the JSON shape of one diagnostic.
type jsonDiag struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Col       int    `json:"col"`
	EndLine   int    `json:"end_line"`
	EndCol    int    `json:"end_col"`
	Severity  string `json:"severity"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Hint      string `json:"hint,omitempty"`
	ByteStart int    `json:"offset"`
}

// WriteJSON writes {"diagnostics":[...]}.
func WriteJSON(w io.Writer, l List) error {
	out := struct {
		Diagnostics []jsonDiag `json:"diagnostics"`
	}{Diagnostics: []jsonDiag{}}
	for _, d := range l {
		out.Diagnostics = append(out.Diagnostics, jsonDiag{
			File: d.Span.File, Line: d.Span.Start.Line, Col: d.Span.Start.Col,
			EndLine: d.Span.End.Line, EndCol: d.Span.End.Col, ByteStart: d.Span.Start.Offset,
			Severity: d.Severity.String(), Code: d.Code, Message: d.Message, Hint: d.Hint,
		})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// Rule describes a diagnostic code for SARIF's rule list.
type Rule struct {
	Code     string
	Severity Severity
	Summary  string
}

// Tool names the program in a SARIF log.
type Tool struct {
	Name, Version, InformationURI string
}

func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}

// WriteSARIF writes a SARIF 2.1.0 log with one run, for code scanning.
// Rule ids are the diagnostic codes.
func WriteSARIF(w io.Writer, l List, tool Tool, rules []Rule) error {
	type text struct {
		Text string `json:"text"`
	}
	type rule struct {
		ID                   string            `json:"id"`
		ShortDescription     text              `json:"shortDescription"`
		DefaultConfiguration map[string]string `json:"defaultConfiguration"`
	}
	type region struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn"`
		EndLine     int `json:"endLine,omitempty"`
		EndColumn   int `json:"endColumn,omitempty"`
	}
	type location struct {
		PhysicalLocation struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region region `json:"region"`
		} `json:"physicalLocation"`
	}
	type result struct {
		RuleID    string     `json:"ruleId"`
		RuleIndex int        `json:"ruleIndex"`
		Level     string     `json:"level"`
		Message   text       `json:"message"`
		Locations []location `json:"locations"`
	}
	ruleIdx := map[string]int{}
	var rs []rule
	for _, r := range rules {
		ruleIdx[r.Code] = len(rs)
		rs = append(rs, rule{ID: r.Code, ShortDescription: text{r.Summary}, DefaultConfiguration: map[string]string{"level": sarifLevel(r.Severity)}})
	}
	results := []result{}
	for _, d := range l {
		idx, ok := ruleIdx[d.Code]
		if !ok {
			idx = len(rs)
			ruleIdx[d.Code] = idx
			rs = append(rs, rule{ID: d.Code, ShortDescription: text{d.Code}, DefaultConfiguration: map[string]string{"level": sarifLevel(d.Severity)}})
		}
		msg := d.Message
		if d.Hint != "" {
			msg += " (hint: " + d.Hint + ")"
		}
		var loc location
		loc.PhysicalLocation.ArtifactLocation.URI = sarifURI(d.Span.File)
		reg := region{StartLine: max(d.Span.Start.Line, 1), StartColumn: max(d.Span.Start.Col, 1)}
		if d.Span.End.Line >= reg.StartLine && d.Span.End.Col >= 1 {
			reg.EndLine, reg.EndColumn = d.Span.End.Line, d.Span.End.Col
			if reg.EndLine == reg.StartLine && reg.EndColumn < reg.StartColumn {
				reg.EndColumn = reg.StartColumn
			}
		}
		loc.PhysicalLocation.Region = reg
		results = append(results, result{RuleID: d.Code, RuleIndex: idx, Level: sarifLevel(d.Severity), Message: text{msg}, Locations: []location{loc}})
	}
	driver := map[string]any{"name": tool.Name, "rules": rs}
	if tool.Version != "" {
		driver["version"] = tool.Version
	}
	if tool.InformationURI != "" {
		driver["informationUri"] = tool.InformationURI
	}
	log := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool":    map[string]any{"driver": driver},
			"results": results,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(log)
}

// sarifURI writes a file name as a relative URI reference.
func sarifURI(file string) string {
	if file == "" || file == "<stdin>" {
		return "stdin"
	}
	var b strings.Builder
	for _, c := range []byte(strings.ReplaceAll(file, "\\", "/")) {
		if c > ' ' && c < 0x7f && c != '%' && c != '#' && c != '?' && c != ' ' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// WriteGitHub writes GitHub Actions workflow commands, one annotation per
// diagnostic.
func WriteGitHub(w io.Writer, l List) error {
	for _, d := range l {
		cmd := "notice"
		switch d.Severity {
		case Error:
			cmd = "error"
		case Warning:
			cmd = "warning"
		}
		msg := d.Message
		if d.Hint != "" {
			msg += "\nhint: " + d.Hint
		}
		props := fmt.Sprintf("file=%s,line=%d,col=%d", ghProp(d.Span.File), d.Span.Start.Line, d.Span.Start.Col)
		if d.Span.End.Line >= d.Span.Start.Line && d.Span.End.Line > 0 {
			props += fmt.Sprintf(",endLine=%d,endColumn=%d", d.Span.End.Line, d.Span.End.Col)
		}
		props += ",title=" + ghProp(d.Code)
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", cmd, props, ghData(msg)); err != nil {
			return err
		}
	}
	return nil
}

func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
