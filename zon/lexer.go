package zon

// A hand-written tokenizer with Zig's own token rules, behind participle's
// lexer interface. ZON has no tokenizer of its own: Zig reads a .zon file with
// the ordinary Zig tokenizer, so this one knows Zig's operators, keywords and
// the exact shapes of number, string, character and multiline-string tokens.
// Comments are not tokens; they are kept aside for the formatter.

import (
	"github.com/alecthomas/participle/v2/lexer"
)

// Token types. Participle reserves EOF = -1.
const (
	tokIdent       lexer.TokenType = -(iota + 2) // foo
	tokQuotedIdent                               // @"foo"
	tokKeyword                                   // struct, fn, ...
	tokBuiltin                                   // @as
	tokString                                    // "..."
	tokMLString                                  // \\... (one line)
	tokChar                                      // '...'
	tokNumber                                    // 0x1f, 1.5e3, ...
	tokPunct                                     // operators and punctuation
	tokInvalid                                   // bytes no token can start with
	tokDocComment                                // /// or //!
)

// describeToken is how an error names a token, in Zig's words.
func describeToken(typ lexer.TokenType, text string) string {
	switch typ {
	case lexer.EOF:
		return "'EOF'"
	case tokIdent, tokQuotedIdent:
		return "an identifier"
	case tokKeyword:
		return "'" + text + "'"
	case tokBuiltin:
		return "a builtin function"
	case tokString, tokMLString:
		return "a string literal"
	case tokChar:
		return "a character literal"
	case tokNumber:
		return "a number literal"
	case tokInvalid:
		return "invalid bytes"
	case tokDocComment:
		return "a document comment"
	}
	return "'" + text + "'"
}

// keywords is Zig 0.15's keyword table (async, await and usingnamespace were
// removed in 0.15).
var keywords = map[string]bool{
	"addrspace": true, "align": true, "allowzero": true, "and": true, "anyframe": true,
	"anytype": true, "asm": true, "break": true, "callconv": true, "catch": true,
	"comptime": true, "const": true, "continue": true, "defer": true, "else": true,
	"enum": true, "errdefer": true, "error": true, "export": true, "extern": true,
	"fn": true, "for": true, "if": true, "inline": true, "noalias": true,
	"noinline": true, "nosuspend": true, "opaque": true, "or": true, "orelse": true,
	"packed": true, "pub": true, "resume": true, "return": true, "linksection": true,
	"struct": true, "suspend": true, "switch": true, "test": true, "threadlocal": true,
	"try": true, "union": true, "unreachable": true, "var": true, "volatile": true,
	"while": true,
}

// isKeyword says whether s is one of keywords, as a switch the compiler
// turns into a search by length and bytes: the scanner asks it of every
// identifier, where a map lookup hashes every one.
func isKeyword(s string) bool {
	switch s {
	case "addrspace", "align", "allowzero", "and", "anyframe",
		"anytype", "asm", "break", "callconv", "catch",
		"comptime", "const", "continue", "defer", "else",
		"enum", "errdefer", "error", "export", "extern",
		"fn", "for", "if", "inline", "noalias",
		"noinline", "nosuspend", "opaque", "or", "orelse",
		"packed", "pub", "resume", "return", "linksection",
		"struct", "suspend", "switch", "test", "threadlocal",
		"try", "union", "unreachable", "var", "volatile",
		"while":
		return true
	}
	return false
}

// Comment is a // line comment kept for the formatter.
type Comment struct {
	Offset int    // byte offset of the first '/'
	Line   int    // 1-based line
	Text   string // the comment, "//" included, line end excluded
	// OwnLine is true when nothing but white space precedes the comment on its line.
	OwnLine bool
}

// rawTok is a token as offsets into the source: no allocation per token.
type rawTok struct {
	typ        lexer.TokenType
	start, end uint32 // byte offsets, end exclusive
	line, col  uint32 // of start
}

type scanner struct {
	src       string
	pos       int
	line      int
	lineStart int
	comments  []Comment
	// noComments drops comments instead of keeping them in comments.
	noComments bool
}

func (s *scanner) tok(typ lexer.TokenType, start int) rawTok {
	return rawTok{typ: typ, start: uint32(start), end: uint32(s.pos), line: uint32(s.line), col: uint32(start - s.lineStart + 1)}
}

// invalid makes an invalid token from start to the end of the line.
func (s *scanner) invalid(start int) rawTok {
	for s.pos < len(s.src) && s.src[s.pos] != '\n' {
		s.pos++
	}
	return s.tok(tokInvalid, start)
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// next returns the next token; ok is false once EOF is returned.
func (s *scanner) next() (rawTok, bool) {
	src := s.src
	for s.pos < len(src) {
		c := src[s.pos]
		switch {
		case c == '\n':
			s.pos++
			s.line++
			s.lineStart = s.pos
			continue
		case c == ' ' || c == '\t' || c == '\r':
			s.pos++
			continue
		case c == '/' && s.pos+1 < len(src) && src[s.pos+1] == '/':
			if t, isTok := s.comment(); isTok {
				return t, true
			}
			continue
		}
		break
	}
	if s.pos >= len(src) {
		return rawTok{typ: lexer.EOF, start: uint32(s.pos), end: uint32(s.pos), line: uint32(s.line), col: uint32(s.pos - s.lineStart + 1)}, false
	}
	start := s.pos
	c := src[start]
	switch {
	case isIdentStart(c):
		for s.pos < len(src) && isIdentChar(src[s.pos]) {
			s.pos++
		}
		if isKeyword(src[start:s.pos]) {
			return s.tok(tokKeyword, start), true
		}
		return s.tok(tokIdent, start), true
	case c >= '0' && c <= '9':
		s.number()
		return s.tok(tokNumber, start), true
	case c == '"':
		if !s.quoted() {
			return s.invalid(start), true
		}
		return s.tok(tokString, start), true
	case c == '@':
		if start+1 < len(src) && src[start+1] == '"' {
			s.pos++
			if !s.quoted() {
				return s.invalid(start), true
			}
			return s.tok(tokQuotedIdent, start), true
		}
		if start+1 < len(src) && isIdentStart(src[start+1]) {
			s.pos++
			for s.pos < len(src) && isIdentChar(src[s.pos]) {
				s.pos++
			}
			return s.tok(tokBuiltin, start), true
		}
		return s.invalid(start), true
	case c == '\'':
		if !s.char() {
			return s.invalid(start), true
		}
		return s.tok(tokChar, start), true
	case c == '\\':
		if start+1 < len(src) && src[start+1] == '\\' {
			if !s.mlLine() {
				return s.invalid(start), true
			}
			return s.tok(tokMLString, start), true
		}
		return s.invalid(start), true
	}
	if n := punctLen(src[start:]); n > 0 {
		s.pos += n
		return s.tok(tokPunct, start), true
	}
	return s.invalid(start), true
}

// comment consumes a // comment. A doc comment (/// but not ////, or //!) is
// returned as a token, and so is a comment holding a byte Zig refuses there.
func (s *scanner) comment() (rawTok, bool) {
	src := s.src
	start := s.pos
	end := start + 2
	for end < len(src) && src[end] != '\n' {
		end++
	}
	body := src[start:end]
	doc := (len(body) >= 3 && body[2] == '/' && (len(body) == 3 || body[3] != '/')) ||
		(len(body) >= 3 && body[2] == '!')
	for i := 2; i < len(body); i++ {
		b := body[i]
		if b == '\r' && i+1 == len(body) && end < len(src) {
			continue // CR directly before LF
		}
		if b < 0x20 || b == 0x7f {
			return s.invalid(start), true
		}
	}
	s.pos = end
	if doc {
		return s.tok(tokDocComment, start), true
	}
	text := body
	if len(text) > 0 && text[len(text)-1] == '\r' {
		text = text[:len(text)-1]
	}
	if s.noComments {
		return rawTok{}, false
	}
	own := true
	for i := s.lineStart; i < start; i++ {
		if src[i] != ' ' && src[i] != '\t' && src[i] != '\r' {
			own = false
			break
		}
	}
	s.comments = append(s.comments, Comment{Offset: start, Line: s.line, Text: text, OwnLine: own})
	return rawTok{}, false
}

// quoted consumes a "..." literal starting at s.pos (which is at the quote).
// It reports false for a token Zig's tokenizer calls invalid: a raw control
// byte or line end, or no closing quote.
func (s *scanner) quoted() bool { return s.literal('"', false) }

// char consumes a '...' literal, with the tokenizer's rules only: any
// escaped byte but a line end, no raw control bytes, ends at the first
// unescaped quote (” is a token, rejected later as empty).
func (s *scanner) char() bool { return s.literal('\'', true) }

// literal consumes a literal from the quote at s.pos to the first
// unescaped quote, refusing a raw control byte, an escaped line end and,
// with escNUL, an escaped NUL byte.
func (s *scanner) literal(quote byte, escNUL bool) bool {
	src := s.src
	i := s.pos + 1
	for i < len(src) {
		b := src[i]
		switch {
		case b == quote:
			s.pos = i + 1
			return true
		case b == '\\':
			if i+1 >= len(src) || src[i+1] == '\n' || escNUL && src[i+1] == 0 {
				return false
			}
			i += 2
			continue
		case b < 0x20 || b == 0x7f:
			return false
		}
		i++
	}
	return false
}

// mlLine consumes one \\ line up to (not including) the line end.
func (s *scanner) mlLine() bool {
	src := s.src
	i := s.pos + 2
	for i < len(src) && src[i] != '\n' {
		b := src[i]
		if b == '\r' {
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
				continue
			}
			return false
		}
		if b < 0x20 || b == 0x7f {
			return false
		}
		i++
	}
	s.pos = i
	return true
}

// number consumes a number token with the tokenizer's greedy shape: digits
// and letters and '_'; a '.' continues it only when a digit, letter or '_'
// follows and no '.' came before; e, E, p or P may be followed by one sign.
func (s *scanner) number() {
	src := s.src
	i := s.pos
	period := false
	for i < len(src) {
		b := src[i]
		switch {
		case b == 'e' || b == 'E' || b == 'p' || b == 'P':
			i++
			if i < len(src) && (src[i] == '+' || src[i] == '-') {
				i++
				period = true // after a signed exponent the token is a float
			}
			continue
		case isIdentChar(b):
			i++
			continue
		case b == '.' && !period:
			if i+1 < len(src) && isIdentChar(src[i+1]) {
				period = true
				i++
				continue
			}
		}
		break
	}
	s.pos = i
}

// punctLen returns the length of the operator or punctuation at the start
// of b, longest match first, or 0.
func punctLen(b string) int {
	at := func(i int) byte {
		if i < len(b) {
			return b[i]
		}
		return 0
	}
	c := b[0]
	switch c {
	case '(', ')', '[', ']', '{', '}', ',', ';', ':', '~', '?':
		return 1
	case '.':
		switch at(1) {
		case '.':
			if at(2) == '.' {
				return 3
			}
			return 2
		case '*':
			if at(2) == '*' {
				return 3
			}
			return 2
		}
		return 1
	case '!', '=', '^', '/', '%':
		if at(1) == '=' {
			return 2
		}
		if c == '=' && at(1) == '>' {
			return 2
		}
		return 1
	case '&':
		if at(1) == '=' {
			return 2
		}
		return 1
	case '|':
		if at(1) == '|' || at(1) == '=' {
			return 2
		}
		return 1
	case '+', '-', '*':
		n := 1
		switch at(1) {
		case '%', '|':
			n = 2
			if at(2) == '=' {
				n = 3
			}
			return n
		case '=':
			return 2
		}
		if c == '+' && at(1) == '+' {
			return 2
		}
		if c == '*' && at(1) == '*' {
			return 2
		}
		if c == '-' && at(1) == '>' {
			return 2
		}
		return 1
	case '<', '>':
		if at(1) == c {
			if c == '<' && at(2) == '|' {
				if at(3) == '=' {
					return 4
				}
				return 3
			}
			if at(2) == '=' {
				return 3
			}
			return 2
		}
		if at(1) == '=' {
			return 2
		}
		return 1
	}
	return 0
}
