package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/zon"
)

// Diagnostic codes the decoder reports.
const (
	CodeUnknownField    = "unknown-field"
	CodeUnknownBlock    = "unknown-block"
	CodeWrongType       = "wrong-type"
	CodeMissingField    = "missing-field"
	CodeUnknownDecision = "unknown-decision"
	CodeUnknownPhase    = "unknown-phase"
	CodeUnknownBind     = "unknown-bind"
	CodeUnknownStore    = "unknown-store"
	CodeStarAlone       = "pattern-star-alone"
	CodeEmptySegment    = "pattern-empty-segment"
	CodePartialGlob     = "pattern-partial-glob"
	CodeBadChar         = "pattern-bad-char"
	CodeTooLong         = "pattern-too-long"
	CodeOrgSecrets      = "org-secrets"
	CodeOrgServers      = "org-mcp-servers"
	CodeOrgPrograms     = "org-programs"
	CodeOrgName         = "org-name-missing"
	CodeExpectWildcard  = "expect-wildcard"
	CodeArgsBad         = "args-bad"
	CodeExpectArgv      = "expect-argv"
)

// Blocks are the top-level fields of chock.zon this toolchain reads.
var Blocks = configBlock.known

type decoder struct {
	file  string
	src   []byte
	diags diag.List
	// slab hands out Rules in blocks, which a large policy holds
	// hundreds of thousands of; each block is twice the last, up to 1024.
	slab     []Rule
	slabSize int
}

// newRule keeps r in the slab and returns where.
func (d *decoder) newRule(r Rule) *Rule {
	if len(d.slab) == 0 {
		d.slabSize = min(1024, max(16, 2*d.slabSize))
		d.slab = make([]Rule, d.slabSize)
	}
	p := &d.slab[0]
	*p = r
	d.slab = d.slab[1:]
	return p
}

// Load parses and decodes a chock.zon. A syntax error yields a nil Config
// and that one diagnostic; otherwise every decoding problem is collected.
// It reads the document as a compact zon.Tree, which is dropped once the
// Config is built.
func Load(file string, src []byte) (*Config, diag.List) {
	t, err := zon.ParseTree(file, src)
	if err != nil {
		return nil, syntaxDiag(file, err)
	}
	return Decode(t)
}

// LoadOrg parses and decodes an org bundle source.
func LoadOrg(file string, src []byte) (*Org, diag.List) {
	t, err := zon.ParseTree(file, src)
	if err != nil {
		return nil, syntaxDiag(file, err)
	}
	return DecodeOrg(t)
}

func syntaxDiag(file string, err error) diag.List {
	var d *diag.Diagnostic
	if errors.As(err, &d) {
		return diag.List{d}
	}
	return diag.List{{Span: diag.Span{File: file}, Severity: diag.Error, Code: zon.CodeSyntax, Message: err.Error()}}
}

// Decode turns a parsed document into a Config.
func Decode(t *zon.Tree) (*Config, diag.List) {
	d := &decoder{file: t.File, src: t.Src}
	root := t.Root()
	c := &Config{File: t.File, Span: root.Span()}
	c.Policy.Span = c.Span
	configBlock.decode(d, root, c)
	return c, d.diags
}

// DecodeOrg turns a parsed document into an Org.
func DecodeOrg(t *zon.Tree) (*Org, diag.List) {
	d := &decoder{file: t.File, src: t.Src}
	root := t.Root()
	o := &Org{File: t.File, Span: root.Span()}
	o.Policy.Span = o.Span
	o.Policy.Default.Value = Allow // an org layer with no default sets no ceiling
	name := orgBlock.index("name")
	if g, _ := orgBlock.decode(d, root, o); !g.has(name) {
		d.add(startSpan(o.Span), diag.Error, CodeOrgName, "the org bundle has no .name", "add "+orgBlock.fields[name].need)
	}
	return o, d.diags
}

func startSpan(s diag.Span) diag.Span {
	s.End = s.Start
	return s
}

func (d *decoder) add(span diag.Span, sev diag.Severity, code, msg, hint string) {
	d.diags = append(d.diags, &diag.Diagnostic{Span: span, Severity: sev, Code: code, Message: msg, Hint: hint})
}

func describe(v zon.Node) string {
	switch v.Kind() {
	case zon.KindStruct:
		return "a struct"
	case zon.KindTuple:
		return "a list"
	case zon.KindEmpty:
		return "an empty literal .{}"
	case zon.KindString:
		return "a string"
	case zon.KindEnum:
		return "an enum literal ." + v.Str()
	case zon.KindChar:
		return "a character"
	case zon.KindInt:
		return "an integer"
	case zon.KindFloat:
		return "a float"
	case zon.KindBool:
		return "a bool"
	}
	return "null"
}

func (d *decoder) wrongType(v zon.Node, what, want string) {
	d.add(v.Span(), diag.Error, CodeWrongType, fmt.Sprintf("%s is %s, want %s", what, describe(v), want), "")
}

// field is one field of a struct being decoded.
type field struct {
	Name  string
	Value zon.Node
	strct zon.Node
	index int
}

// NameSpan is where the field's name is written.
func (f field) NameSpan() diag.Span { return f.strct.FieldNameSpan(f.index) }

// structLen checks that v, named what, is a struct (an empty literal
// counts as one with no fields) and returns how many fields it has.
func (d *decoder) structLen(v zon.Node, what string) int {
	switch v.Kind() {
	case zon.KindEmpty:
		return 0
	case zon.KindStruct:
		return v.Len()
	}
	d.wrongType(v, what, "a struct .{ .field = value, ... }")
	return 0
}

// listLen checks that v is a list (or an empty literal) and returns how
// many elements it has.
func (d *decoder) listLen(v zon.Node, what string) int {
	switch v.Kind() {
	case zon.KindTuple:
		return v.Len()
	case zon.KindEmpty:
		return 0
	}
	d.wrongType(v, what, "a list .{ ... }")
	return 0
}

func (d *decoder) text(v zon.Node, what string) (Text, bool) {
	if v.Kind() != zon.KindString {
		d.wrongType(v, what, "a string")
		return Text{}, false
	}
	return Text{Value: v.Str(), Span: v.Span(), Set: true}, true
}

// args reads a rule's .args: a non-empty list of at most action.MaxArgs
// elements, each a string ("*" for any one argument) or a non-empty list
// of strings, the alternatives. What is wrong is said and left out; a
// list left empty by it is an Args of no elements, which lint reports.
func (d *decoder) args(v zon.Node) action.Args {
	n := d.listLen(v, ".args")
	if n == 0 {
		if v.Kind() == zon.KindEmpty {
			d.add(v.Span(), diag.Error, CodeArgsBad, ".args is empty, which would match every call", "leave .args out, or name the arguments: .args = .{ \"push\" }")
		}
		return action.Args{}
	}
	if n > action.MaxArgs {
		d.add(v.Span(), diag.Error, CodeArgsBad, fmt.Sprintf(".args has %d elements, more than %d", n, action.MaxArgs), "")
		return action.Args{}
	}
	word := func(e zon.Node, what string) (string, bool) {
		t, ok := d.text(e, what)
		if ok && (t.Value == "" || strings.ContainsRune(t.Value, 0)) {
			d.add(t.Span, diag.Error, CodeArgsBad, what+" is empty or holds a NUL byte, which no argument can be", "")
			return "", false
		}
		return t.Value, ok
	}
	out := make(action.Args, 0, n)
	for j := 0; j < n; j++ {
		e := v.Elem(j)
		if e.Kind() == zon.KindTuple {
			var alts []string
			for k := 0; k < e.Len(); k++ {
				w, ok := word(e.Elem(k), "an alternative of .args")
				if ok && w == "*" {
					d.add(e.Elem(k).Span(), diag.Error, CodeArgsBad, `"*" among alternatives would match any argument`, `write "*" alone`)
					continue
				}
				if ok {
					alts = append(alts, w)
				}
			}
			if len(alts) == 0 {
				return action.Args{}
			}
			out = append(out, action.Arg{Alts: alts})
			continue
		}
		w, ok := word(e, "an element of .args")
		switch {
		case !ok:
			return action.Args{}
		case w == "*":
			out = append(out, action.Arg{})
		default:
			out = append(out, action.Arg{Alts: []string{w}})
		}
	}
	return out
}

// name reads an enumerated value written as an enum literal or a string.
func (d *decoder) name(v zon.Node, what string) (string, bool) {
	if k := v.Kind(); k == zon.KindEnum || k == zon.KindString {
		return v.Str(), true
	}
	d.wrongType(v, what, "an enum literal or a string")
	return "", false
}

// inString returns the span of bytes [off, off+n) of a string value's
// contents, when the string is written without escapes; else the whole
// string's span.
func (d *decoder) inString(t Text, off, n int) diag.Span {
	s := t.Span
	if s.Start.Offset < 0 || s.End.Offset > len(d.src) || s.End.Offset-s.Start.Offset != len(t.Value)+2 ||
		s.Start.Line != s.End.Line || string(d.src[s.Start.Offset+1:s.End.Offset-1]) != t.Value {
		return s
	}
	start := s.Start
	start.Offset += 1 + off
	start.Col += 1 + off
	end := start
	end.Offset += n
	end.Col += n
	return diag.Span{File: s.File, Start: start, End: end}
}

// pattern parses a pattern string, reporting its syntax errors in place.
func (d *decoder) pattern(t Text) (action.Pattern, bool) {
	p, err := action.ParsePattern(t.Value)
	if err == nil {
		return p, true
	}
	var pe *action.PatternError
	if !errors.As(err, &pe) {
		d.add(t.Span, diag.Error, CodeEmptySegment, err.Error(), "")
		return p, false
	}
	code := CodeEmptySegment
	switch {
	case errors.Is(err, action.ErrStarAlone):
		code = CodeStarAlone
	case errors.Is(err, action.ErrPartialGlob):
		code = CodePartialGlob
	case errors.Is(err, action.ErrBadChar):
		code = CodeBadChar
	case errors.Is(err, action.ErrTooLong):
		code = CodeTooLong
	}
	d.add(d.inString(t, pe.Offset, 1), diag.Error, code, fmt.Sprintf("%s: %q", pe.Msg, t.Value), pe.Hint)
	return p, false
}

// enum reads an enumerated value, written as an enum literal or a string,
// and returns its index in names. An unknown name is reported with code,
// naming the nearest known one.
func (d *decoder) enum(v zon.Node, what, noun, code string, names []string) (int, bool) {
	n, ok := d.name(v, what)
	if !ok {
		return 0, false
	}
	if i := index(names, n); i >= 0 {
		return i, true
	}
	// Suggest in the form the value was written: "header" or .allow.
	form := func(name string) string {
		if v.Kind() == zon.KindString {
			return strconv.Quote(name)
		}
		return "." + name
	}
	forms := make([]string, len(names))
	for i, name := range names {
		forms[i] = form(name)
	}
	hint := "use " + strings.Join(forms, ", ")
	if near := action.Nearest(n, names); near != "" {
		hint = fmt.Sprintf("did you mean %s?", form(near))
	}
	d.add(v.Span(), diag.Error, code, fmt.Sprintf("unknown %s %q", noun, n), hint)
	return 0, false
}

func (d *decoder) decision(v zon.Node, what string) (Decision, bool) {
	i, ok := d.enum(v, what, "decision", CodeUnknownDecision, decisionNames())
	return Decision(i), ok
}

// policy decodes a .policy block.
func (d *decoder) policy(v zon.Node) Policy {
	p := Policy{Span: v.Span(), Written: true}
	policyBlock.decode(d, v, &p)
	return p
}

// patternList reads the .allow, .ask or .deny list f of a .policy block:
// a rule of that decision for each pattern.
func (d *decoder) patternList(f field, p *Policy) outcome {
	dec, _ := ParseDecision(f.Name)
	if k := f.Value.Kind(); f.Name == "allow" && (k == zon.KindTuple || k == zon.KindEmpty) {
		p.Allow = Field[struct{}]{Span: f.Value.Span(), Set: true}
	}
	var decisionSpan diag.Span
	for j, n := 0, d.listLen(f.Value, ".policy."+f.Name); j < n; j++ {
		t, ok := d.text(f.Value.Elem(j), "an entry of .policy."+f.Name)
		if !ok {
			continue
		}
		if pat, ok := d.pattern(t); ok {
			if decisionSpan.File == "" {
				decisionSpan = f.NameSpan()
			}
			p.Rules = append(p.Rules, d.newRule(Rule{Pattern: pat, Decision: dec, DecisionSpan: decisionSpan, Span: t.Span, From: f.Name}))
		}
	}
	return fieldRead
}

// isStruct reports whether v can hold an entry's fields.
func isStruct(v zon.Node) bool {
	k := v.Kind()
	return k == zon.KindStruct || k == zon.KindEmpty
}

// startRule is where an entry of .policy.rules is decoded: a Rule of
// the slab (an entry that is not a rule leaves it unused).
func (d *decoder) startRule(zon.Node) *Rule { return d.newRule(Rule{From: "rules"}) }

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// expectAction reads an expectation's .action: one concrete action.
func (d *decoder) expectAction(f field, x *Expectation) outcome {
	t, ok := d.text(f.Value, ".action")
	if !ok {
		return fieldWrong
	}
	x.Action = t
	if _, err := action.ParseAction(t.Value); err != nil {
		var pe *action.PatternError
		span := t.Span
		if errors.As(err, &pe) {
			span = d.inString(t, pe.Offset, 1)
		}
		code := CodeEmptySegment
		if strings.Contains(t.Value, "*") {
			code = CodeExpectWildcard
		} else if errors.Is(err, action.ErrBadChar) {
			code = CodeBadChar
		} else if errors.Is(err, action.ErrTooLong) {
			code = CodeTooLong
		}
		d.add(span, diag.Error, code, fmt.Sprintf("expectation action %q: %v", t.Value, err),
			"an expectation names one concrete action, such as \"exec.path.gh\"")
		return fieldWrong
	}
	return fieldRead
}
