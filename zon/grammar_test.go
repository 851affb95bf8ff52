package zon

// The participle grammar. Like Zig's own pipeline (Parse.zig, then ZonGen),
// it first accepts a Zig *expression* -- operators, type expressions, calls,
// blocks and all -- and a second pass (gen.go) rejects what is not ZON. That
// split is what makes error positions agree with Zig's: "1 + 2" is a parse
// success and a ZON error at the '+', while "1 2" is a parse error at the 2.

import (
	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// astFile is a whole document: exactly one expression, then EOF.
type astFile struct {
	Expr *astExpr `parser:"@@"`
}

// astExpr is a chain of binary operators. ZON allows none, so precedence is
// not modelled: the first operator is the one reported.
type astExpr struct {
	Left *astPrefix  `parser:"@@"`
	Ops  []*astBinOp `parser:"@@*"`
}

type astBinOp struct {
	Pos   lexer.Position
	Op    string     `parser:"@( 'or':Keyword | 'and':Keyword | 'orelse':Keyword | 'catch':Keyword | '==' | '!=' | '<' | '>' | '<=' | '>=' | '&' | '^' | '|' | '<<' | '>>' | '<<|' | '+' | '-' | '++' | '+%' | '-%' | '+|' | '-|' | '*' | '/' | '%' | '**' | '*%' | '*|' | '||' | '!' )"`
	Right *astPrefix `parser:"@@"`
}

// astPrefix is prefix operators (-, !, ~, &, try ...) before an operand.
type astPrefix struct {
	Ops     []*astPrefixOp `parser:"@@*"`
	Operand *astCurly      `parser:"@@"`
}

type astPrefixOp struct {
	Pos lexer.Position
	Op  string `parser:"@( '-' | '!' | '~' | '-%' | '&' | 'try':Keyword )"`
}

// astCurly is a type expression with an optional initializer: Foo{...}.
type astCurly struct {
	Type *astTypeExpr `parser:"@@"`
	Init *astInitList `parser:"@@?"`
}

// astTypeExpr is prefix type operators (?T, *T, []T, [N]T) before a suffix expression.
type astTypeExpr struct {
	Ops    []*astTypeOp   `parser:"@@*"`
	Suffix *astSuffixExpr `parser:"@@"`
}

type astTypeOp struct {
	Pos     lexer.Position
	Op      string      `parser:"  @'?' | @'*' | @'**'"`
	Bracket *astBracket `parser:"| @@"`
}

// astBracket is the [N], [] or [*] of an array, slice or many-pointer type.
type astBracket struct {
	Open string   `parser:"@'['"`
	Len  *astExpr `parser:"( '*' | @@ )? ']'"`
}

// astSuffixExpr is a primary expression followed by field access, deref,
// unwrap, indexing or calls.
type astSuffixExpr struct {
	Primary *astPrimary    `parser:"@@"`
	Ops     []*astSuffixOp `parser:"@@*"`
}

type astSuffixOp struct {
	Pos   lexer.Position
	Field string   `parser:"  (?! '.' '{') '.' ( @(Ident | QuotedIdent) | @'?' )"`
	Deref bool     `parser:"| @'.*'"`
	Index *astExpr `parser:"| '[' @@ ( '..' @@? )? ']'"`
	Call  *astArgs `parser:"| @@"`
}

type astArgs struct {
	Pos  lexer.Position
	Args []*astExpr `parser:"'(' ( @@ ( ',' @@ )* ','? )? ')'"`
}

// astPrimary is one operand.
type astPrimary struct {
	Pos       lexer.Position
	Init      *astAnonInit  `parser:"  (?= '.' '{') '.' @@"`
	Enum      *astEnum      `parser:"| @@"`
	Number    *string       `parser:"| @Number"`
	String    *string       `parser:"| @String"`
	ML        []*astMLLine  `parser:"| @@+"`
	Char      *string       `parser:"| @Char"`
	Ident     *string       `parser:"| @Ident"`
	Quoted    *string       `parser:"| @QuotedIdent"`
	Builtin   *astBuiltin   `parser:"| @@"`
	Group     *astExpr      `parser:"| '(' @@ ')'"`
	Block     *astBlock     `parser:"| @@"`
	Container *astContainer `parser:"| @@"`
	Fn        *astFnProto   `parser:"| @@"`
	Keyword   *astKeyword   `parser:"| @@"`
}

// astMLLine is one \\ line of a multiline string.
type astMLLine struct {
	Tok lexer.Token `parser:"@MLString"`
}

// astEnum is .name or .@"name".
type astEnum struct {
	Name lexer.Token `parser:"(?= '.' (Ident | QuotedIdent)) '.' @(Ident | QuotedIdent)"`
}

// astAnonInit is .{ ... } after its dot: struct, tuple or empty.
type astAnonInit struct {
	List *astInitList `parser:"@@"`
}

// astInitList is { fields } or { values }. The struct form is chosen by the
// first entry alone, exactly as Zig does (a 3-token look-ahead: . name =).
type astInitList struct {
	Pos    lexer.Position
	Fields []*astField `parser:"'{' ( (?= '.' (Ident | QuotedIdent) '=') @@ ( ',' @@ )* ','?"`
	Values []*astExpr  `parser:"    | @@ ( ',' @@ )* ','? )?"`
	Close  *astClose   `parser:"@@"`
}

type astClose struct {
	Pos lexer.Position
	V   string `parser:"@'}'"`
}

type astField struct {
	Pos   lexer.Position
	Name  lexer.Token `parser:"'.' @(Ident | QuotedIdent) '='"`
	Value *astExpr    `parser:"@@"`
}

type astBuiltin struct {
	Pos  lexer.Position
	Name string   `parser:"@Builtin"`
	Args *astArgs `parser:"@@"`
}

// astBlock is { statements } -- never ZON, parsed to report it well.
type astBlock struct {
	Pos   lexer.Position
	Stmts []*astExpr `parser:"'{' ( @@ ';' )* '}'"`
}

// astContainer is struct/enum/union/opaque { ... } -- a type, never ZON.
type astContainer struct {
	Pos     lexer.Position
	Kind    string     `parser:"@('struct':Keyword | 'enum':Keyword | 'union':Keyword | 'opaque':Keyword)"`
	Arg     *astExpr   `parser:"( '(' @@ ')' )?"`
	Members []*astExpr `parser:"'{' ( @@ ( ',' @@ )* ','? )? '}'"`
}

// astFnProto is fn name(params) ReturnType -- a type, never ZON.
type astFnProto struct {
	Pos    lexer.Position
	Fn     string       `parser:"@'fn':Keyword Ident?"`
	Params *astArgs     `parser:"@@"`
	Ret    *astTypeExpr `parser:"@@"`
}

// astKeyword is a keyword expression: comptime x, unreachable, return x, error.X ...
type astKeyword struct {
	Pos     lexer.Position
	Keyword string   `parser:"@('comptime':Keyword | 'nosuspend':Keyword | 'unreachable':Keyword | 'return':Keyword | 'break':Keyword | 'continue':Keyword | 'anyframe':Keyword | 'error':Keyword | 'if':Keyword | 'while':Keyword | 'for':Keyword | 'switch':Keyword | 'asm':Keyword | 'resume':Keyword | 'suspend':Keyword)"`
	Operand *astExpr `parser:"@@?"`
}

var zonParser = participle.MustBuild[astFile](
	participle.Lexer(lexDef{}),
	participle.UseLookahead(2),
)
