package zon

// The error path. When the fast path declines a document, check reads it
// again with the whole Zig expression grammar of grammar_test.go and the
// ZON rules of gen_test.go, and reports the first error exactly where the
// participle parser of those files reports it (and so where Zig does, for
// every invalid vector of the corpus): syntax errors first, since Zig
// parses the whole file before ZonGen looks at it, then the outermost node
// ZonGen rejects.
//
// It is a hand-written port of participle's matching rules (UseLookahead(2),
// ordered alternatives, the deepest-error bookkeeping) for that one grammar,
// without reflection and without building a tree: each rule returns what
// ZonGen would say about the node it matched. Tokens are pulled from the
// scanner into a small ring, since participle's look-ahead never goes back
// more than a few tokens, so memory does not grow with the input and no
// element count is bounded. A differential test and the fuzz target hold it
// to the participle reference.

import (
	"fmt"
	"strings"

	"github.com/alecthomas/participle/v2/lexer"
	"github.com/chockhq/chock/diag"
)

// lookahead is participle's UseLookahead(2): a failing branch that got
// further than this many tokens past its start is not backtracked.
const lookahead = 2

// ringSize is how many recent tokens the checker keeps; participle's rules
// never step back further than lookahead plus the longest look-ahead group.
const ringSize = 256

// ctok is a token with the number of brackets open before it.
type ctok struct {
	rawTok
	depth int
}

// check reads a document with the full grammar and returns its first error,
// or nil when it is valid ZON.
func check(file, src string) *diag.Diagnostic {
	return newChecker(file, src).result()
}

func newChecker(file, src string) *checker {
	p := &checker{file: file, src: src, eof: -1}
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		p.start = 3
	}
	p.sc = scanner{src: src, line: 1, pos: p.start, noComments: true}
	return p
}

// result runs the parse and words its outcome.
func (p *checker) result() *diag.Diagnostic {
	synErr, genErr := p.run()
	switch {
	case p.abort != nil:
		return p.abort
	case synErr >= 0:
		return p.syntaxError(synErr)
	}
	return genErr
}

type checker struct {
	file  string
	src   string
	start int // where the first token may start (past a BOM)
	sc    scanner
	ring  [ringSize]ctok
	n     int // tokens scanned
	// depth is the number of brackets open after the last token scanned.
	depth int
	eof   int // index of the EOF token once scanned, else -1
	// nest counts the rules that recurse without a bracket (a keyword's
	// operand, a function type's return type: comptime comptime ...,
	// fn() fn() ...), bounded like brackets.
	nest int
	// abort is set when nesting passes MaxDepth: from then on every token
	// reads as EOF so that the parse winds down, and abort is the answer.
	abort   *diag.Diagnostic
	stopTok ctok
	// rescans counts tokens looked up again after they left the ring.
	rescans int
}

// tok returns token i, scanning on as needed. Tokens are values: the ring
// slot of a token is reused as the parser moves on.
func (p *checker) tok(i int) ctok {
	for p.n <= i && p.eof < 0 {
		t, more := p.sc.next()
		ct := ctok{rawTok: t, depth: p.depth}
		if t.typ == tokPunct {
			switch p.src[t.start:t.end] {
			case "{", "(", "[":
				p.depth++
				if p.depth > MaxDepth {
					p.stop(t)
				}
			case "}", ")", "]":
				p.depth--
			}
		}
		p.ring[p.n%ringSize] = ct
		if !more {
			p.eof = p.n
		}
		p.n++
	}
	if p.abort != nil {
		// Past the bound the answer is known: every token reads as EOF,
		// so that the parse winds down at once.
		return p.stopTok
	}
	if p.eof >= 0 && i > p.eof {
		i = p.eof
	}
	if i < p.n-ringSize {
		return p.rescan(i)
	}
	return p.ring[i%ringSize]
}

// rescan finds a token that has left the ring by scanning from the start.
// The parser never needs one; it is here so that a wrong guess about
// participle's reach costs time, not a wrong answer.
func (p *checker) rescan(i int) ctok {
	p.rescans++
	s := scanner{src: p.src, line: 1, noComments: true, pos: p.start}
	depth := 0
	for j := 0; ; j++ {
		t, _ := s.next()
		if j == i || t.typ == lexer.EOF {
			return ctok{rawTok: t, depth: depth}
		}
		if t.typ == tokPunct {
			switch p.src[t.start:t.end] {
			case "{", "(", "[":
				depth++
			case "}", ")", "]":
				depth--
			}
		}
	}
}

// stop ends the parse at token t, past MaxDepth.
func (p *checker) stop(t rawTok) {
	if p.abort != nil {
		return
	}
	pos := diag.Pos{Line: int(t.line), Col: int(t.col), Offset: int(t.start)}
	p.abort = &diag.Diagnostic{
		Span:     diag.Span{File: p.file, Start: pos, End: pos},
		Severity: diag.Error, Code: CodeTooDeep,
		Message: fmt.Sprintf("nesting deeper than %d levels", MaxDepth),
	}
	p.stopTok = ctok{rawTok: rawTok{typ: lexer.EOF, start: t.start, end: t.start, line: t.line, col: t.col}}
}

func (p *checker) text(t ctok) string { return p.src[t.start:t.end] }

func tpos(t ctok) diag.Pos { return diag.Pos{Line: int(t.line), Col: int(t.col), Offset: int(t.start)} }

// fail is gen.fail: a diagnostic at the start of token t.
func (p *checker) fail(code string, t ctok, msg, hint string) *diag.Diagnostic {
	return p.failPos(code, tpos(t), msg, hint)
}

func (p *checker) failPos(code string, at diag.Pos, msg, hint string) *diag.Diagnostic {
	return &diag.Diagnostic{
		Span:     diag.Span{File: p.file, Start: at, End: at},
		Severity: diag.Error, Code: code, Message: msg, Hint: hint,
	}
}

// failAt is gen.failAt: a literal error off bytes into token t.
func (p *checker) failAt(t ctok, off int, msg string) *diag.Diagnostic {
	at := tpos(t)
	at.Offset += off
	at.Col += off
	return p.failPos(CodeLiteral, at, msg, "")
}

// Participle's matching state and rules.

type status uint8

const (
	stNo  status = iota // no match: nothing consumed
	stOK                // matched (possibly nothing, for optional groups)
	stErr               // failed, at token err
)

// res is what a participle node returns: no match, a match, or an error
// at a token index.
type res struct {
	st  status
	err int
}

var matched = res{st: stOK}

// pctx is participle's parseContext: the cursor and the deepest error.
type pctx struct {
	cur  int
	derr int // token index of the deepest error, -1 for none
	ddep int // the cursor at which it was recorded
}

func (c *pctx) maybeUpdate(err int) {
	if c.cur >= c.ddep {
		c.derr, c.ddep = err, c.cur
	}
}

func (c *pctx) accept(b *pctx) {
	c.cur = b.cur
	if b.ddep >= c.ddep {
		c.derr, c.ddep = b.derr, b.ddep
	}
}

// stop records the error of branch b and reports whether it got too far
// to backtrack, in which case c takes over b's position.
func (c *pctx) stop(err int, b *pctx) bool {
	if b.ddep > c.ddep {
		c.derr, c.ddep = b.derr, b.ddep
	} else if b.cur >= c.ddep {
		c.derr, c.ddep = err, max(b.cur, b.ddep)
	}
	if b.cur > c.cur+lookahead {
		c.accept(b)
		return true
	}
	return false
}

// deepest is parseContext.DeepestError.
func (c *pctx) deepest(err int) int {
	if c.cur >= c.ddep || c.derr < 0 {
		return err
	}
	return c.derr
}

// strct is what a struct node does with its expression's result.
func (c *pctx) strct(r res) res {
	if r.st == stErr {
		c.maybeUpdate(r.err)
	}
	return r
}

// need is a sequence element after the first: no match is an error at
// the cursor.
func (c *pctx) need(r res) res {
	if r.st == stNo {
		return res{st: stErr, err: c.cur}
	}
	return r
}

// iter ends one iteration of a ( ... )*, ( ... )? or ( ... )+ group that
// ran on branch b of c with result r. more says the iteration matched; a
// failure that got past the look-ahead ends the group with that error.
func (c *pctx) iter(b *pctx, r res) (more bool, fail res) {
	if r.st == stErr {
		c.maybeUpdate(r.err)
		if c.stop(r.err, b) {
			return false, r
		}
		return false, matched
	}
	c.accept(b)
	return r.st == stOK, matched
}

// alt runs the alternatives of a disjunction: each is tried on a branch,
// and try is told how it went.
type alt struct {
	first   res
	deepest int
	has     bool
}

// try reports whether the disjunction is decided by alternative result r
// (run on branch b of c): it matched, or it failed past the look-ahead.
func (d *alt) try(c *pctx, b *pctx, r res) bool {
	switch r.st {
	case stErr:
		if c.stop(r.err, b) {
			d.first, d.has = r, true
			return true
		}
		if b.cur >= d.deepest {
			d.first, d.deepest, d.has = r, b.cur, true
		}
	case stOK:
		c.accept(b)
		d.first, d.has = matched, false
		return true
	}
	return false
}

// result is the disjunction's outcome once try said it is decided, or
// once every alternative was tried.
func (d *alt) result(c *pctx, decided bool) res {
	switch {
	case decided && !d.has:
		return matched
	case decided:
		return d.first
	case d.has:
		c.maybeUpdate(d.first.err)
		return d.first
	}
	return res{st: stNo}
}

// Token tests.

func (p *checker) isPunct(i int, s string) bool {
	t := p.tok(i)
	return t.typ == tokPunct && p.text(t) == s
}

// lit matches a literal token ('x' or 'x':Keyword).
func (p *checker) lit(c *pctx, typ lexer.TokenType, s string) res {
	t := p.tok(c.cur)
	if t.typ == typ && p.text(t) == s {
		c.cur++
		return matched
	}
	return res{st: stNo}
}

func (p *checker) punct(c *pctx, s string) res { return p.lit(c, tokPunct, s) }

// ref matches a token of one of the types (Ident | QuotedIdent ...).
func (p *checker) ref(c *pctx, types ...lexer.TokenType) res {
	t := p.tok(c.cur)
	for _, typ := range types {
		if t.typ == typ {
			c.cur++
			return matched
		}
	}
	return res{st: stNo}
}

func (p *checker) isName(i int) bool {
	t := p.tok(i)
	return t.typ == tokIdent || t.typ == tokQuotedIdent
}

// look is a (?= ...) or (?! ...) group whose body matched or not.
func look(c *pctx, negative, bodyMatched bool) res {
	if bodyMatched == negative {
		return res{st: stErr, err: c.cur}
	}
	return matched
}

// The grammar, rule by rule. Each rule's comment is the participle
// expression it implements. A rule that is a struct of the grammar ends
// with c.strct; an element of a sequence after the first goes through
// c.need; an optional or repeated part runs on a branch b and ends with
// c.iter. Each rule also returns what gen would report about the node it
// matched (nil when the node is ZON).

// run is ParseFromLexer for astFile = @@astExpr: it returns the syntax
// error's token index (-1 for none) and gen's verdict on the document.
func (p *checker) run() (int, *diag.Diagnostic) {
	c := pctx{derr: -1}
	gen, r := p.expr(&c)
	r = c.strct(r)
	switch {
	case r.st == stErr:
		return r.err, nil
	case r.st == stNo, p.tok(c.cur).typ != lexer.EOF:
		return c.deepest(c.cur), nil
	}
	return -1, gen
}

// binPrecedence is gen's binPrec.
func binPrecedence(op string) int {
	switch op {
	case "or":
		return 1
	case "and":
		return 2
	case "==", "!=", "<", ">", "<=", ">=":
		return 3
	case "&", "^", "|", "orelse", "catch":
		return 4
	case "<<", ">>", "<<|":
		return 5
	case "+", "-", "++", "+%", "-%", "+|", "-|":
		return 6
	case "*", "/", "%", "**", "*%", "*|", "||":
		return 7
	case "!":
		return 8
	}
	return 0
}

// expr: astExpr = @@astPrefix @@astBinOp*.
func (p *checker) expr(c *pctx) (*diag.Diagnostic, res) {
	gen, r := p.prefix(c)
	if r.st != stOK {
		return nil, c.strct(r)
	}
	var root ctok
	hasRoot := false
	for {
		b := *c
		op, r := p.binOp(&b)
		more, fail := c.iter(&b, r)
		if fail.st == stErr {
			return nil, c.strct(fail)
		}
		if !more {
			break
		}
		// The root of Zig's tree is the loosest-binding operator, the last of equals.
		if !hasRoot || binPrecedence(p.text(op)) <= binPrecedence(p.text(root)) {
			root, hasRoot = op, true
		}
	}
	if hasRoot {
		gen = p.fail(CodeNotZON, root, fmt.Sprintf("operator '%s' is not allowed in ZON", p.text(root)), "")
	}
	return gen, matched
}

func isBinOp(t ctok, s string) bool {
	switch t.typ {
	case tokKeyword:
		return s == "or" || s == "and" || s == "orelse" || s == "catch"
	case tokPunct:
		switch s {
		case "==", "!=", "<", ">", "<=", ">=", "&", "^", "|", "<<", ">>", "<<|", "+", "-", "++", "+%", "-%", "+|", "-|", "*", "/", "%", "**", "*%", "*|", "||", "!":
			return true
		}
	}
	return false
}

// binOp: astBinOp = @( 'or':Keyword | ... | '!' ) @@astPrefix. It returns
// the operator token.
func (p *checker) binOp(c *pctx) (ctok, res) {
	t := p.tok(c.cur)
	if !isBinOp(t, p.text(t)) {
		return t, res{st: stNo}
	}
	c.cur++
	_, r := p.prefix(c)
	return t, c.strct(c.need(r))
}

// prefix: astPrefix = @@astPrefixOp* @@astCurly.
func (p *checker) prefix(c *pctx) (*diag.Diagnostic, res) {
	var first ctok
	nops := 0
	for {
		// astPrefixOp = @( '-' | '!' | '~' | '-%' | '&' | 'try':Keyword ),
		// a disjunction of literals: it matches or not, and never fails.
		t := p.tok(c.cur)
		s := p.text(t)
		isOp := (t.typ == tokPunct && (s == "-" || s == "!" || s == "~" || s == "-%" || s == "&")) ||
			(t.typ == tokKeyword && s == "try")
		if !isOp {
			break
		}
		c.cur++
		if nops == 0 {
			first = t
		}
		nops++
	}
	cs, r := p.curly(c)
	if r = c.strct(c.need(r)); r.st != stOK {
		return nil, r
	}
	if nops == 0 {
		return cs.gen, matched
	}
	// gen.prefix
	switch p.text(first) {
	case "-":
		switch {
		case nops > 1 || cs.neg == negBad:
			return p.fail(CodeNotZON, first, "expected number or 'inf' after '-'", ""), matched
		case cs.neg == negErr:
			return cs.negErr, matched
		}
		return nil, matched
	case "&":
		return p.fail(CodeNotZON, first, "pointers are not available in ZON", ""), matched
	case "try":
		return p.fail(CodeNotZON, first, "control flow is not allowed in ZON", ""), matched
	}
	return p.fail(CodeNotZON, first, fmt.Sprintf("operator '%s' is not allowed in ZON", p.text(first)), ""), matched
}

// negKind is what a single '-' makes of the operand after it.
type negKind uint8

const (
	negBad negKind = iota // not a plain number or inf: "expected number or 'inf'"
	negOK                 // a valid negative number, or -inf
	negErr                // a number gen rejects: a bad literal, or integer -0
)

// curlySum is gen's view of an astCurly.
type curlySum struct {
	gen    *diag.Diagnostic // gen.curly's verdict
	neg    negKind          // and gen.prefix's, after one '-'
	negErr *diag.Diagnostic
}

// curly: astCurly = @@astTypeExpr @@astInitList?.
func (p *checker) curly(c *pctx) (curlySum, res) {
	start := p.tok(c.cur) // typeStart: the first type operator, or the primary
	ts, r := p.typeExpr(c)
	if r.st != stOK {
		return curlySum{}, c.strct(r)
	}
	b := *c
	_, ir := p.initList(&b)
	hasInit, fail := c.iter(&b, ir)
	if fail.st == stErr {
		return curlySum{}, c.strct(fail)
	}
	var s curlySum
	switch {
	case hasInit:
		s.gen = p.fail(CodeNotZON, start, "types are not available in ZON", "replace the type with '.'")
	case ts.nops > 0:
		s.gen = p.fail(CodeNotZON, ts.firstOp, "types are not available in ZON", "")
	case ts.nsuffix > 0:
		s.gen = p.fail(CodeNotZON, ts.lastSuffix, ts.suffixMsg, "")
	default:
		s.gen, s.neg, s.negErr = ts.prim.gen, ts.prim.neg, ts.prim.negErr
	}
	return s, matched
}

// typeSum is what gen.curly looks at in an astTypeExpr.
type typeSum struct {
	nops       int
	firstOp    ctok // the first type operator
	nsuffix    int
	lastSuffix ctok // the last suffix operator, and gen's message for it
	suffixMsg  string
	prim       primSum
}

// typeExpr: astTypeExpr = @@astTypeOp* @@astSuffixExpr.
func (p *checker) typeExpr(c *pctx) (typeSum, res) {
	var s typeSum
	for {
		b := *c
		t := p.tok(b.cur)
		more, fail := c.iter(&b, p.typeOp(&b))
		if fail.st == stErr {
			return s, c.strct(fail)
		}
		if !more {
			break
		}
		if s.nops == 0 {
			s.firstOp = t
		}
		s.nops++
	}
	return s, c.strct(c.need(p.suffixExpr(c, &s)))
}

// typeOp: astTypeOp = @'?' | @'*' | @'**' | @@astBracket.
func (p *checker) typeOp(c *pctx) res {
	var d alt
	for _, s := range [...]string{"?", "*", "**"} {
		b := *c
		if d.try(c, &b, p.punct(&b, s)) {
			return c.strct(d.result(c, true))
		}
	}
	b := *c
	return c.strct(d.result(c, d.try(c, &b, p.bracket(&b))))
}

// bracket: astBracket = @'[' ( '*' | @@astExpr )? ']'.
func (p *checker) bracket(c *pctx) res {
	if r := p.punct(c, "["); r.st != stOK {
		return r
	}
	b := *c
	if _, fail := c.iter(&b, p.starOrExpr(&b)); fail.st == stErr {
		return c.strct(fail)
	}
	return c.strct(c.need(p.punct(c, "]")))
}

// starOrExpr: '*' | @@astExpr.
func (p *checker) starOrExpr(c *pctx) res {
	var d alt
	b := *c
	if d.try(c, &b, p.punct(&b, "*")) {
		return d.result(c, true)
	}
	b = *c
	_, r := p.expr(&b)
	return d.result(c, d.try(c, &b, r))
}

// suffixExpr: astSuffixExpr = @@astPrimary @@astSuffixOp*. It fills in the
// primary and the suffix operators of s.
func (p *checker) suffixExpr(c *pctx, s *typeSum) res {
	prim, r := p.primary(c)
	if r.st != stOK {
		return c.strct(r)
	}
	s.prim = prim
	for {
		b := *c
		t := p.tok(b.cur)
		msg, r := p.suffixOp(&b)
		more, fail := c.iter(&b, r)
		if fail.st == stErr {
			return c.strct(fail)
		}
		if !more {
			break
		}
		s.nsuffix++
		s.lastSuffix, s.suffixMsg = t, msg
	}
	return matched
}

// suffixOp: astSuffixOp = (?! '.' '{') '.' ( @(Ident | QuotedIdent) | @'?' )
// | @'.*' | '[' @@astExpr ( '..' @@astExpr? )? ']' | @@astArgs. It returns
// gen's message for the operator it matched.
func (p *checker) suffixOp(c *pctx) (string, res) {
	var d alt
	// Field access or optional unwrap.
	b := *c
	msg := ""
	r := look(&b, true, p.isPunct(b.cur, ".") && p.isPunct(b.cur+1, "{"))
	if r.st == stOK {
		r = b.need(p.punct(&b, "."))
	}
	if r.st == stOK {
		// ( @(Ident | QuotedIdent) | @'?' ): alternatives that cannot fail.
		switch t := p.tok(b.cur); {
		case t.typ == tokIdent || t.typ == tokQuotedIdent:
			b.cur++
			msg = "field access is not allowed in ZON"
		case t.typ == tokPunct && p.text(t) == "?":
			b.cur++
			msg = "optionals are not available in ZON"
		default:
			r = res{st: stErr, err: b.cur}
		}
	}
	if d.try(c, &b, r) {
		return msg, c.strct(d.result(c, true))
	}
	// Dereference.
	b = *c
	if d.try(c, &b, p.punct(&b, ".*")) {
		return "pointers are not available in ZON", c.strct(d.result(c, true))
	}
	// Indexing or slicing.
	b = *c
	if d.try(c, &b, p.index(&b)) {
		return "indexing is not allowed in ZON", c.strct(d.result(c, true))
	}
	// A call.
	b = *c
	if d.try(c, &b, p.args(&b)) {
		return "function calls are not allowed in ZON", c.strct(d.result(c, true))
	}
	return "", c.strct(d.result(c, false))
}

// index: '[' @@astExpr ( '..' @@astExpr? )? ']'.
func (p *checker) index(c *pctx) res {
	if r := p.punct(c, "["); r.st != stOK {
		return r
	}
	if _, r := p.expr(c); r.st != stOK {
		return c.need(r)
	}
	b := *c
	if _, fail := c.iter(&b, p.sliceEnd(&b)); fail.st == stErr {
		return fail
	}
	return c.need(p.punct(c, "]"))
}

// sliceEnd: '..' @@astExpr?.
func (p *checker) sliceEnd(c *pctx) res {
	if r := p.punct(c, ".."); r.st != stOK {
		return r
	}
	b := *c
	_, r := p.expr(&b)
	_, fail := c.iter(&b, r)
	return fail
}

// args: astArgs = '(' ( @@astExpr ( ',' @@astExpr )* ','? )? ')'.
func (p *checker) args(c *pctx) res {
	if r := p.punct(c, "("); r.st != stOK {
		return r
	}
	b := *c
	if _, fail := c.iter(&b, p.exprList(&b, nil)); fail.st == stErr {
		return c.strct(fail)
	}
	return c.strct(c.need(p.punct(c, ")")))
}

// exprList: @@astExpr ( ',' @@astExpr )* ','?. When gens is not nil, it
// gets each element's gen verdict in order.
func (p *checker) exprList(c *pctx, gens *firstGen) res {
	gen, r := p.expr(c)
	if r.st != stOK {
		return r
	}
	gens.add(gen)
	return restOfList(p, c, p.expr, gens.add)
}

// restOfList reads ( ',' item )* ','? after a list's first item, giving
// add each item read.
func restOfList[T any](p *checker, c *pctx, item func(*pctx) (T, res), add func(T)) res {
	for {
		b := *c
		var x T
		r := p.punct(&b, ",")
		if r.st == stOK {
			x, r = item(&b)
			r = b.need(r)
		}
		more, fail := c.iter(&b, r)
		if fail.st == stErr {
			return fail
		}
		if !more {
			break
		}
		add(x)
	}
	b := *c
	_, fail := c.iter(&b, p.punct(&b, ","))
	return fail
}

// firstGen keeps the first non-nil verdict of a list's elements.
type firstGen struct{ gen *diag.Diagnostic }

func (f *firstGen) add(g *diag.Diagnostic) {
	if f != nil && f.gen == nil {
		f.gen = g
	}
}

// primSum is gen's view of an astPrimary: its verdict, and what a '-'
// before it would make of it.
type primSum struct {
	gen    *diag.Diagnostic
	neg    negKind
	negErr *diag.Diagnostic
}

// primary: astPrimary = (?= '.' '{') '.' @@astAnonInit | @@astEnum
// | @Number | @String | @@astMLLine+ | @Char | @Ident | @QuotedIdent
// | @@astBuiltin | '(' @@astExpr ')' | @@astBlock | @@astContainer
// | @@astFnProto | @@astKeyword.
func (p *checker) primary(c *pctx) (primSum, res) {
	var d alt
	t := p.tok(c.cur)
	decided := func(s primSum) (primSum, res) { return s, c.strct(d.result(c, true)) }

	// Anonymous initializer: astAnonInit = @@astInitList.
	b := *c
	r := look(&b, false, p.isPunct(b.cur, ".") && p.isPunct(b.cur+1, "{"))
	var gen *diag.Diagnostic
	if r.st == stOK {
		b.cur++ // the '.' the look-ahead saw
		gen, r = p.initList(&b)
		r = b.need(b.strct(r))
	}
	if d.try(c, &b, r) {
		return decided(primSum{gen: gen})
	}
	// Enum literal: astEnum = (?= '.' (Ident | QuotedIdent)) '.' @(Ident | QuotedIdent).
	b = *c
	r = look(&b, false, p.isPunct(b.cur, ".") && p.isName(b.cur+1))
	if r.st == stOK {
		b.cur += 2
		_, gen = p.name(p.tok(b.cur - 1))
	}
	if d.try(c, &b, b.strct(r)) {
		return decided(primSum{gen: gen})
	}
	switch t.typ {
	case tokNumber, tokString, tokChar, tokIdent, tokQuotedIdent:
		// One-token alternatives; only one can match.
		b = *c
		b.cur++
		d.try(c, &b, matched)
		return decided(p.literal(t))
	case tokMLString:
		// @@astMLLine+, astMLLine = @MLString: every line in a row.
		b = *c
		for p.tok(b.cur).typ == tokMLString {
			b.cur++
		}
		d.try(c, &b, matched)
		return decided(primSum{})
	case tokBuiltin:
		// astBuiltin = @Builtin @@astArgs.
		b = *c
		b.cur++
		if d.try(c, &b, b.strct(b.need(p.args(&b)))) {
			return decided(primSum{gen: p.fail(CodeNotZON, t, "builtin function calls are not allowed in ZON", "")})
		}
	}
	// Grouping: '(' @@astExpr ')'.
	b = *c
	r = p.punct(&b, "(")
	if r.st == stOK {
		_, r = p.expr(&b)
		if r = b.need(r); r.st == stOK {
			r = b.need(p.punct(&b, ")"))
		}
	}
	if d.try(c, &b, r) {
		return decided(primSum{gen: p.fail(CodeNotZON, t, "expression grouping is not allowed in ZON", "")})
	}
	// Block.
	b = *c
	stmts, r := p.block(&b)
	if d.try(c, &b, r) {
		if stmts == 0 {
			return decided(primSum{gen: p.fail(CodeNotZON, t, "void literals are not available in ZON", "use an enum literal such as '.x' for a void union payload")})
		}
		return decided(primSum{gen: p.fail(CodeNotZON, t, "blocks are not allowed in ZON", "")})
	}
	// Container type.
	b = *c
	if d.try(c, &b, p.container(&b)) {
		return decided(primSum{gen: p.fail(CodeNotZON, t, "types are not available in ZON", "")})
	}
	// Function type.
	b = *c
	if d.try(c, &b, p.fnProto(&b)) {
		return decided(primSum{gen: p.fail(CodeNotZON, t, "types are not available in ZON", "")})
	}
	// Keyword expression.
	b = *c
	if d.try(c, &b, p.keyword(&b)) {
		return decided(primSum{gen: p.keywordGen(t)})
	}
	return primSum{}, c.strct(d.result(c, false))
}

// literal is gen.primary for a one-token literal or identifier.
func (p *checker) literal(t ctok) primSum {
	text := p.text(t)
	switch t.typ {
	case tokNumber:
		n, lerr := parseNumber(text)
		if lerr != nil {
			e := p.failAt(t, lerr.Off, lerr.Msg)
			return primSum{gen: e, neg: negErr, negErr: e}
		}
		if !n.isFloat && n.big == nil && n.i == 0 {
			return primSum{neg: negErr, negErr: p.fail(CodeNotZON, t, "integer literal '-0' is ambiguous",
				"use '0' for an integer zero, or '-0.0' for a floating-point signed zero")}
		}
		return primSum{neg: negOK}
	case tokString:
		if _, lerr := parseString(text); lerr != nil {
			return primSum{gen: p.failAt(t, lerr.Off, lerr.Msg)}
		}
	case tokChar:
		if _, lerr := parseChar(text); lerr != nil {
			return primSum{gen: p.failAt(t, lerr.Off, lerr.Msg)}
		}
	case tokIdent:
		switch text {
		case "inf":
			return primSum{neg: negOK}
		case "true", "false", "null", "nan":
		default:
			return primSum{gen: p.fail(CodeNotZON, t, "invalid expression", "precede identifier with '.' for an enum literal")}
		}
	case tokQuotedIdent:
		return primSum{gen: p.fail(CodeNotZON, t, "invalid expression", "precede identifier with '.' for an enum literal")}
	}
	return primSum{}
}

// name is gen.name for a field or enum name token: the decoded name, or
// the error.
func (p *checker) name(t ctok) (string, *diag.Diagnostic) {
	text := p.text(t)
	if t.typ == tokIdent {
		return text, nil
	}
	s, lerr := parseString(text[1:])
	if lerr != nil {
		return "", p.failAt(t, lerr.Off+1, lerr.Msg)
	}
	if s == "" {
		return "", p.fail(CodeLiteral, t, "identifier cannot be empty", "")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", p.fail(CodeLiteral, t, "identifier cannot contain null bytes", "")
	}
	return s, nil
}

func (p *checker) keywordGen(t ctok) *diag.Diagnostic {
	switch k := p.text(t); k {
	case "comptime", "nosuspend", "resume", "suspend":
		return p.fail(CodeNotZON, t, fmt.Sprintf("keyword '%s' is not allowed in ZON", k), "")
	case "error", "anyframe":
		return p.fail(CodeNotZON, t, "types are not available in ZON", "")
	case "asm":
		return p.fail(CodeNotZON, t, "inline asm is not allowed in ZON", "")
	}
	return p.fail(CodeNotZON, t, "control flow is not allowed in ZON", "")
}

// initList: astInitList = '{' ( (?= '.' (Ident | QuotedIdent) '=') @@astField
// ( ',' @@astField )* ','? | @@astExpr ( ',' @@astExpr )* ','? )? @@astClose,
// astClose = @'}'. It returns gen.initList's verdict.
func (p *checker) initList(c *pctx) (*diag.Diagnostic, res) {
	if r := p.punct(c, "{"); r.st != stOK {
		return nil, r
	}
	var gen *diag.Diagnostic
	// The optional group's one iteration, a disjunction, on branch b.
	b := *c
	var d alt
	// Struct.
	fb := b
	var fs fieldsSum
	r := look(&fb, false, p.isPunct(fb.cur, ".") && p.isName(fb.cur+1) && p.isPunct(fb.cur+2, "="))
	if r.st == stOK {
		r = p.fields(&fb, &fs)
	}
	done := d.try(&b, &fb, r)
	if done && r.st == stOK {
		gen = fs.gen()
	}
	if !done {
		// Tuple.
		tb := b
		var first firstGen
		r = p.exprList(&tb, &first)
		done = d.try(&b, &tb, r)
		if done && r.st == stOK {
			gen = first.gen
		}
	}
	if _, fail := c.iter(&b, d.result(&b, done)); fail.st == stErr {
		return nil, c.strct(fail)
	}
	return gen, c.strct(c.need(c.strct(p.punct(c, "}"))))
}

// fieldsSum gathers what gen.initList checks of a struct's fields, in its
// order: every name first, then duplicates, then the values.
type fieldsSum struct {
	nameErr  *diag.Diagnostic
	dupErr   *diag.Diagnostic
	valueErr *diag.Diagnostic
	seen     map[string]ctok
}

func (s *fieldsSum) gen() *diag.Diagnostic {
	switch {
	case s.nameErr != nil:
		return s.nameErr
	case s.dupErr != nil:
		return s.dupErr
	}
	return s.valueErr
}

func (p *checker) addField(s *fieldsSum, f fieldSum) {
	if s.nameErr != nil {
		return
	}
	if f.nameErr != nil {
		s.nameErr = f.nameErr
		return
	}
	if s.dupErr == nil {
		if s.seen == nil {
			s.seen = map[string]ctok{}
		}
		if first, dup := s.seen[f.name]; dup {
			s.dupErr = p.fail(CodeDuplicate, first, "duplicate struct field name",
				fmt.Sprintf("the field is named again at %d:%d", f.at.line, f.at.col))
		} else {
			s.seen[f.name] = f.at
		}
	}
	if s.valueErr == nil {
		s.valueErr = f.value
	}
}

// fields: @@astField ( ',' @@astField )* ','?, after the look-ahead.
func (p *checker) fields(c *pctx, s *fieldsSum) res {
	f, r := p.field(c)
	if r = c.need(r); r.st != stOK {
		return r
	}
	p.addField(s, f)
	return restOfList(p, c, p.field, func(f fieldSum) { p.addField(s, f) })
}

// fieldSum is gen's view of one field: its decoded name (or the error in
// it) and its value's verdict.
type fieldSum struct {
	name    string
	at      ctok
	nameErr *diag.Diagnostic
	value   *diag.Diagnostic
}

// field: astField = '.' @(Ident | QuotedIdent) '=' @@astExpr.
func (p *checker) field(c *pctx) (fieldSum, res) {
	if r := p.punct(c, "."); r.st != stOK {
		return fieldSum{}, r
	}
	f := fieldSum{at: p.tok(c.cur)}
	if r := c.need(p.ref(c, tokIdent, tokQuotedIdent)); r.st != stOK {
		return f, c.strct(r)
	}
	if r := c.need(p.punct(c, "=")); r.st != stOK {
		return f, c.strct(r)
	}
	f.name, f.nameErr = p.name(f.at)
	gen, r := p.expr(c)
	f.value = gen
	return f, c.strct(c.need(r))
}

// block: astBlock = '{' ( @@astExpr ';' )* '}'. It returns how many
// statements it holds.
func (p *checker) block(c *pctx) (int, res) {
	if r := p.punct(c, "{"); r.st != stOK {
		return 0, r
	}
	n := 0
	for {
		b := *c
		_, r := p.expr(&b)
		if r.st == stOK {
			r = b.need(p.punct(&b, ";"))
		}
		more, fail := c.iter(&b, r)
		if fail.st == stErr {
			return 0, c.strct(fail)
		}
		if !more {
			break
		}
		n++
	}
	return n, c.strct(c.need(p.punct(c, "}")))
}

// container: astContainer = @('struct' | 'enum' | 'union' | 'opaque')
// ( '(' @@astExpr ')' )? '{' ( @@astExpr ( ',' @@astExpr )* ','? )? '}'.
func (p *checker) container(c *pctx) res {
	t := p.tok(c.cur)
	if k := p.text(t); t.typ != tokKeyword || (k != "struct" && k != "enum" && k != "union" && k != "opaque") {
		return res{st: stNo}
	}
	c.cur++
	b := *c
	r := p.punct(&b, "(")
	if r.st == stOK {
		_, r = p.expr(&b)
		if r = b.need(r); r.st == stOK {
			r = b.need(p.punct(&b, ")"))
		}
	}
	if _, fail := c.iter(&b, r); fail.st == stErr {
		return c.strct(fail)
	}
	if r := c.need(p.punct(c, "{")); r.st != stOK {
		return c.strct(r)
	}
	b = *c
	if _, fail := c.iter(&b, p.exprList(&b, nil)); fail.st == stErr {
		return c.strct(fail)
	}
	return c.strct(c.need(p.punct(c, "}")))
}

// enter counts a rule that recurses without a bracket; it reports false,
// having set abort, past MaxDepth.
func (p *checker) enter(t ctok) bool {
	p.nest++
	if p.nest > MaxDepth {
		p.stop(t.rawTok)
		return false
	}
	return true
}

// fnProto: astFnProto = @'fn':Keyword Ident? @@astArgs @@astTypeExpr.
func (p *checker) fnProto(c *pctx) res {
	t := p.tok(c.cur)
	if r := p.lit(c, tokKeyword, "fn"); r.st != stOK {
		return r
	}
	b := *c
	c.iter(&b, p.ref(&b, tokIdent)) // a reference matches or not; it never fails
	if r := c.need(p.args(c)); r.st != stOK {
		return c.strct(r)
	}
	defer func() { p.nest-- }()
	if !p.enter(t) {
		return c.strct(res{st: stErr, err: c.cur})
	}
	_, r := p.typeExpr(c)
	return c.strct(c.need(r))
}

// keyword: astKeyword = @( 'comptime':Keyword | ... ) @@astExpr?.
func (p *checker) keyword(c *pctx) res {
	t := p.tok(c.cur)
	if t.typ != tokKeyword {
		return res{st: stNo}
	}
	switch p.text(t) {
	case "comptime", "nosuspend", "unreachable", "return", "break", "continue", "anyframe", "error",
		"if", "while", "for", "switch", "asm", "resume", "suspend":
	default:
		return res{st: stNo}
	}
	c.cur++
	defer func() { p.nest-- }()
	if !p.enter(t) {
		return c.strct(res{st: stErr, err: c.cur})
	}
	b := *c
	_, r := p.expr(&b)
	if _, fail := c.iter(&b, r); fail.st == stErr {
		return c.strct(fail)
	}
	return matched
}

// syntaxError words a syntax error at token idx as Zig does.
func (p *checker) syntaxError(idx int) *diag.Diagnostic {
	found := p.tok(idx)
	ft := p.text(found)
	msg := "expected expression, found " + describeToken(found.typ, ft)
	pos := tpos(found)
	if idx > 0 {
		prev := p.tok(idx - 1)
		pv := p.text(prev)
		endsValue := prev.typ != tokPunct || pv == "}" || pv == ")" || pv == "]" || pv == ".*"
		switch {
		case prev.typ == tokPunct && pv == "." && found.typ != tokInvalid:
			msg = "expected pointer dereference, optional unwrap, or field access, found " + describeToken(found.typ, ft)
		case endsValue && prev.typ != tokKeyword && found.depth == 0:
			msg = "expected 'EOF', found " + describeToken(found.typ, ft)
		case endsValue && prev.typ != tokKeyword:
			msg = "expected ',' after initializer"
		case prev.typ == tokPunct && pv == "," && found.typ == tokPunct && ft != "}":
			msg = "expected field initializer or expression, found " + describeToken(found.typ, ft)
		}
		if prev.line != found.line {
			// Like Zig, point just past the previous token when the
			// offending one starts a new line: that is where something
			// is missing.
			pos = diag.Pos{Line: int(prev.line), Col: int(prev.col + prev.end - prev.start), Offset: int(prev.end)}
		}
	}
	return &diag.Diagnostic{
		Span:     diag.Span{File: p.file, Start: pos, End: pos},
		Severity: diag.Error,
		Code:     CodeSyntax,
		Message:  msg,
	}
}
