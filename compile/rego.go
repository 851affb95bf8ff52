package compile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
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
	return "`^" + c + "+(\\." + c + "+){0," + fmt.Sprint(action.MaxSegments-1) + "}$`"
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
		key  string
		rank int
	}
	classes := make([]class, len(rules))
	for i, r := range rules {
		classes[i] = class{specificityKey(r.Pattern), rankOf[r.Decision]}
	}
	distinct := append([]class(nil), classes...)
	sort.Slice(distinct, func(i, j int) bool {
		if distinct[i].key != distinct[j].key {
			return distinct[i].key < distinct[j].key
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
	arg  string   // the literal, prefix or glob
	segs []string // condSegments, condArray: the pattern's segments
}

// conditionOf is the condition pattern p compiles to.
func conditionOf(p action.Pattern) condition {
	segs := p.Segments()
	last := len(segs) - 1
	if p.IsLiteral() {
		return condition{kind: condEqual, arg: p.String()}
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
	switch {
	case trailing && !inner:
		return condition{kind: condPrefix, arg: strings.Join(segs[:last], ".") + "."}
	case !trailing && !meta:
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

// layerHead is the part of a layer's module before its rules: pkg is its
// package, metaRef where its meta is.
func layerHead(l *Layer, base int64, pkg, metaRef string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Generated by chock from %s; do not edit.\n", l.File)
	fmt.Fprintf(&b, `# Layer %[1]d: %[2]s %[3]s, %[6]s.
#
# The rules of every layer are one set, core: the numbers of the rules
# that match the action. This layer's numbers start at %[4]d; less that, a
# number's quotient by the number of rules (%[5]d) orders the rules by
# specificity, deny before ask before allow on identical patterns, and its
# remainder is the rule's place in %[6]s.rules.
# The layer's smallest number decides it; none, its default. The
# annotation above each rule names the chock.zon rule it was written from.
package %[7]s

import rego.v1
`, l.index, l.Kind, quote(l.Name), base, max(len(l.Policy.Rules), 1), metaRef, pkg)
	return b.String()
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
	head := layerHead(l, base, pkg, metaRef)
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
		c := conditionOf(r.Pattern)
		lines := c.lines()
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
			Body:     c.body(&wildcard),
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

// mainModule writes package chock: input checks, data.chock.core (what
// chock's engine asks), the decision with its explanation (what stock OPA
// is asked) and the secrets offered to a call or a server.
//
// When linked, the org layers are not in this bundle: each org's own
// bundle, loaded beside it, gives its numbers (data.chock_orgs.NAME.core,
// from 0), moved here into the org's layer range, and its meta
// (data.chock_orgs.NAME.meta); a linked org whose bundle is not loaded
// makes every decision a deny with an error naming it.
func mainModule(layers []*Layer, segments bool, stride int64, linked bool) string {
	var b strings.Builder
	b.WriteString(`# Generated by chock; do not edit.
#
# data.chock.decision, input {"action": "...", "phase": "start"|"loop"}:
# per layer the most specific matching rule decides (identical patterns:
# deny beats ask beats allow), else the layer's default; the effective
# decision is the most restrictive of all layers; at start ask reads as deny.
#
# data.chock.core, input {"action": "..."`)
	if segments {
		b.WriteString(`, "segments": [...]`)
	}
	if linked {
		b.WriteString(`, "segments": [...] when a linked org needs them`)
	}
	b.WriteString(`}: what chock's own
# engine asks, for an action it checked itself: the numbers of the rules
# that match it, in every layer (see the layer modules), from which
# data.chock.meta gives the decision.
#
# data.chock.secrets, input {"action": "exec.path.gh"} or {"server": "notion"}:
# the secrets offered to that call or server, before any secret.use decision.
package chock

import rego.v1

max_segments := `)
	fmt.Fprintf(&b, "%d\n\n", action.MaxSegments)
	b.WriteString(`decision_name := ["deny", "ask", "allow"]

rank := {"deny": 0, "ask": 1, "allow": 2}

# Input checks. The happy path asks one rule, input_ok; the errors are
# worked out only for a malformed input, which is denied with an error,
# never left undefined.
input_ok if {
	is_string(input.action)
	regex.match(` + actionRE() + `, input.action)
	object.get(input, "phase", "loop") in {"start", "loop"}
}

in_action := input.action if {
	input_ok
} else := object.get(input, "action", null) if {
	is_object(input)
} else := null

in_phase := object.get(input, "phase", "loop") if {
	is_object(input)
} else := "loop"

input_errors contains "input must be an object" if not is_object(input)

input_errors contains "input.action must be a string" if {
	is_object(input)
	not is_string(in_action)
}

input_errors contains ` + quote(ActionError) + ` if {
	is_string(in_action)
	not regex.match(` + actionRE() + `, in_action)
}

input_errors contains "input.phase must be \"start\" or \"loop\"" if not in_phase in {"start", "loop"}

segments := split(input.action, ".") if input_ok

# segments_match is the generic matcher for the secrets offered to a call
# whose pattern glob.match cannot take: pat is the pattern's segments,
# trailing says its last '*' takes one or more segments.
segments_match(pat, segs, false) if {
	count(segs) == count(pat)
	every i, p in pat {
		segment_ok(p, segs[i])
	}
}

segments_match(pat, segs, true) if {
	count(segs) >= count(pat)
	every i, p in array.slice(pat, 0, count(pat) - 1) {
		segment_ok(p, segs[i])
	}
}

segment_ok("*", _)

segment_ok(p, s) if p == s

`)
	var locals, ranks, results, caps, linkedNames []string
	rules := 0
	for i, l := range layers {
		base, n := int64(i)*stride, max(len(l.Policy.Rules), 1)
		head := fmt.Sprintf(`"layer": %s, "name": %s`, quote(l.Kind), quote(l.Name))
		if linked && i > 0 {
			ref := orgRef(l.Name)
			linkedNames = append(linkedNames, quote(l.Name))
			fmt.Fprintf(&b, `# layer_%[1]d is layer %[1]d's part in data.chock.decision, given core: org
# %[2]s's, from its own bundle: the rule of its smallest number, as its
# meta records it, or its default.
layer_%[1]d(nums) := {%[3]s, "decision": r.decision, "default": false, "rule": r} if {
	l := %[4]s.meta.layers[0]
	r := l.rules[%[5]s %% count(l.rules)]
} else := org_default(%[2]s, %[4]s.meta.layers[0])

core contains x if {
	some n in %[4]s.core
	x := linked_number(n, %[1]d)
}

`, i, quote(l.Name), head, ref, layerBest(base, stride))
		} else {
			rules += len(l.Policy.Rules)
			defaultSpan := ""
			if l.Policy.Default.Set {
				defaultSpan = ", \"default_span\": " + spanJSON(l.Policy.Default.Span)
			}
			fmt.Fprintf(&b, `# layer_%[1]d is layer %[1]d's part in data.chock.decision, given core: the
# rule of its smallest number, as data.chock.meta records it, or its default.
layer_%[1]d(nums) := {%[2]s, "decision": r.decision, "default": false, "rule": r} if {
	r := data.chock.meta.layers[%[1]d].rules[%[3]s %% %[4]d]
} else := {%[2]s, "decision": %[5]s, "default": true, "rule": null%[6]s}

`, i, head, layerBest(base, stride), n, quote(l.Policy.Default.Value.String()), defaultSpan)
		}
		locals = append(locals, fmt.Sprintf("\tl%d := layer_%d(nums)", i, i))
		ranks = append(ranks, fmt.Sprintf("rank[l%d.decision]", i))
		results = append(results, fmt.Sprintf("l%d", i))
		if i > 0 && layers[0].Kind == "project" {
			caps = append(caps, fmt.Sprintf("[rank[l%d.decision], %s]", i, quote(l.Name)))
		}
	}
	if linked {
		fmt.Fprintf(&b, `# linked_number is a linked org's rule number n moved into layer i's range;
# a number outside the range it was compiled for is -1, a contract error,
# never a decision.
linked_number(n, i) := (i * %[1]d) + n if {
	is_number(n)
	n >= 0
	n < %[1]d
	n == floor(n)
} else := -1

# org_default is a linked org layer's part when its default decides.
org_default(name, l) := object.union(
	{"layer": "org", "name": name, "decision": l.default.value, "default": true, "rule": null},
	default_span(l.default),
)

default_span(d) := {"default_span": d.span} if {
	d.set
} else := {}

# org_loaded says a linked org's bundle is loaded beside this one, compiled
# by a chock of this bundle format.
org_loaded(name) if {
	m := data.chock_orgs[name].meta
	m.format == %[2]d
	m.kind == "org"
	count(m.layers) == 1
	m.layers[0].name == name
}

linked_orgs := [%[3]s]

missing_orgs := [name | some name in linked_orgs; not org_loaded(name)]

`, stride, MetaFormat, strings.Join(linkedNames, ", "))
	}
	if rules == 0 {
		b.WriteString("# No layer has rules: data.chock.core has a definition all the same.\ncore contains n if some n in set()\n\n")
	}
	with := ""
	if segments || linked {
		with = " with input.segments as segments"
	}
	capExpr := "\tcapped := null\n"
	if len(caps) > 0 {
		// The first org layer at the minimum, when it is below the project's.
		capExpr = fmt.Sprintf("\tcaps := [x[1] | some x in [%s]; x[0] == eff; eff < rank[l0.decision]]\n\tcapped := array.concat(caps, [null])[0]\n", strings.Join(caps, ", "))
	}
	b.WriteString(`# METADATA
# title: The decision on an action
# description: >-
#   The decision on input.action at input.phase ("start" or "loop", by
#   default "loop"): per layer the rule that decided it or its default, the
#   effective decision, the org that capped it. A malformed input is denied
#   with an error.
# entrypoint: true
`)
	if linked {
		b.WriteString(`decision := {
	"action": in_action,
	"phase": in_phase,
	"decision": "deny",
	"error": sprintf("the bundle of linked org %s is not loaded; load each org's bundle (chock compile --org-only) beside this one", [concat(", ", missing_orgs)]),
	"layers": [],
	"capped_by": null,
	"start_refusal": false,
} if {
	count(missing_orgs) > 0
} else := `)
	} else {
		b.WriteString("decision := ")
	}
	fmt.Fprintf(&b, `{
	"action": input.action,
	"phase": phase,
	"decision": decision_name[final],
	"layers": [%s],
	"capped_by": capped,
	"start_refusal": refusal,
} if {
	input_ok
	phase := object.get(input, "phase", "loop")
	nums := core%s
%s
	eff := min([%s])
%s	refusal := [phase == "start", eff == 1] == [true, true]
	final := [eff, 0][to_number(refusal)]
} else := {
	"action": in_action,
	"phase": in_phase,
	"decision": "deny",
	"error": concat("; ", sort(input_errors)),
	"layers": [],
	"capped_by": null,
	"start_refusal": false,
}
`, strings.Join(results, ", "), with, strings.Join(locals, "\n"), strings.Join(ranks, ", "), capExpr)
	return b.String()
}

// layerBest is the smallest of the numbers nums of the layer whose numbers
// start at base, less base.
func layerBest(base, stride int64) string {
	if base == 0 {
		return fmt.Sprintf("min({x | some x in nums; x < %d})", stride)
	}
	return fmt.Sprintf("(min({x | some x in nums; x >= %d; x < %d}) - %d)", base, base+stride, base)
}

// secretsModule writes package chock.offer: the secrets each call or server
// is offered (SPEC §7), one rule per secret, indexed where the pattern
// allows (a call's secrets are few, so a pattern matched on its segments
// is guarded by its literal prefix only).
func secretsModule(c *config.Config) string {
	var b strings.Builder
	b.WriteString(`# Generated by chock; do not edit.
package chock.offer

import rego.v1

`)
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
			fmt.Fprintf(&b, "for_action contains %s if {\n\t%s\n}\n\n", head, strings.Join(lines, "\n\t"))
		case "mcp":
			// A server S is offered the secrets whose to covers S's whole
			// namespace: mcp.S.*, mcp.*.* or mcp.*.
			switch {
			case len(segs) == 2 && segs[1] == "*":
				fmt.Fprintf(&b, "for_server contains %s if {\n\tis_string(input.server)\n}\n\n", head)
			case len(segs) == 3 && segs[2] == "*" && segs[1] == "*":
				fmt.Fprintf(&b, "for_server contains %s if {\n\tis_string(input.server)\n}\n\n", head)
			case len(segs) == 3 && segs[2] == "*":
				fmt.Fprintf(&b, "for_server contains %s if {\n\tinput.server == %s\n}\n\n", head, quote(segs[1]))
			}
		}
	}
	// Both sets always have a definition, so the references below compile
	// whatever the secrets block holds.
	b.WriteString(`for_action contains s if some s in set()

for_server contains s if some s in set()

# "not is_string(input.action)" would fail when input.action is undefined
# (OPA evaluates the reference outside the negation), hence the helper.
action_given if is_string(input.action)

offered := for_action if action_given

offered := for_server if {
	not action_given
	is_string(input.server)
}

default offered := set()
`)
	return b.String()
}

// decisionsEntry is appended to package chock: data.chock.decision for
// several actions in one query, for a client that asks many at once (a
// session's start asks one for each program on its PATH) from an OPA a
// round trip away. How many it asks at once is the client's to bound.
const decisionsEntry = `
# METADATA
# title: The decisions on several actions
# description: >-
#   data.chock.decision for each string in input.actions at input.phase,
#   keyed by action. Undefined when input.actions is not an array.
# entrypoint: true
decisions := {a: d |
	some a in input.actions
	is_string(a)
	d := decision with input as {"action": a, "phase": phase}
} if {
	is_array(input.actions)
	phase := object.get(input, "phase", "loop")
}
`

// secretsEntry is appended to package chock: the offered secrets in
// declaration order.
const secretsEntry = `
# METADATA
# title: The secrets offered to a call or a server
# description: >-
#   The secrets offered to the call of input.action, or to the MCP server
#   input.server, in declaration order, before any secret.use decision.
# entrypoint: true
secrets := [s |
	some o in sort([x.order | some x in data.chock.offer.offered])
	some s in data.chock.offer.offered
	s.order == o
]
`
