package compile

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/open-policy-agent/opa/v1/ast"
)

// actionRE is the regular expression a well-formed action matches, in the
// compiled policy's input checks.
func actionRE() string {
	c := action.SegmentClass()
	return "`^(?:" + c + "+(\\." + c + "+){0," + fmt.Sprint(action.MaxSegments-1) + "}|" + action.PathActionRegexp() + ")$`"
}

// ActionError is what a decision says of a malformed action
// (data.chock.decision's "error" for an action string that is not one).
var ActionError = fmt.Sprintf("input.action must be 1 to %d dot-separated non-empty segments without '*', white space, control or invisible characters", action.MaxSegments)

// Layer is one policy layer as the compiler sees it.
type Layer struct {
	Kind    string // "project" or "org"
	Name    string // "project", or the org's .name
	Version string
	File    string
	Policy  *config.Policy
	// pkg is the Rego package name under chock.layer.
	pkg string
	// index is the layer's place in data.chock.meta.layers.
	index int
	// keep, when set, says which rules the layer's module holds (Input.Only):
	// the others are left out, their numbers and places unchanged.
	keep func(*config.Rule) bool
}

// kept is how many of the layer's rules its module holds.
func (l *Layer) kept() int {
	if l.keep == nil {
		return len(l.Policy.Rules)
	}
	n := 0
	for _, r := range l.Policy.Rules {
		if l.keep(r) {
			n++
		}
	}
	return n
}

// spanJSON writes a span as a Rego (JSON) object literal, the shape
// diag.Span has in JSON.
func spanJSON(sp diag.Span) string {
	pos := func(p diag.Pos) string {
		return fmt.Sprintf(`{"line": %d, "col": %d, "offset": %d}`, p.Line, p.Col, p.Offset)
	}
	return fmt.Sprintf(`{"file": %s, "start": %s, "end": %s}`, quote(sp.File), pos(sp.Start), pos(sp.End))
}

// quote writes s as a Rego (JSON) string literal, as encoding/json does
// without HTML escaping.
func quote(s string) string { return string(appendQuote(nil, s)) }

// appendQuote appends s as a Rego (JSON) string literal. Printable ASCII
// without '"' and '\' is written as it is; anything else goes through
// encoding/json, so the two never differ.
func appendQuote(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s)
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// specificityKey orders patterns by specificity as a string: one character
// per segment (0 literal, 1 inner '*', 2 trailing '*') and a final 9, so
// that the smallest key among matching patterns is the most specific one
// (action.Compare's order).
func specificityKey(p action.Pattern) string {
	var b strings.Builder
	for i := 0; i < p.Len(); i++ {
		if p.Kind(i) == action.PathGlob {
			// After a literal ("0" then "9"), before '*' ("1"): "0A" and
			// the literal characters' count, the more the smaller.
			fmt.Fprintf(&b, "0A%05d", 99999-p.Glob().Literals())
			continue
		}
		b.WriteByte(byte('0' + p.Kind(i)))
	}
	b.WriteByte('9')
	return b.String()
}

var rankOf = map[config.Decision]int{config.Deny: 0, config.Ask: 1, config.Allow: 2}

// ruleNumbers gives every rule of a layer its number in data.chock.core:
// base + class*n + order, where n is the layer's number of rules, order
// the rule's place in the layer, and class the rank of its (specificity
// key, decision rank) among the layer's. The smallest number of a layer's
// rules that match decides the layer: the most specific pattern, deny
// before ask before allow on identical patterns, the first written among
// equals; its remainder by n is the rule's place.
func ruleNumbers(rules []*config.Rule, base int64) []int64 {
	type class struct {
		key     string
		builtin bool // chock's own rule: after the file's of the same key
		rank    int
	}
	classes := make([]class, len(rules))
	for i, r := range rules {
		key := specificityKey(r.Pattern)
		if r.Fallback {
			key = "~" // after every other rule: it decides only where none matches
		}
		if r.Args != nil {
			// Before the same pattern without .args ('~' sorts after
			// digits), a longer .args before a shorter.
			key += fmt.Sprintf("%03d", 999-len(r.Args))
		} else if !r.Fallback {
			key += "~"
		}
		classes[i] = class{key, r.Builtin, rankOf[r.Decision]}
	}
	distinct := append([]class(nil), classes...)
	sort.Slice(distinct, func(i, j int) bool {
		if distinct[i].key != distinct[j].key {
			return distinct[i].key < distinct[j].key
		}
		if distinct[i].builtin != distinct[j].builtin {
			return !distinct[i].builtin
		}
		return distinct[i].rank < distinct[j].rank
	})
	rank := make(map[class]int64, len(distinct))
	for _, c := range distinct {
		if _, ok := rank[c]; !ok {
			rank[c] = int64(len(rank))
		}
	}
	n := int64(len(rules))
	out := make([]int64, len(rules))
	for i, c := range classes {
		out[i] = base + rank[c]*n + int64(i)
	}
	return out
}

// stride is how far apart the layers' numbers in data.chock.core are:
// layer i's are from i*stride on, below (i+1)*stride. It is the smallest
// power of ten at least as large as every layer's n*n.
func stride(ls []*Layer) int64 {
	s := int64(10)
	for _, l := range ls {
		n := int64(len(l.Policy.Rules))
		for s < n*n {
			s *= 10
		}
	}
	return s
}

// globMeta are the characters glob.match gives a meaning to.
const globMeta = `*?[]{}\!`

// condKind is the shape of the one indexed condition a pattern compiles to.
type condKind int

const (
	condEqual    condKind = iota // input.action == "exec.path.gh"
	condPrefix                   // startswith(input.action, "mcp.notion.")
	condGlob                     // glob.match("mcp.*.tool.search", ["."], input.action)
	condSegments                 // input.segments[0] == "mcp"; input.segments[2] == "tool"; input.segments[3]
	condArray                    // input.segments = ["net", "fetch", _, "[::1]"]
	condPath                     // regex.match(`^fs\.read\.~/\.ssh/.+$`, input.action), for a path glob
)

// condition is the body of the one rule a pattern compiles to. Every
// shape is a condition OPA's rule index uses to hand evaluation only the
// rules that match: equality for a literal, startswith for a literal
// prefix and a trailing '*', glob.match with '.' as the delimiter for
// whole-segment inner '*'s. A pattern with both an inner and a trailing
// '*', or with an inner '*' beside a literal segment holding a glob
// metacharacter (an IPv6 host in brackets, say), is matched segment by
// segment on input.segments, the action split at its dots: equality for
// every literal segment and, for a trailing '*', the segment it must at
// least reach; without one, the whole array, '*' as a wildcard.
type condition struct {
	kind condKind
	arg  string   // the literal, prefix or glob; condPath: the regular expression
	segs []string // condSegments, condArray: the pattern's segments
	// not is, for a relative path glob, the regular expression the action
	// must not match (a path that is absolute or under ~).
	not string
	// prefix is, for a path glob, the literal start every action it
	// matches has: a startswith the rule index uses.
	prefix string
}

// regoSet is strings as a Rego set literal.
func regoSet(ss []string) string {
	qs := make([]string, len(ss))
	for i, x := range ss {
		qs[i] = quote(x)
	}
	return "{" + strings.Join(qs, ", ") + "}"
}

// conditionOf is the condition pattern p compiles to.
func conditionOf(p action.Pattern) condition {
	segs := p.Segments()
	last := len(segs) - 1
	if p.IsLiteral() {
		return condition{kind: condEqual, arg: p.String()}
	}
	if g := p.Glob(); g != nil {
		// The literal start (before the path's first '*') for the rule
		// index, then the path's regular expression.
		segs := p.Segments()
		lit := strings.Join(segs[:len(segs)-1], ".") + "." + segs[len(segs)-1][:strings.IndexByte(segs[len(segs)-1], '*')]
		c := condition{kind: condPath, prefix: lit, arg: "^" + action.PathPatternPrefix(p) + "(?:" + g.Regexp() + ")$"}
		if g.Form() == action.Relative {
			c.not = "^" + action.PathPatternPrefix(p) + action.NotRelativeRegexp
		}
		return c
	}
	trailing := p.Kind(last) == action.Trailing
	inner, meta := false, false
	for i, s := range segs {
		if p.Kind(i) == action.Star {
			inner = true
		}
		if p.Kind(i) == action.Literal && strings.ContainsAny(s, globMeta) {
			meta = true
		}
	}
	// glob.match splits the action at every dot, a path's too: a pattern
	// that may match an action ending in a path (its first segment '*' or
	// fs) is matched on input.segments, where the path is one segment.
	pathLike := segs[0] == "*" || slices.ContainsFunc(action.PathPrefixes(), func(pre string) bool { return strings.HasPrefix(pre, segs[0]+".") })
	switch {
	case trailing && !inner:
		return condition{kind: condPrefix, arg: strings.Join(segs[:last], ".") + "."}
	case !trailing && !meta && !pathLike:
		return condition{kind: condGlob, arg: p.String()}
	case trailing:
		return condition{kind: condSegments, segs: segs}
	}
	return condition{kind: condArray, segs: segs}
}

// needsSegments says whether the condition reads input.segments.
func (c condition) needsSegments() bool { return c.kind == condSegments || c.kind == condArray }

// lines are the condition's expressions as Rego text.
func (c condition) lines() []string {
	switch c.kind {
	case condEqual:
		return []string{"input.action == " + quote(c.arg)}
	case condPrefix:
		return []string{"startswith(input.action, " + quote(c.arg) + ")"}
	case condGlob:
		return []string{"glob.match(" + quote(c.arg) + `, ["."], input.action)`}
	case condPath:
		out := []string{"startswith(input.action, " + quote(c.prefix) + ")", "regex.match(" + quote(c.arg) + ", input.action)"}
		if c.not != "" {
			out = append(out, "not regex.match("+quote(c.not)+", input.action)")
		}
		return out
	case condSegments:
		var out []string
		last := len(c.segs) - 1
		for i, s := range c.segs[:last] {
			if s != "*" {
				out = append(out, fmt.Sprintf("input.segments[%d] == %s", i, quote(s)))
			}
		}
		return append(out, fmt.Sprintf("input.segments[%d]", last))
	}
	elems := make([]string, len(c.segs))
	for i, s := range c.segs {
		elems[i] = "_"
		if s != "*" {
			elems[i] = quote(s)
		}
	}
	return []string{"input.segments = [" + strings.Join(elems, ", ") + "]"}
}

// The terms the built rules share. OPA's compiler copies every module it
// compiles, so sharing them between rules is safe.
var (
	actionRef   = ast.RefTerm(ast.VarTerm("input"), ast.StringTerm("action"))
	segmentsRef = ast.Ref{ast.VarTerm("input"), ast.StringTerm("segments")}
	dotDelim    = ast.ArrayTerm(ast.StringTerm("."))
	equalOp     = ast.RefTerm(ast.VarTerm("equal"))
	eqOp        = ast.RefTerm(ast.VarTerm("eq"))
	startsOp    = ast.RefTerm(ast.VarTerm("startswith"))
	globOp      = ast.RefTerm(ast.VarTerm("glob"), ast.StringTerm("match"))
	regexOp     = ast.RefTerm(ast.VarTerm("regex"), ast.StringTerm("match"))
	coreVar     = ast.Var("core")
)

// body is the condition as OPA's parser reads lines(); wildcard is the
// parser's counter of '_' in the module, which it names $0, $1, ...
func (c condition) body(wildcard *int) ast.Body {
	switch c.kind {
	case condEqual:
		return ast.NewBody(ast.NewExpr([]*ast.Term{equalOp, actionRef, ast.StringTerm(c.arg)}))
	case condPrefix:
		return ast.NewBody(ast.NewExpr([]*ast.Term{startsOp, actionRef, ast.StringTerm(c.arg)}))
	case condGlob:
		return ast.NewBody(ast.NewExpr([]*ast.Term{globOp, ast.StringTerm(c.arg), dotDelim, actionRef}))
	case condPath:
		b := ast.NewBody(ast.NewExpr([]*ast.Term{startsOp, actionRef, ast.StringTerm(c.prefix)}))
		b.Append(ast.NewExpr([]*ast.Term{regexOp, ast.StringTerm(c.arg), actionRef}))
		if c.not != "" {
			b.Append(ast.NewExpr([]*ast.Term{regexOp, ast.StringTerm(c.not), actionRef}).Complement())
		}
		return b
	case condSegments:
		var b ast.Body
		last := len(c.segs) - 1
		seg := func(i int) *ast.Term {
			return ast.RefTerm(append(segmentsRef[:2:2], ast.InternedTerm(i))...)
		}
		for i, s := range c.segs[:last] {
			if s != "*" {
				b.Append(ast.NewExpr([]*ast.Term{equalOp, seg(i), ast.StringTerm(s)}))
			}
		}
		b.Append(ast.NewExpr(seg(last)))
		return b
	}
	elems := make([]*ast.Term, len(c.segs))
	for i, s := range c.segs {
		if s == "*" {
			elems[i] = ast.VarTerm(ast.WildcardPrefix + strconv.Itoa(*wildcard))
			*wildcard++
		} else {
			elems[i] = ast.StringTerm(s)
		}
	}
	return ast.NewBody(ast.NewExpr([]*ast.Term{eqOp, ast.NewTerm(segmentsRef), ast.ArrayTerm(elems...)}))
}

// policySegments says whether any rule of the layers is matched on
// input.segments.
func policySegments(ls []*Layer) bool {
	for _, l := range ls {
		for _, r := range l.Policy.Rules {
			if conditionOf(r.Pattern).needsSegments() {
				return true
			}
		}
	}
	return false
}

// templates are the fixed text of the generated modules (rego/*.rego.tmpl):
// main.rego.tmpl, offer.rego.tmpl and layer.rego.tmpl. What varies is
// worked out here and handed to them; a layer's rules, which a large
// policy has hundreds of thousands of, are written by layerModule itself.
//
//go:embed rego/*.rego.tmpl
var templateFS embed.FS

var templates = template.Must(template.New("").ParseFS(templateFS, "rego/*.rego.tmpl"))

// execute writes template name with data. The templates are fixed and
// their data is built here: an error is a bug in chock.
func execute(name string, data any) (string, error) {
	var b strings.Builder
	if err := templates.ExecuteTemplate(&b, name, data); err != nil {
		return "", fmt.Errorf("rego template %s: %w", name, err)
	}
	return b.String(), nil
}

// layerHead is the part of a layer's module before its rules: pkg is its
// package, metaRef where its meta is.
func layerHead(l *Layer, base int64, pkg, metaRef string) (string, error) {
	type head struct {
		File, Kind, Name, MetaRef, Package string
		Index, N                           int
		Base                               int64
	}
	return execute("layer.rego.tmpl", head{
		File: l.File, Kind: l.Kind, Name: quote(l.Name), MetaRef: metaRef, Package: pkg,
		Index: l.index, N: max(len(l.Policy.Rules), 1), Base: base,
	})
}

// ruleAnnotation is the METADATA of the rule compiled from r, as its
// comment text (one flow-style YAML line) and as OPA's parser reads that
// text: rule scope, custom {pattern, decision, span}.
func ruleAnnotation(text []byte, r *config.Rule) []byte {
	pattern, decision, span := r.Pattern.String(), r.Decision.String(), r.Span.String()
	text = append(text, "# METADATA\n# custom: {pattern: "...)
	text = appendQuote(text, pattern)
	text = append(text, ", decision: "...)
	text = appendQuote(text, decision)
	text = append(text, ", span: "...)
	text = appendQuote(text, span)
	return append(text, "}\n"...)
}

// layerModule writes the Rego module of one layer, one rule per pattern,
// its numbers from base on, each with its METADATA, and builds the same
// module as OPA's parser reads it without annotations: the head parsed,
// the rules built as ast values (parsing them is most of the cost of a
// large policy). The METADATA is for OPA's tooling (opa inspect -a): the
// engine never reads it, and building it in memory cost 60% more peak
// memory on a 100,000-rule policy. pkg is the module's package, metaRef
// where the layer's meta is, for its comment.
func layerModule(l *Layer, path string, base int64, pkg, metaRef string) (string, *ast.Module, error) {
	head, err := layerHead(l, base, pkg, metaRef)
	if err != nil {
		return "", nil, err
	}
	m, err := ast.ParseModuleWithOpts(path, head, ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
	if err != nil {
		return "", nil, err
	}
	text := make([]byte, 0, len(head)+len(l.Policy.Rules)*160)
	text = append(text, head...)
	row := strings.Count(head, "\n") + 1
	wildcard := 0
	nums := ruleNumbers(l.Policy.Rules, base)
	m.Rules = make([]*ast.Rule, 0, len(l.Policy.Rules))
	for i, r := range l.Policy.Rules {
		if l.keep != nil && !l.keep(r) {
			continue
		}
		c := conditionOf(r.Pattern)
		lines := c.lines()
		var argsBody ast.Body
		if r.Args != nil {
			more := argsLines(r)
			lines = append(lines, more...)
			if argsBody, err = ast.ParseBodyWithOpts(strings.Join(more, "\n"), ast.ParserOptions{RegoVersion: ast.RegoV1}); err != nil {
				return "", nil, fmt.Errorf("the .args of %s: %w", r.Key(), err)
			}
		}
		text = append(text, '\n')
		row++
		text = ruleAnnotation(text, r)
		row += 2
		text = append(text, "core contains "...)
		text = strconv.AppendInt(text, nums[i], 10)
		loc := &ast.Location{File: path, Row: row, Col: 1}
		if len(lines) == 1 {
			text = append(text, " if "...)
			text = append(text, lines[0]...)
			text = append(text, '\n')
			row++
		} else {
			text = append(text, " if {\n"...)
			for _, line := range lines {
				text = append(text, '\t')
				text = append(text, line...)
				text = append(text, '\n')
			}
			text = append(text, "}\n"...)
			row += len(lines) + 2
		}
		key := ast.NewTerm(ast.Number(strconv.FormatInt(nums[i], 10)))
		rule := &ast.Rule{
			Head:     &ast.Head{Name: coreVar, Reference: ast.Ref{ast.VarTerm("core")}, Key: key, Location: loc},
			Body:     append(c.body(&wildcard), argsBody...),
			Location: loc,
			Module:   m,
		}
		for _, e := range rule.Body {
			e.Location = loc
		}
		m.Rules = append(m.Rules, rule)
	}
	return string(text), m, nil
}

// argsLines are the Rego expressions of rule r's .args, matched as
// action.Args.Matches does: an allow's on the first arguments, a deny's
// or an ask's in order anywhere among them, where an unknown argument
// (action.Unknown) stands for any element.
func argsLines(r *config.Rule) []string {
	prefix := r.Decision == config.Allow
	var out []string
	if prefix {
		out = append(out, fmt.Sprintf("count(input.args) >= %d", len(r.Args)))
	}
	for i, e := range r.Args {
		// An allow's element i is argument i; a deny's or an ask's is the
		// first argument after the previous element's that it stands for
		// (the greedy leftmost match, linear in the arguments).
		at := "input.args[" + strconv.Itoa(i) + "]"
		if !prefix {
			at = "input.args[j]"
		}
		alts := slices.Clone(e.Alts)
		if e.Alts != nil && !prefix {
			alts = append(alts, action.Unknown)
		}
		cond := at
		switch {
		case e.Alts == nil:
		case len(alts) == 1:
			cond = at + " == " + quote(alts[0])
		default:
			qs := make([]string, len(alts))
			for j, a := range alts {
				qs[j] = quote(a)
			}
			cond = at + " in {" + strings.Join(qs, ", ") + "}"
		}
		if prefix {
			out = append(out, cond)
			continue
		}
		after := ""
		if i > 0 {
			after = fmt.Sprintf("; j > i%d", i-1)
		}
		if i == len(r.Args)-1 {
			// The last is only needed to be there: undefined when it is not.
			out = append(out, fmt.Sprintf("min({j | some j; %s%s})", cond, after))
			continue
		}
		out = append(out, fmt.Sprintf("i%d := min({j | some j; %s%s})", i, cond, after))
	}
	return out
}

// mainData is what main.rego.tmpl is written from.
type mainData struct {
	// Segments says a rule is matched on input.segments; Linked that the
	// org layers come from their own bundles; Args that a rule may read
	// input.args, which the input checks then check.
	Segments, Linked, Args bool
	MaxSegments            int
	// ActionRE and ActionError are Rego literals.
	ActionRE, ActionError string
	// PathPrefixes are action.PathPrefixes as a Rego set.
	PathPrefixes string
	Layers       []mainLayer
	Stride       int64
	MetaFormat   int
	// LinkedOrgs are the linked orgs' names as Rego strings, joined.
	LinkedOrgs string
	// NoRules says no layer of this bundle has a rule.
	NoRules bool
	// Caps are the [rank, org name] pairs of the org layers that can cap
	// the project's decision, joined; "" when none can.
	Caps string
}

// mainLayer is one layer's part in main.rego.tmpl.
type mainLayer struct {
	Index int
	// Linked says the layer is an org's, from its own bundle at Ref.
	Linked bool
	// Head is the start of the layer's result object; Name its name as a
	// Rego string.
	Head, Name, Ref string
	// Best is the expression of the layer's smallest number, N its number
	// of rules (at least 1).
	Best string
	N    int
	// Default is the default decision as a Rego string; DefaultSpan,
	// when the file set it, the result's "default_span" member.
	Default, DefaultSpan string
}

// mainModule writes package chock: input checks, data.chock.core (what
// chock's engine asks), the decision with its explanation (what stock OPA
// is asked), the decisions on several actions and the secrets offered to
// a call or a server.
//
// When linked, the org layers are not in this bundle: each org's own
// bundle, loaded beside it, gives its numbers (data.chock_orgs.NAME.core,
// from 0), moved here into the org's layer range, and its meta
// (data.chock_orgs.NAME.meta); a linked org whose bundle is not loaded
// makes every decision a deny with an error naming it.
func mainModule(layers []*Layer, segments bool, stride int64, linked bool) (string, error) {
	data := mainData{
		Segments: segments, Linked: linked,
		MaxSegments: action.MaxSegments,
		ActionRE:    actionRE(), ActionError: quote(ActionError), PathPrefixes: regoSet(action.PathPrefixes()),
		Stride: stride, MetaFormat: MetaFormat,
	}
	var linkedNames, caps []string
	rules := 0
	for i, l := range layers {
		base := int64(i) * stride
		ml := mainLayer{
			Index: i, Head: fmt.Sprintf(`"layer": %s, "name": %s`, quote(l.Kind), quote(l.Name)), Name: quote(l.Name),
			Best: layerBest(base, stride), N: max(len(l.Policy.Rules), 1), Default: quote(l.Policy.Default.Value.String()),
		}
		if linked && i > 0 {
			ml.Linked, ml.Ref = true, orgRef(l.Name)
			linkedNames = append(linkedNames, ml.Name)
		} else {
			rules += l.kept()
			if l.Policy.Default.Set {
				ml.DefaultSpan = ", \"default_span\": " + spanJSON(l.Policy.Default.Span)
			}
		}
		if i > 0 && layers[0].Kind == "project" {
			// The first org layer at the minimum, when it is below the project's.
			caps = append(caps, fmt.Sprintf("[rank[l%d.decision], %s]", i, ml.Name))
		}
		data.Layers = append(data.Layers, ml)
	}
	data.LinkedOrgs, data.Caps, data.NoRules = strings.Join(linkedNames, ", "), strings.Join(caps, ", "), rules == 0
	for _, l := range layers {
		data.Args = data.Args || linked || slices.ContainsFunc(l.Policy.Rules, func(r *config.Rule) bool { return r.Args != nil })
	}
	return execute("main.rego.tmpl", data)
}

// layerBest is the smallest of the numbers nums of the layer whose numbers
// start at base, less base.
func layerBest(base, stride int64) string {
	if base == 0 {
		return fmt.Sprintf("min({x | some x in nums; x < %d})", stride)
	}
	return fmt.Sprintf("(min({x | some x in nums; x >= %d; x < %d}) - %d)", base, base+stride, base)
}

// offerRule is one rule of package chock.offer: Set (for_action or
// for_server) contains Head if every line of Body holds.
type offerRule struct {
	Set, Head string
	Body      []string
}

// secretsModule writes package chock.offer: the secrets each call or server
// is offered, one rule per secret, indexed where the pattern
// allows (a call's secrets are few, so a pattern matched on its segments
// is guarded by its literal prefix only).
func secretsModule(c *config.Config) (string, error) {
	var rules []offerRule
	for order, s := range c.Secrets {
		if !s.ToPattern.Set {
			continue
		}
		head := fmt.Sprintf(`{"order": %d, "name": %s, "bind": %s, "as": %s, "to": %s, "span": %s}`,
			order, quote(s.Name.Value), quote(s.Bind.Value.String()), quote(s.Variable()), quote(s.To.Value), spanJSON(s.Span))
		p := s.ToPattern.Value
		segs := p.Segments()
		switch segs[0] {
		case "exec":
			// A call of program P is offered every secret whose to matches exec.path.P.
			cond := conditionOf(p)
			lines := cond.lines()
			if cond.needsSegments() {
				prefix := ""
				for i, sg := range segs {
					if p.Kind(i) != action.Literal {
						break
					}
					prefix += sg + "."
				}
				quoted := make([]string, len(segs))
				for i, sg := range segs {
					quoted[i] = quote(sg)
				}
				lines = []string{fmt.Sprintf("startswith(input.action, %s)", quote(prefix)),
					fmt.Sprintf("data.chock.segments_match([%s], data.chock.segments, %v)", strings.Join(quoted, ", "), p.Kind(len(segs)-1) == action.Trailing)}
			}
			rules = append(rules, offerRule{"for_action", head, lines})
		case "mcp":
			// A server S is offered the secrets whose to covers S's whole
			// namespace: mcp.S.*, mcp.*.* or mcp.*.
			switch {
			case len(segs) == 2 && segs[1] == "*", len(segs) == 3 && segs[2] == "*" && segs[1] == "*":
				rules = append(rules, offerRule{"for_server", head, []string{"is_string(input.server)"}})
			case len(segs) == 3 && segs[2] == "*":
				rules = append(rules, offerRule{"for_server", head, []string{"input.server == " + quote(segs[1])}})
			}
		}
	}
	return execute("offer.rego.tmpl", rules)
}
