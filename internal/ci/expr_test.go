package ci

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// A small evaluator of GitHub Actions expressions, enough for what
// action.yml and the example workflow write: literals, context paths
// (inputs.x, steps.id.outputs.name, github.event_name), ! && || == != and
// parentheses, and the status functions. Anything else is an error, so a
// construct the files start to use fails the test instead of being
// misread. Semantics follow GitHub's documentation: || and && return an
// operand, == compares loosely (different types as numbers; strings
// case-insensitively), a missing property is null.

// exprContext is what an expression can read.
type exprContext struct {
	values map[string]any // inputs, github, steps, env
	// failed says whether a step before this one failed (success(),
	// failure()).
	failed bool
}

type exprParser struct {
	s   string
	pos int
	cx  *exprContext
	// status is set when the expression calls a status function.
	status bool
}

// evalExpr evaluates one expression (without ${{ }}).
func evalExpr(cx *exprContext, s string) (v any, usedStatus bool, err error) {
	p := &exprParser{s: s, cx: cx}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("expression %q: %v", s, r)
		}
	}()
	v = p.or()
	p.space()
	if p.pos != len(p.s) {
		panic(fmt.Sprintf("unexpected %q", p.s[p.pos:]))
	}
	return v, p.status, nil
}

// evalIf evaluates a step's if: condition, which is success() && (cond)
// unless it calls a status function itself.
func evalIf(cx *exprContext, cond string) (bool, error) {
	cond = strings.TrimSpace(cond)
	if cond == "" {
		return !cx.failed, nil
	}
	if strings.HasPrefix(cond, "${{") && strings.HasSuffix(cond, "}}") {
		cond = strings.TrimSpace(cond[3 : len(cond)-2])
	}
	v, status, err := evalExpr(cx, cond)
	if err != nil {
		return false, err
	}
	if !status && cx.failed {
		return false, nil
	}
	return truthy(v), nil
}

// interpolate replaces every ${{ expr }} in s with the expression's
// value as a string.
func interpolate(cx *exprContext, s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${{")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.Index(s[i:], "}}")
		if j < 0 {
			return "", fmt.Errorf("unclosed ${{ in %q", s)
		}
		v, _, err := evalExpr(cx, strings.TrimSpace(s[i+3:i+j]))
		if err != nil {
			return "", err
		}
		b.WriteString(s[:i])
		b.WriteString(toString(v))
		s = s[i+j+2:]
	}
}

func (p *exprParser) space() {
	for p.pos < len(p.s) && unicode.IsSpace(rune(p.s[p.pos])) {
		p.pos++
	}
}

func (p *exprParser) eat(tok string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.pos:], tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *exprParser) or() any {
	v := p.and()
	for p.eat("||") {
		w := p.and()
		if !truthy(v) {
			v = w
		}
	}
	return v
}

func (p *exprParser) and() any {
	v := p.unary()
	for p.eat("&&") {
		w := p.unary()
		if truthy(v) {
			v = w
		}
	}
	return v
}

func (p *exprParser) unary() any {
	if p.eat("!") {
		return !truthy(p.unary())
	}
	return p.compare()
}

func (p *exprParser) compare() any {
	v := p.primary()
	switch {
	case p.eat("=="):
		return looseEqual(v, p.primary())
	case p.eat("!="):
		return !looseEqual(v, p.primary())
	}
	return v
}

func (p *exprParser) primary() any {
	p.space()
	if p.pos >= len(p.s) {
		panic("unexpected end")
	}
	switch c := p.s[p.pos]; {
	case c == '(':
		p.pos++
		v := p.or()
		if !p.eat(")") {
			panic("missing )")
		}
		return v
	case c == '\'':
		var b strings.Builder
		for p.pos++; ; p.pos++ {
			if p.pos >= len(p.s) {
				panic("unclosed string")
			}
			if p.s[p.pos] == '\'' {
				if p.pos+1 < len(p.s) && p.s[p.pos+1] == '\'' {
					b.WriteByte('\'')
					p.pos++
					continue
				}
				p.pos++
				return b.String()
			}
			b.WriteByte(p.s[p.pos])
		}
	case c >= '0' && c <= '9' || c == '-':
		start := p.pos
		for p.pos < len(p.s) && strings.IndexByte("0123456789.-+eExXabcdefABCDEF", p.s[p.pos]) >= 0 {
			p.pos++
		}
		f, err := strconv.ParseFloat(p.s[start:p.pos], 64)
		if err != nil {
			panic(err)
		}
		return f
	}
	name := p.ident()
	switch name {
	case "true":
		return true
	case "false":
		return false
	case "null":
		return nil
	}
	if p.eat("(") {
		if !p.eat(")") {
			panic(name + "(...) with arguments is not supported here")
		}
		p.status = true
		switch name {
		case "success":
			return !p.cx.failed
		case "failure":
			return p.cx.failed
		case "cancelled":
			return false
		case "always":
			return true
		}
		panic("unknown function " + name + "()")
	}
	var v any = p.cx.values[name]
	if _, known := p.cx.values[name]; !known {
		panic("unknown context " + name)
	}
	for p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		key := p.ident()
		m, ok := v.(map[string]any)
		if !ok {
			v = nil
			continue
		}
		v = m[key]
	}
	return v
}

// ident reads a name: letters, digits, _ and - (inputs.diff-base).
func (p *exprParser) ident() string {
	p.space()
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			p.pos++
			continue
		}
		break
	}
	if p.pos == start {
		panic(fmt.Sprintf("unexpected %q", p.s[p.pos:]))
	}
	return p.s[start:p.pos]
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0 && !math.IsNaN(x)
	case string:
		return x != ""
	}
	return true // objects and arrays
}

func toNumber(v any) float64 {
	switch x := v.(type) {
	case nil:
		return 0
	case bool:
		if x {
			return 1
		}
		return 0
	case float64:
		return x
	case string:
		if strings.TrimSpace(x) == "" {
			return 0
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	return math.NaN()
}

func looseEqual(a, b any) bool {
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			return strings.EqualFold(sa, sb)
		}
	}
	if ba, ok := a.(bool); ok {
		if bb, ok := b.(bool); ok {
			return ba == bb
		}
	}
	if a == nil && b == nil {
		return true
	}
	return toNumber(a) == toNumber(b)
}

func toString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

func TestExpressions(t *testing.T) {
	cx := &exprContext{values: map[string]any{
		"inputs": map[string]any{"sarif": "true", "diff-base": ""},
		"github": map[string]any{"event_name": "pull_request"},
		"steps":  map[string]any{"install": map[string]any{"outcome": "success", "outputs": map[string]any{}}},
	}}
	for cond, want := range map[string]bool{
		"":                                   true,
		"${{ inputs.sarif == 'true' }}":      true,
		"inputs.diff-base != ''":             false,
		"steps.install.outputs.x != ''":      false, // null == '' as numbers
		"steps.install.outcome == 'SUCCESS'": true,
		"!cancelled() && (github.event_name == 'push' || inputs.diff-base != '')":         false,
		"!cancelled() && (github.event_name == 'pull_request' || inputs.diff-base != '')": true,
		"always()": true,
	} {
		got, err := evalIf(cx, cond)
		if err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", cond, got, err, want)
		}
	}
	cx.failed = true
	if ok, _ := evalIf(cx, "inputs.sarif == 'true'"); ok {
		t.Errorf("a condition without a status function ran after a failure")
	}
	if ok, _ := evalIf(cx, "!cancelled()"); !ok {
		t.Errorf("!cancelled() did not run after a failure")
	}
	if s, err := interpolate(cx, "a ${{ inputs.sarif }} b ${{ inputs.missing || 'x' }}"); err != nil || s != "a true b x" {
		t.Errorf("interpolate: %q, %v", s, err)
	}
	if _, err := evalIf(cx, "contains(inputs.sarif, 'x')"); err == nil {
		t.Errorf("a function with arguments was accepted")
	}
	if _, err := evalIf(cx, "vars.x"); err == nil {
		t.Errorf("an unknown context was accepted")
	}
}
