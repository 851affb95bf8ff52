package clientconf

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// A TOML file is edited as lines, so that everything chock does not
// touch stays as the file has it, comments included: a table is the lines
// from its header to the next header; the root table the lines before the
// first. Only the forms chock writes itself are edited (a [table] with
// key = value lines); any other spelling of a key chock sets (a dotted key
// or an inline table naming it) is refused, never half rewritten.

// tomlDoc is a TOML file as lines, with its tables.
type tomlDoc struct {
	lines  []string
	tables []tomlTable // in file order; tables[0] is the root
}

// tomlTable is one table: its header's key path ("" for the root) and
// its lines [start, end) (start is the header line).
type tomlTable struct {
	path       []string
	array      bool
	start, end int
}

func parseTOML(src string) (*tomlDoc, error) {
	src = strings.TrimSuffix(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	d := &tomlDoc{}
	if src != "" {
		d.lines = strings.Split(src, "\n")
	}
	d.tables = []tomlTable{{start: 0}}
	inMulti := "" // the delimiter of a multi-line string under way
	for i, l := range d.lines {
		if inMulti != "" {
			if strings.Count(l, inMulti)%2 == 1 {
				inMulti = ""
			}
			continue
		}
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "[") {
			path, array, err := parseHeader(t)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", i+1, err)
			}
			d.tables[len(d.tables)-1].end = i
			d.tables = append(d.tables, tomlTable{path: path, array: array, start: i})
			continue
		}
		for _, q := range []string{`"""`, `'''`} {
			if strings.Count(l, q)%2 == 1 {
				inMulti = q
				break
			}
		}
	}
	if inMulti != "" {
		return nil, errors.New("a multi-line string is not closed")
	}
	d.tables[len(d.tables)-1].end = len(d.lines)
	return d, nil
}

// parseHeader reads [a.b."c"] or [[a.b]], with a comment after it.
func parseHeader(t string) ([]string, bool, error) {
	array := strings.HasPrefix(t, "[[")
	s := strings.TrimPrefix(t, "[")
	if array {
		s = strings.TrimPrefix(s, "[")
	}
	path, rest, err := parseKey(s)
	if err != nil {
		return nil, false, err
	}
	rest = strings.TrimSpace(rest)
	closing := "]"
	if array {
		closing = "]]"
	}
	if !strings.HasPrefix(rest, closing) {
		return nil, false, fmt.Errorf("a table header that does not close: %s", t)
	}
	rest = strings.TrimSpace(rest[len(closing):])
	if rest != "" && !strings.HasPrefix(rest, "#") {
		return nil, false, fmt.Errorf("text after a table header: %s", t)
	}
	return path, array, nil
}

// parseKey reads a dotted key (bare, "basic" or 'literal' parts) at the
// start of s, and returns what follows it.
func parseKey(s string) ([]string, string, error) {
	var path []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, "", errors.New("a key is missing")
		}
		var part string
		switch s[0] {
		case '"':
			end := 1
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(s) {
				return nil, "", errors.New("a quoted key does not close")
			}
			p, err := unquoteBasic(s[1:end])
			if err != nil {
				return nil, "", err
			}
			part, s = p, s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, "", errors.New("a quoted key does not close")
			}
			part, s = s[1:end+1], s[end+2:]
		default:
			end := 0
			for end < len(s) && bareKeyByte(s[end]) {
				end++
			}
			if end == 0 {
				return nil, "", fmt.Errorf("%q is not a key", s)
			}
			part, s = s[:end], s[end:]
		}
		path = append(path, part)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return path, s, nil
		}
		s = s[1:]
	}
}

func bareKeyByte(c byte) bool {
	return c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func unquoteBasic(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		i++
		if i >= len(s) {
			return "", errors.New("a key ends in a backslash")
		}
		switch s[i] {
		case '"', '\\':
			b.WriteByte(s[i])
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		default:
			return "", fmt.Errorf(`a key holds \%c, which chock does not read`, s[i])
		}
	}
	return b.String(), nil
}

// keyLine says whether line i is "KEY = ..." and the key's path.
func (d *tomlDoc) keyLine(i int) ([]string, bool) {
	t := strings.TrimSpace(d.lines[i])
	if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "[") {
		return nil, false
	}
	path, rest, err := parseKey(t)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(rest), "=") {
		return nil, false
	}
	return path, true
}

func hasPrefix(path, prefix []string) bool {
	if len(path) < len(prefix) {
		return false
	}
	for i := range prefix {
		if path[i] != prefix[i] {
			return false
		}
	}
	return true
}

func join(a, b []string) []string { return append(append([]string(nil), a...), b...) }

// check refuses a file that spells the key path any other way than as
// tables chock rewrites: a key line in a table above it that reaches it
// (mcp_servers.chock = ..., or chock = {...} under [mcp_servers]).
func (d *tomlDoc) check(path []string) error {
	for _, t := range d.tables {
		if !hasPrefix(path, t.path) || len(t.path) == len(path) {
			continue
		}
		for i := t.start; i < t.end; i++ {
			if k, ok := d.keyLine(i); ok && hasPrefix(join(t.path, k), path) {
				return fmt.Errorf("line %d sets %s in a form chock connect does not edit; make it a [%s] table, or remove it, and run again",
					i+1, strings.Join(path, "."), strings.Join(path, "."))
			}
			if k, ok := d.keyLine(i); ok && hasPrefix(path, join(t.path, k)) {
				return fmt.Errorf("line %d sets %s as a value, where chock connect writes a table", i+1, strings.Join(join(t.path, k), "."))
			}
		}
	}
	return nil
}

// replaceTable puts body (key = value lines) as the table path, with the
// tables under it dropped: in the place of the first of them, or last.
func (d *tomlDoc) replaceTable(path []string, body []string) error {
	if err := d.check(path); err != nil {
		return err
	}
	header := "[" + headerKey(path) + "]"
	var out []string
	placed := false
	last := 0
	for ti, t := range d.tables {
		lines := d.lines[t.start:t.end]
		if ti > 0 && hasPrefix(t.path, path) {
			if t.array {
				return fmt.Errorf("line %d makes %s an array of tables, where chock connect writes a table", t.start+1, strings.Join(t.path, "."))
			}
			if !placed {
				out = append(out, header)
				out = append(out, body...)
				out = append(out, trailingBlank(lines)...)
				placed = true
			}
			continue
		}
		out = append(out, lines...)
		last = len(out)
	}
	if !placed {
		out = out[:last]
		for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
			out = out[:len(out)-1]
		}
		if len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, header)
		out = append(out, body...)
	}
	return d.reset(out)
}

// trailingBlank are the blank lines that end a table, kept between it
// and the next.
func trailingBlank(lines []string) []string {
	n := 0
	for n < len(lines) && strings.TrimSpace(lines[len(lines)-1-n]) == "" {
		n++
	}
	return lines[len(lines)-n:]
}

// setKey sets the key path (its table, then its last part) to value: the
// line that sets it is replaced, or the line is added at the end of its
// table (which is added, last, when it is not there). A dotted key that
// reaches it from a table above is replaced in its place.
func (d *tomlDoc) setKey(path []string, value string) error {
	table, key := path[:len(path)-1], path[len(path)-1]
	for _, t := range d.tables {
		if !hasPrefix(path, t.path) {
			continue
		}
		for i := t.start; i < t.end; i++ {
			k, ok := d.keyLine(i)
			if !ok {
				continue
			}
			full := join(t.path, k)
			switch {
			case equal(full, path):
				d.lines[i] = lineIndent(d.lines[i]) + headerKey(k) + " = " + value
				return nil
			case hasPrefix(path, full) || hasPrefix(full, path):
				return fmt.Errorf("line %d sets %s, which chock connect cannot set %s beside", i+1, strings.Join(full, "."), strings.Join(path, "."))
			}
		}
	}
	line := headerKey([]string{key}) + " = " + value
	for _, t := range d.tables {
		if equal(t.path, table) && !t.array {
			end := t.end
			for end > t.start+1 && strings.TrimSpace(d.lines[end-1]) == "" {
				end--
			}
			add := []string{line}
			if len(table) == 0 {
				end = t.end
				for end > 0 && strings.TrimSpace(d.lines[end-1]) == "" {
					end--
				}
				if end < len(d.lines) && strings.TrimSpace(d.lines[end]) != "" {
					add = append(add, "") // a blank line before the first table
				}
			}
			out := append(append(append([]string(nil), d.lines[:end]...), add...), d.lines[end:]...)
			return d.reset(out)
		}
	}
	out := append([]string(nil), d.lines...)
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	if len(out) > 0 {
		out = append(out, "")
	}
	out = append(out, "["+headerKey(table)+"]", line)
	return d.reset(out)
}

func equal(a, b []string) bool { return len(a) == len(b) && hasPrefix(a, b) }

func lineIndent(l string) string { return l[:len(l)-len(strings.TrimLeft(l, " \t"))] }

// headerKey spells a key path: bare parts as they are, others quoted.
func headerKey(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		bare := p != ""
		for j := 0; j < len(p); j++ {
			if !bareKeyByte(p[j]) {
				bare = false
			}
		}
		if bare {
			parts[i] = p
		} else {
			parts[i] = tomlString(p)
		}
	}
	return strings.Join(parts, ".")
}

// reset makes lines the document, parsed again.
func (d *tomlDoc) reset(lines []string) error {
	nd, err := parseTOML(strings.Join(lines, "\n"))
	if err != nil {
		return err
	}
	*d = *nd
	return nil
}

func (d *tomlDoc) String() string {
	if len(d.lines) == 0 {
		return ""
	}
	return strings.Join(d.lines, "\n") + "\n"
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		case r == utf8.RuneError:
			b.WriteString(`\uFFFD`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlList is a list of strings as a TOML array.
func tomlList(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = tomlString(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
