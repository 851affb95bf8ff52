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
)

// Blocks are the top-level fields of chock.zon this toolchain reads.
var Blocks = []string{"policy", "secrets", "mcp_servers", "programs", "credentials", "expect"}

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
	for i, n := 0, d.fields(root, "the file", nil); i < n; i++ {
		f, _ := d.field(root, i, "the file", nil)
		switch f.Name {
		case "policy":
			c.Policy = d.policy(f.Value)
		case "secrets":
			for j, n := 0, d.listLen(f.Value, ".secrets"); j < n; j++ {
				if s := d.secret(f.Value.Elem(j)); s != nil {
					c.Secrets = append(c.Secrets, s)
				}
			}
		case "mcp_servers":
			for j, n := 0, d.listLen(f.Value, ".mcp_servers"); j < n; j++ {
				if s := d.server(f.Value.Elem(j)); s != nil {
					c.Servers = append(c.Servers, s)
				}
			}
		case "programs":
			for j, n := 0, d.listLen(f.Value, ".programs"); j < n; j++ {
				if p := d.program(f.Value.Elem(j)); p != nil {
					c.Programs = append(c.Programs, p)
				}
			}
		case "credentials":
			c.Credentials = d.credentials(f.Value)
		case "expect":
			for j, n := 0, d.listLen(f.Value, ".expect"); j < n; j++ {
				if x := d.expectation(f.Value.Elem(j)); x != nil {
					c.Expect = append(c.Expect, x)
				}
			}
		default:
			// The rest of Chock reads other top-level fields; a near miss of
			// one of ours is a typo.
			if near := nearest(f.Name, Blocks); near != "" {
				d.add(f.NameSpan(), diag.Error, CodeUnknownBlock,
					fmt.Sprintf("unknown block .%s", f.Name), fmt.Sprintf("did you mean .%s?", near))
			}
		}
	}
	return c, d.diags
}

// DecodeOrg turns a parsed document into an Org.
func DecodeOrg(t *zon.Tree) (*Org, diag.List) {
	d := &decoder{file: t.File, src: t.Src}
	root := t.Root()
	o := &Org{File: t.File, Span: root.Span()}
	o.Policy.Span = o.Span
	o.Policy.Default.Value = Allow // an org layer with no default sets no ceiling
	hasName := false
	const what = "an org bundle source"
	known := []string{"name", "version", "policy"}
	for i, n := 0, d.fields(root, what, known); i < n; i++ {
		f, ok := d.field(root, i, what, known)
		if !ok {
			continue
		}
		switch f.Name {
		case "name":
			o.Name, hasName = d.text(f.Value, ".name")
			if hasName && o.Name.Value == "" {
				d.add(f.Value.Span(), diag.Error, CodeOrgName, "the org bundle's .name is empty", "name the organisation, such as .name = \"acme\"")
			}
		case "version":
			o.Version, _ = d.text(f.Value, ".version")
		case "policy":
			def := o.Policy.Default
			o.Policy = d.policy(f.Value)
			if !o.Policy.Default.Set {
				o.Policy.Default = def
			}
		case "secrets":
			d.add(f.NameSpan(), diag.Error, CodeOrgSecrets, "an org bundle cannot hold .secrets",
				"there is no org layer for secrets: an org may only narrow, so move secret entries to the project's chock.zon")
		case "mcp_servers":
			d.add(f.NameSpan(), diag.Error, CodeOrgServers, "an org bundle cannot hold .mcp_servers",
				"servers are configured by the project; an org narrows them through .policy rules such as mcp.<server>.*")
		case "programs":
			d.add(f.NameSpan(), diag.Error, CodeOrgPrograms, "an org bundle cannot hold .programs",
				"programs are pinned by the project; an org narrows what runs through exec.path rules")
		}
	}
	if !hasName {
		d.add(startSpan(o.Span), diag.Error, CodeOrgName, "the org bundle has no .name", "add .name = \"your-org\"")
	}
	return o, d.diags
}

// require reports every needed field the entry v lacks; it returns true
// when none is missing.
func (d *decoder) require(v zon.Node, what string, needs ...need) bool {
	ok := true
	for _, n := range needs {
		if !n.given {
			d.add(startSpan(v.Span()), diag.Error, CodeMissingField, fmt.Sprintf("%s needs .%s", what, n.field), "add "+n.example)
			ok = false
		}
	}
	return ok
}

// need is a field an entry must have: its name, whether it was given,
// and an example for the hint.
type need struct {
	field   string
	given   bool
	example string
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

// fields checks that v is a struct (an empty literal counts as one with no
// fields) and returns how many fields it has. With known non-nil, every
// field not in it is an unknown-field error with a did-you-mean, and field
// skips it.
func (d *decoder) fields(v zon.Node, what string, known []string) int {
	var n int
	switch v.Kind() {
	case zon.KindEmpty:
		return 0
	case zon.KindStruct:
		n = v.Len()
	default:
		d.wrongType(v, what, "a struct .{ .field = value, ... }")
		return 0
	}
	for i := 0; i < n && known != nil; i++ {
		if name := v.FieldName(i); !isKnown(name, what, known) {
			hint := "known fields: ." + strings.Join(known, ", .")
			if near := nearest(name, known); near != "" {
				hint = fmt.Sprintf("did you mean .%s?", near)
			}
			d.add(v.FieldNameSpan(i), diag.Error, CodeUnknownField, fmt.Sprintf("unknown field .%s in %s", name, what), hint)
		}
	}
	return n
}

func isKnown(name, what string, known []string) bool {
	return known == nil || contains(known, name) || (what == "an org bundle source" && (name == "secrets" || name == "mcp_servers" || name == "programs"))
}

// field returns field i of struct v; ok is false for a field fields
// reported as unknown.
func (d *decoder) field(v zon.Node, i int, what string, known []string) (f field, ok bool) {
	f = field{Name: v.FieldName(i), Value: v.FieldValue(i), strct: v, index: i}
	return f, isKnown(f.Name, what, known)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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
	if near := nearest(n, names); near != "" {
		hint = fmt.Sprintf("did you mean %s?", form(near))
	}
	d.add(v.Span(), diag.Error, code, fmt.Sprintf("unknown %s %q", noun, n), hint)
	return 0, false
}

func (d *decoder) decision(v zon.Node, what string) (Decision, bool) {
	i, ok := d.enum(v, what, "decision", CodeUnknownDecision, decisionNames())
	return Decision(i), ok
}

func (d *decoder) policy(v zon.Node) Policy {
	p := Policy{Span: v.Span(), Written: true}
	known := []string{"default", "allow", "ask", "deny", "rules"}
	for i, n := 0, d.fields(v, ".policy", known); i < n; i++ {
		f, ok := d.field(v, i, ".policy", known)
		if !ok {
			continue
		}
		switch f.Name {
		case "default":
			if dec, ok := d.decision(f.Value, ".policy.default"); ok {
				p.Default = Field[Decision]{Value: dec, Span: f.Value.Span(), Set: true}
			}
		case "allow", "ask", "deny":
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
		case "rules":
			for j, n := 0, d.listLen(f.Value, ".policy.rules"); j < n; j++ {
				if r := d.rule(f.Value.Elem(j)); r != nil {
					p.Rules = append(p.Rules, r)
				}
			}
		}
	}
	return p
}

// isStruct reports whether v can hold an entry's fields.
func isStruct(v zon.Node) bool {
	k := v.Kind()
	return k == zon.KindStruct || k == zon.KindEmpty
}

func (d *decoder) rule(v zon.Node) *Rule {
	r := Rule{From: "rules"}
	var hasAction, hasDecision, ok = false, false, true
	known := []string{"action", "decision", "why"}
	for i, n := 0, d.fields(v, "a rule", known); i < n; i++ {
		f, fok := d.field(v, i, "a rule", known)
		if !fok {
			continue
		}
		switch f.Name {
		case "action":
			t, tok := d.text(f.Value, ".action")
			hasAction = true
			if !tok {
				ok = false
				continue
			}
			r.Span = t.Span
			r.Pattern, tok = d.pattern(t)
			ok = ok && tok
		case "decision":
			hasDecision = true
			dec, dok := d.decision(f.Value, ".decision")
			r.Decision, r.DecisionSpan = dec, f.Value.Span()
			ok = ok && dok
		case "why":
			r.Why, _ = d.text(f.Value, ".why")
		}
	}
	if !isStruct(v) {
		return nil
	}
	if !d.require(v, "a rule", need{"action", hasAction, `.action = "exec.path.gh"`}, need{"decision", hasDecision, ".decision = .allow, .ask or .deny"}) || !ok {
		return nil
	}
	return d.newRule(r)
}

func (d *decoder) secret(v zon.Node) *Secret {
	s := &Secret{Span: v.Span()}
	var hasName, hasTo bool
	known := []string{"name", "to", "bind", "as"}
	for i, n := 0, d.fields(v, "a secret", known); i < n; i++ {
		f, ok := d.field(v, i, "a secret", known)
		if !ok {
			continue
		}
		switch f.Name {
		case "name":
			s.Name, hasName = d.text(f.Value, ".name")
		case "to":
			s.To, hasTo = d.text(f.Value, ".to")
			if hasTo {
				s.ToPattern.Value, s.ToPattern.Set = d.pattern(s.To)
				s.ToPattern.Span = s.To.Span
			}
		case "bind":
			s.Bind.Span = f.Value.Span()
			i, ok := d.enum(f.Value, ".bind", "bind", CodeUnknownBind, bindNames())
			k := f.Value.Kind()
			s.Bind.Set = s.Bind.Set || ok || k == zon.KindString || k == zon.KindEnum
			s.Bind.Value = Bind(i)
		case "as":
			s.As, _ = d.text(f.Value, ".as")
		}
	}
	if !isStruct(v) {
		return nil
	}
	if !d.require(v, "a secret", need{"name", hasName, `.name = "GITHUB_TOKEN"`}, need{"to", hasTo, `.to = "exec.path.gh", the action pattern it may reach`}) {
		return nil
	}
	return s
}

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func (d *decoder) server(v zon.Node) *Server {
	s := &Server{Span: v.Span()}
	var hasName bool
	known := []string{"name", "command", "url"}
	for i, n := 0, d.fields(v, "a server", known); i < n; i++ {
		f, ok := d.field(v, i, "a server", known)
		if !ok {
			continue
		}
		switch f.Name {
		case "name":
			s.Name, hasName = d.text(f.Value, ".name")
		case "url":
			s.URL, _ = d.text(f.Value, ".url")
		case "command":
			s.Command.Set, s.Command.Span = true, f.Value.Span()
			for j, n := 0, d.listLen(f.Value, ".command"); j < n; j++ {
				if t, ok := d.text(f.Value.Elem(j), "an argument of .command"); ok {
					s.Command.Value = append(s.Command.Value, t)
				}
			}
		}
	}
	if !isStruct(v) {
		return nil
	}
	if !d.require(v, "a server", need{"name", hasName, `.name = "notion"`}) {
		return nil
	}
	return s
}

func (d *decoder) program(v zon.Node) *Program {
	p := &Program{Span: v.Span()}
	var hasName bool
	known := []string{"name", "paths", "calls"}
	texts := func(f field, what string) Field[[]Text] {
		out := Field[[]Text]{Set: true, Span: f.Value.Span()}
		for j, n := 0, d.listLen(f.Value, what); j < n; j++ {
			if t, ok := d.text(f.Value.Elem(j), "an entry of "+what); ok {
				out.Value = append(out.Value, t)
			}
		}
		return out
	}
	for i, n := 0, d.fields(v, "a program", known); i < n; i++ {
		f, ok := d.field(v, i, "a program", known)
		if !ok {
			continue
		}
		switch f.Name {
		case "name":
			p.Name, hasName = d.text(f.Value, ".name")
		case "paths":
			p.Paths = texts(f, ".paths")
		case "calls":
			p.Calls = texts(f, ".calls")
		}
	}
	if !isStruct(v) {
		return nil
	}
	if !d.require(v, "a program", need{"name", hasName, `.name = "gh"`}) {
		return nil
	}
	return p
}

func (d *decoder) credentials(v zon.Node) Credentials {
	c := Credentials{Span: v.Span()}
	known := []string{"store"}
	for i, n := 0, d.fields(v, ".credentials", known); i < n; i++ {
		f, ok := d.field(v, i, ".credentials", known)
		if !ok {
			continue
		}
		if i, ok := d.enum(f.Value, ".credentials.store", "credential store", CodeUnknownStore, storeNames()); ok {
			c.Store = Field[Store]{Value: Store(i), Span: f.Value.Span(), Set: true}
		}
	}
	return c
}

func (d *decoder) expectation(v zon.Node) *Expectation {
	x := &Expectation{Span: v.Span()}
	var hasAction, hasDecision, ok = false, false, true
	known := []string{"action", "decision", "phase", "layer", "rule"}
	for i, n := 0, d.fields(v, "an expectation", known); i < n; i++ {
		f, fok := d.field(v, i, "an expectation", known)
		if !fok {
			continue
		}
		switch f.Name {
		case "action":
			t, tok := d.text(f.Value, ".action")
			hasAction = true
			if !tok {
				ok = false
				continue
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
				ok = false
			}
		case "decision":
			hasDecision = true
			dec, dok := d.decision(f.Value, ".decision")
			x.Decision, ok = Field[Decision]{Value: dec, Span: f.Value.Span(), Set: true}, ok && dok
		case "phase":
			i, pok := d.enum(f.Value, ".phase", "phase", CodeUnknownPhase, phaseNames())
			x.Phase, ok = Field[Phase]{Value: Phase(i), Span: f.Value.Span(), Set: true}, ok && pok
		case "layer":
			x.Layer, _ = d.text(f.Value, ".layer")
		case "rule":
			x.Rule, _ = d.text(f.Value, ".rule")
		}
	}
	if !isStruct(v) {
		return nil
	}
	if !d.require(v, "an expectation", need{"action", hasAction, `.action = "exec.path.gh"`}, need{"decision", hasDecision, ".decision = .allow, .ask or .deny"}) || !ok {
		return nil
	}
	return x
}

// nearest returns the candidate within edit distance 2 of s, closest
// first, or "".
func nearest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if dd := editDistance(s, c); dd < bestD && dd > 0 {
			best, bestD = c, dd
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
