package fleet

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/internal/safetext"
	"go.yaml.in/yaml/v3"
)

// maxScanLines and maxScanBytes bound the configuration a syntax error is
// searched for line by line (a configuration is tens of lines; the search
// parses each prefix, so it is quadratic: a 485-line, 26 KB file with
// its mistake on the last line takes chock eval 0.16 s in all).
const (
	maxScanLines = 500
	maxScanBytes = 64 << 10
)

// opaConfig is OPA's configuration as a YAML node tree, for positions: OPA
// reads it through sigs.k8s.io/yaml into JSON, and its errors either name
// the line of the enclosing block rather than the mistake, or name a Go
// struct field and no line at all. The tree is YAML 1.2's (yaml/v3), OPA's
// reader YAML 1.1's: where they differ (a duplicate key, which v3 refuses;
// yes and no, which 1.1 reads as booleans) a mistake is named without a
// position, never at a wrong one.
type opaConfig struct {
	name string
	data []byte
	root *yaml.Node // nil when it does not parse
}

func newConfig(name string, data []byte) *opaConfig {
	c := &opaConfig{name: name, data: data}
	var n yaml.Node
	if yaml.Unmarshal(data, &n) == nil {
		c.root = &n
	}
	return c
}

var (
	// yamlSyntax is a YAML parser's error: "yaml: line N: problem".
	yamlSyntax = regexp.MustCompile(`yaml: line (\d+): (.+)$`)
	// structField is encoding/json's type error inside a struct.
	structField = regexp.MustCompile(`json: cannot unmarshal (\w+) into Go struct field ([\w.]+) of type (.+)$`)
)

// errorAt is the error OPA's configuration loaders returned, with the
// position in the file it is about where that can be found, as a
// diagnostic ("file:line:col: message"); any other error names the file.
func (c *opaConfig) errorAt(err error) error {
	msg := err.Error()
	if m := yamlSyntax.FindStringSubmatch(msg); m != nil {
		line, problem := c.syntaxLine()
		if line == 0 {
			line, _ = strconv.Atoi(m[1])
			problem = m[2]
		}
		return c.diagnostic(line, c.firstCol(line), problem+" (OPA's configuration is YAML or JSON)")
	}
	if m := structField.FindStringSubmatch(msg); m != nil && c.root != nil {
		// The field path is "Struct.path" (encoding/json), and may go on
		// with Go field names (capitals): the rest are keys in the file.
		keys := strings.Split(m[2], ".")[1:]
		for len(keys) > 0 && keys[0] != "" && unicode.IsUpper(rune(keys[0][0])) {
			keys = keys[1:]
		}
		if path, n := c.find(keys, m[1]); n != nil {
			return c.diagnostic(n.Line, n.Column, fmt.Sprintf("%s is %s, where OPA wants %s", path, jsonKind(m[1]), goKind(m[3])))
		}
	}
	return fmt.Errorf("%s: %w", c.name, err)
}

// at is the position of the top-level key k, or the file's name.
func (c *opaConfig) at(k string) string {
	if c.root != nil && len(c.root.Content) == 1 {
		doc := c.root.Content[0]
		for i := 0; doc.Kind == yaml.MappingNode && i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value == k {
				return diag.Span{File: c.name, Start: diag.Pos{Line: doc.Content[i].Line, Col: doc.Content[i].Column}}.String()
			}
		}
	}
	return c.name
}

func (c *opaConfig) diagnostic(line, col int, msg string) *diag.Diagnostic {
	return &diag.Diagnostic{
		Span:     diag.Span{File: c.name, Start: diag.Pos{Line: line, Col: col}},
		Severity: diag.Error,
		Code:     "opa-config",
		Message:  safetext.Line(msg),
	}
}

// lines is the file's lines, at most maxScanLines of them.
func (c *opaConfig) lines() [][]byte {
	ls := bytes.SplitAfter(c.data, []byte("\n"))
	if len(ls) > maxScanLines || len(c.data) > maxScanBytes {
		return nil
	}
	return ls
}

// firstCol is the column of line's first character that is not a space
// (a tab, which YAML refuses as indentation, counts), 1 for an unknown
// line.
func (c *opaConfig) firstCol(line int) int {
	ls := c.lines()
	if line < 1 || line > len(ls) {
		return 1
	}
	return len(ls[line-1]) - len(bytes.TrimLeft(ls[line-1], " ")) + 1
}

// syntaxLine finds the line of a syntax error: the first line at which
// the file, cut there, fails as the whole does (the same problem, named at
// the same line). A YAML parser names the line of the block it was
// parsing instead, which can be far above the mistake; a cut inside an
// open JSON object fails with the same problem, but names another block.
// 0 when the search finds nothing.
func (c *opaConfig) syntaxLine() (int, string) {
	var n yaml.Node
	err := yaml.Unmarshal(c.data, &n)
	if err == nil {
		return 0, ""
	}
	line, problem := syntaxProblem(err)
	ls := c.lines()
	var prefix []byte
	for i, l := range ls {
		prefix = append(prefix, l...)
		var p yaml.Node
		if err := yaml.Unmarshal(prefix, &p); err != nil {
			if gotLine, got := syntaxProblem(err); got == problem && gotLine == line {
				return i + 1, problem
			}
		}
	}
	return 0, ""
}

// syntaxProblem splits a YAML error into its line and its problem.
func syntaxProblem(err error) (int, string) {
	if m := yamlSyntax.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, strings.TrimPrefix(err.Error(), "yaml: ")
}

// find is the first value in the file whose key path ends with keys and
// whose kind is the JSON kind OPA was given, and its path.
func (c *opaConfig) find(keys []string, kind string) (string, *yaml.Node) {
	if len(keys) == 0 || len(c.root.Content) != 1 {
		return "", nil
	}
	var walk func(n *yaml.Node, path []string) (string, *yaml.Node)
	walk = func(n *yaml.Node, path []string) (string, *yaml.Node) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := append(append([]string(nil), path...), k.Value)
				if endsWith(p, keys) && kindOf(v) == kind {
					return strings.Join(p, "."), v
				}
				if s, found := walk(v, p); found != nil {
					return s, found
				}
			}
		case yaml.SequenceNode:
			for i, v := range n.Content {
				if s, found := walk(v, append(append([]string(nil), path...), strconv.Itoa(i))); found != nil {
					return s, found
				}
			}
		}
		return "", nil
	}
	return walk(c.root.Content[0], nil)
}

func endsWith(path, keys []string) bool {
	if len(path) < len(keys) {
		return false
	}
	for i, k := range keys {
		if path[len(path)-len(keys)+i] != k {
			return false
		}
	}
	return true
}

// kindOf is the JSON kind a YAML value becomes, as encoding/json names it
// in a type error.
func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "array"
	case yaml.AliasNode:
		if n.Alias != nil {
			return kindOf(n.Alias)
		}
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float":
			return "number"
		case "!!bool":
			return "bool"
		case "!!str":
			return "string"
		}
	}
	return ""
}

// jsonKind words a JSON kind of a type error.
func jsonKind(k string) string {
	switch k {
	case "object", "array":
		return "an " + k
	case "bool":
		return "true or false"
	}
	return "a " + k
}

// goKind words the Go type OPA wanted.
func goKind(t string) string {
	t = strings.TrimLeft(t, "*")
	switch {
	case strings.HasPrefix(t, "struct"), strings.HasPrefix(t, "map["):
		return "an object"
	case strings.HasPrefix(t, "[]"):
		return "an array"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	}
	if len(t) > 60 {
		return "another type"
	}
	return t
}
