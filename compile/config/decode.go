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
	CodeOrgName         = "org-name-missing"
	CodeExpectWildcard  = "expect-wildcard"
)

// Blocks are the top-level fields of chock.zon this toolchain reads.
var Blocks = []string{"policy", "secrets", "mcp_servers", "credentials", "expect"}

type decoder struct {
	file  string
	src   []byte
	diags diag.List
}

// Load parses and decodes a chock.zon. A syntax error yields a nil Config
// and that one diagnostic; otherwise every decoding problem is collected.
func Load(file string, src []byte) (*Config, diag.List) {
	doc, err := zon.ParseDocument(file, src)
	if err != nil {
		return nil, syntaxDiag(file, err)
	}
	return Decode(doc)
}

// LoadOrg parses and decodes an org bundle source.
func LoadOrg(file string, src []byte) (*Org, diag.List) {
	doc, err := zon.ParseDocument(file, src)
	if err != nil {
		return nil, syntaxDiag(file, err)
	}
	return DecodeOrg(doc)
}

func syntaxDiag(file string, err error) diag.List {
	var d *diag.Diagnostic
	if errors.As(err, &d) {
		return diag.List{d}
	}
	return diag.List{{Span: diag.Span{File: file}, Severity: diag.Error, Code: zon.CodeSyntax, Message: err.Error()}}
}

// Decode turns a parsed document into a Config.
func Decode(doc *zon.Document) (*Config, diag.List) {
	d := &decoder{file: doc.File, src: doc.Src}
	c := &Config{File: doc.File, Span: doc.Value.Span}
	c.Policy.Span = doc.Value.Span
	for _, f := range d.fields(doc.Value, "the file", nil) {
		switch f.Name {
		case "policy":
			c.Policy = d.policy(f.Value)
		case "secrets":
			for _, e := range d.list(f.Value, ".secrets") {
				if s := d.secret(e); s != nil {
					c.Secrets = append(c.Secrets, s)
				}
			}
		case "mcp_servers":
			for _, e := range d.list(f.Value, ".mcp_servers") {
				if s := d.server(e); s != nil {
					c.Servers = append(c.Servers, s)
				}
			}
		case "credentials":
			c.Credentials = d.credentials(f.Value)
		case "expect":
			for _, e := range d.list(f.Value, ".expect") {
				if x := d.expectation(e); x != nil {
					c.Expect = append(c.Expect, x)
				}
			}
		default:
			// The rest of Chock reads other top-level fields; a near miss of
			// one of ours is a typo.
			if near := nearest(f.Name, Blocks); near != "" {
				d.add(f.NameSpan, diag.Error, CodeUnknownBlock,
					fmt.Sprintf("unknown block .%s", f.Name), fmt.Sprintf("did you mean .%s?", near))
			}
		}
	}
	return c, d.diags
}

// DecodeOrg turns a parsed document into an Org.
func DecodeOrg(doc *zon.Document) (*Org, diag.List) {
	d := &decoder{file: doc.File, src: doc.Src}
	o := &Org{File: doc.File, Span: doc.Value.Span}
	o.Policy.Span = doc.Value.Span
	o.Policy.Default = Allow // an org layer with no default sets no ceiling
	hasName := false
	for _, f := range d.fields(doc.Value, "an org bundle source", []string{"name", "version", "policy"}) {
		switch f.Name {
		case "name":
			o.Name, hasName = d.text(f.Value, ".name")
			if hasName && o.Name.Value == "" {
				d.add(f.Value.Span, diag.Error, CodeOrgName, "the org bundle's .name is empty", "name the organisation, such as .name = \"acme\"")
			}
		case "version":
			o.Version, _ = d.text(f.Value, ".version")
		case "policy":
			def := o.Policy.Default
			o.Policy = d.policy(f.Value)
			if !o.Policy.DefaultSet {
				o.Policy.Default = def
			}
		case "secrets":
			d.add(f.NameSpan, diag.Error, CodeOrgSecrets, "an org bundle cannot hold .secrets",
				"there is no org layer for secrets: an org may only narrow, so move secret entries to the project's chock.zon")
		case "mcp_servers":
			d.add(f.NameSpan, diag.Error, CodeOrgServers, "an org bundle cannot hold .mcp_servers",
				"servers are configured by the project; an org narrows them through .policy rules such as mcp.<server>.*")
		}
	}
	if !hasName {
		d.add(startSpan(doc.Value.Span), diag.Error, CodeOrgName, "the org bundle has no .name", "add .name = \"your-org\"")
	}
	return o, d.diags
}

// require reports every needed field the entry v lacks; it returns true
// when none is missing.
func (d *decoder) require(v *zon.Value, what string, needs ...need) bool {
	ok := true
	for _, n := range needs {
		if !n.given {
			d.add(startSpan(v.Span), diag.Error, CodeMissingField, fmt.Sprintf("%s needs .%s", what, n.field), "add "+n.example)
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

func describe(v *zon.Value) string {
	switch v.Kind {
	case zon.KindStruct:
		return "a struct"
	case zon.KindTuple:
		return "a list"
	case zon.KindEmpty:
		return "an empty literal .{}"
	case zon.KindString:
		return "a string"
	case zon.KindEnum:
		return "an enum literal ." + v.Str
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

func (d *decoder) wrongType(v *zon.Value, what, want string) {
	d.add(v.Span, diag.Error, CodeWrongType, fmt.Sprintf("%s is %s, want %s", what, describe(v), want), "")
}

// fields checks that v is a struct (an empty literal counts as one with no
// fields) and returns its fields. With known non-nil, a field not in it is
// an unknown-field error with a did-you-mean, and is not returned.
func (d *decoder) fields(v *zon.Value, what string, known []string) []zon.Field {
	switch v.Kind {
	case zon.KindEmpty:
		return nil
	case zon.KindStruct:
	default:
		d.wrongType(v, what, "a struct .{ .field = value, ... }")
		return nil
	}
	if known == nil {
		return v.Fields
	}
	out := v.Fields[:0:0]
	for _, f := range v.Fields {
		if contains(known, f.Name) || (what == "an org bundle source" && (f.Name == "secrets" || f.Name == "mcp_servers")) {
			out = append(out, f)
			continue
		}
		hint := "known fields: ." + strings.Join(known, ", .")
		if near := nearest(f.Name, known); near != "" {
			hint = fmt.Sprintf("did you mean .%s?", near)
		}
		d.add(f.NameSpan, diag.Error, CodeUnknownField, fmt.Sprintf("unknown field .%s in %s", f.Name, what), hint)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// list checks that v is a list (or an empty literal) and returns its elements.
func (d *decoder) list(v *zon.Value, what string) []*zon.Value {
	switch v.Kind {
	case zon.KindTuple:
		return v.Elems
	case zon.KindEmpty:
		return nil
	}
	d.wrongType(v, what, "a list .{ ... }")
	return nil
}

func (d *decoder) text(v *zon.Value, what string) (Text, bool) {
	if v.Kind != zon.KindString {
		d.wrongType(v, what, "a string")
		return Text{}, false
	}
	return Text{Value: v.Str, Span: v.Span}, true
}

// name reads an enumerated value written as an enum literal or a string.
func (d *decoder) name(v *zon.Value, what string) (string, bool) {
	if v.Kind == zon.KindEnum || v.Kind == zon.KindString {
		return v.Str, true
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
func (d *decoder) enum(v *zon.Value, what, noun, code string, names []string) (int, bool) {
	n, ok := d.name(v, what)
	if !ok {
		return 0, false
	}
	if i := index(names, n); i >= 0 {
		return i, true
	}
	// Suggest in the form the value was written: "header" or .allow.
	form := func(name string) string {
		if v.Kind == zon.KindString {
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
	d.add(v.Span, diag.Error, code, fmt.Sprintf("unknown %s %q", noun, n), hint)
	return 0, false
}

func (d *decoder) decision(v *zon.Value, what string) (Decision, bool) {
	i, ok := d.enum(v, what, "decision", CodeUnknownDecision, decisionNames)
	return Decision(i), ok
}

func (d *decoder) policy(v *zon.Value) Policy {
	p := Policy{Span: v.Span, Present: true}
	for _, f := range d.fields(v, ".policy", []string{"default", "allow", "ask", "deny", "rules"}) {
		switch f.Name {
		case "default":
			if dec, ok := d.decision(f.Value, ".policy.default"); ok {
				p.Default, p.DefaultSet, p.DefaultSpan = dec, true, f.Value.Span
			}
		case "allow", "ask", "deny":
			dec, _ := ParseDecision(f.Name)
			if f.Name == "allow" && (f.Value.Kind == zon.KindTuple || f.Value.Kind == zon.KindEmpty) {
				p.AllowSpan, p.HasAllow = f.Value.Span, true
			}
			for _, e := range d.list(f.Value, ".policy."+f.Name) {
				t, ok := d.text(e, "an entry of .policy."+f.Name)
				if !ok {
					continue
				}
				if pat, ok := d.pattern(t); ok {
					p.Rules = append(p.Rules, &Rule{Pattern: pat, Decision: dec, DecisionSpan: f.NameSpan, Span: t.Span, From: f.Name})
				}
			}
		case "rules":
			for _, e := range d.list(f.Value, ".policy.rules") {
				if r := d.rule(e); r != nil {
					p.Rules = append(p.Rules, r)
				}
			}
		}
	}
	return p
}

func (d *decoder) rule(v *zon.Value) *Rule {
	r := &Rule{From: "rules"}
	var hasAction, hasDecision, ok = false, false, true
	for _, f := range d.fields(v, "a rule", []string{"action", "decision", "why"}) {
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
			r.Decision, r.DecisionSpan = dec, f.Value.Span
			ok = ok && dok
		case "why":
			r.Why, _ = d.text(f.Value, ".why")
		}
	}
	if v.Kind != zon.KindStruct && v.Kind != zon.KindEmpty {
		return nil
	}
	if !d.require(v, "a rule", need{"action", hasAction, `.action = "exec.path.gh"`}, need{"decision", hasDecision, ".decision = .allow, .ask or .deny"}) || !ok {
		return nil
	}
	return r
}

func (d *decoder) secret(v *zon.Value) *Secret {
	s := &Secret{Span: v.Span}
	var hasName, hasTo bool
	for _, f := range d.fields(v, "a secret", []string{"name", "to", "bind", "as"}) {
		switch f.Name {
		case "name":
			s.Name, hasName = d.text(f.Value, ".name")
		case "to":
			s.To, hasTo = d.text(f.Value, ".to")
			if hasTo {
				s.ToPattern, s.ToOK = d.pattern(s.To)
			}
		case "bind":
			s.BindSpan = f.Value.Span
			i, ok := d.enum(f.Value, ".bind", "bind", CodeUnknownBind, bindNames)
			s.BindSet = s.BindSet || ok || f.Value.Kind == zon.KindString || f.Value.Kind == zon.KindEnum
			s.Bind = Bind(i)
		case "as":
			s.As, _ = d.text(f.Value, ".as")
		}
	}
	if v.Kind != zon.KindStruct && v.Kind != zon.KindEmpty {
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

func (d *decoder) server(v *zon.Value) *Server {
	s := &Server{Span: v.Span}
	var hasName bool
	for _, f := range d.fields(v, "a server", []string{"name", "command", "url"}) {
		switch f.Name {
		case "name":
			s.Name, hasName = d.text(f.Value, ".name")
		case "url":
			s.URL, s.HasURL = d.text(f.Value, ".url")
		case "command":
			s.HasCommand, s.CommandSpan = true, f.Value.Span
			for _, e := range d.list(f.Value, ".command") {
				if t, ok := d.text(e, "an argument of .command"); ok {
					s.Command = append(s.Command, t)
				}
			}
		}
	}
	if v.Kind != zon.KindStruct && v.Kind != zon.KindEmpty {
		return nil
	}
	if !d.require(v, "a server", need{"name", hasName, `.name = "notion"`}) {
		return nil
	}
	return s
}

func (d *decoder) credentials(v *zon.Value) Credentials {
	c := Credentials{Span: v.Span}
	for _, f := range d.fields(v, ".credentials", []string{"store"}) {
		if i, ok := d.enum(f.Value, ".credentials.store", "credential store", CodeUnknownStore, storeNames); ok {
			c.Store, c.StoreSpan = Store(i), f.Value.Span
		}
	}
	return c
}

func (d *decoder) expectation(v *zon.Value) *Expectation {
	x := &Expectation{Span: v.Span}
	var hasAction, hasDecision, ok = false, false, true
	for _, f := range d.fields(v, "an expectation", []string{"action", "decision", "phase", "layer", "rule"}) {
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
			x.Decision, x.DecisionSpan, ok = dec, f.Value.Span, ok && dok
		case "phase":
			i, pok := d.enum(f.Value, ".phase", "phase", CodeUnknownPhase, []string{"loop", "start"})
			x.Phase, x.PhaseSpan, ok = Phase(i), f.Value.Span, ok && pok
		case "layer":
			x.Layer, _ = d.text(f.Value, ".layer")
		case "rule":
			x.Rule, _ = d.text(f.Value, ".rule")
		}
	}
	if v.Kind != zon.KindStruct && v.Kind != zon.KindEmpty {
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
