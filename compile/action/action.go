// Package action holds chock's action names and patterns: parsing
// patterns with precise errors, the specificity order, matching, the one
// host normaliser every namespace uses, and a segment trie that finds the
// most specific rule for an action. It is the reference the compiled OPA
// policy is checked against.
package action

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/chockhq/chock/internal/safetext"
)

// SegKind is the kind of one pattern segment, ordered most specific first.
type SegKind int

// Segment kinds.
const (
	Literal  SegKind = iota // exec
	Star                    // * in the middle: exactly one segment
	Trailing                // * at the end: one or more segments
	// PathGlob is the path of an fs action with '*' or '**' in it
	// (fs.read.~/.ssh/**): one segment, ranked after a literal and
	// before '*' (rank, which orders globs among themselves too).
	PathGlob
)

// rank orders segment kinds by specificity: literal, path glob, '*',
// trailing '*'.
func rank(k SegKind) int {
	switch k {
	case Literal:
		return 0
	case PathGlob:
		return 1
	case Star:
		return 2
	}
	return 3
}

// Pattern is a parsed action pattern: dot-separated segments, each a
// literal or '*'. A final '*' matches one or more segments.
type Pattern struct {
	text string
	segs []string
	// glob is the compiled path of an fs pattern whose path holds '*' or
	// '**' (its last segment), or nil.
	glob *Glob
}

// Glob is the pattern's path glob (its last segment), or nil.
func (p Pattern) Glob() *Glob { return p.glob }

// String returns the pattern as written.
func (p Pattern) String() string { return p.text }

// Segments returns the pattern's segments ("*" for wildcards).
func (p Pattern) Segments() []string { return p.segs }

// Len is the number of segments.
func (p Pattern) Len() int { return len(p.segs) }

// Kind returns the kind of segment i.
func (p Pattern) Kind(i int) SegKind {
	if p.glob != nil && i == len(p.segs)-1 {
		return PathGlob
	}
	if p.segs[i] != "*" {
		return Literal
	}
	if i == len(p.segs)-1 {
		return Trailing
	}
	return Star
}

// IsLiteral reports whether the pattern names exactly one action.
func (p Pattern) IsLiteral() bool {
	if p.glob != nil {
		return false
	}
	for _, s := range p.segs {
		if s == "*" {
			return false
		}
	}
	return true
}

// MaxSegments bounds the segments of an action and of a pattern: a longer
// action is malformed, and a longer pattern is an error. It lets the
// compiled policy write a pattern with both an inner and a trailing '*' as
// indexed globs, one per length.
const MaxSegments = 32

// Errors kinds of pattern and action syntax, for errors.Is.
var (
	ErrStarAlone   = errors.New("'*' alone would match every action")
	ErrEmptySeg    = errors.New("empty segment")
	ErrPartialGlob = errors.New("partial glob")
	ErrBadChar     = errors.New("white space or control character")
	ErrTooLong     = errors.New("too many segments")
)

// badRune says whether r may not stand in an action name: white space,
// control characters, the invisible format characters that make one name
// read as another (safetext.Hidden), and bytes that are not UTF-8.
func badRune(r rune) bool {
	return r <= ' ' || safetext.Control(r) || safetext.Hidden(r) || r == utf8.RuneError
}

// SegmentClass is the RE2 character class of the characters a segment may
// hold: everything but '.', '*' and what badRune refuses. The compiled
// policy checks its input with it, so OPA and this package agree.
func SegmentClass() string {
	var b strings.Builder
	b.WriteString(`[^.*\x00-\x20\x7f-\x{9f}`)
	for _, r := range safetext.HiddenRanges() {
		if r[0] == r[1] {
			fmt.Fprintf(&b, `\x{%x}`, r[0])
		} else {
			fmt.Fprintf(&b, `\x{%x}-\x{%x}`, r[0], r[1])
		}
	}
	b.WriteString(`\x{fffd}]`)
	return b.String()
}

// scan checks the characters and the segment count of s (a pattern when
// glob, else an action) and returns the offsets where segments start.
func scan(s, what string) ([]int, error) {
	starts := []int{0}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if badRune(r) {
			return nil, perr(ErrBadChar, i, fmt.Sprintf("%s holds %s", what, describeRune(s[i:], r, n)),
				"action names have no white space, control characters or invisible format characters")
		}
		if r == '.' {
			starts = append(starts, i+1)
			if len(starts) > MaxSegments {
				return nil, perr(ErrTooLong, i+1, fmt.Sprintf("%s has more than %d segments", what, MaxSegments),
					fmt.Sprintf("an action has at most %d dot-separated segments", MaxSegments))
			}
		}
		i += n
	}
	return starts, nil
}

// PatternError is a syntax error in a pattern or action, at byte Offset.
type PatternError struct {
	Kind   error // one of the Err* values
	Offset int
	Msg    string
	Hint   string
}

func (e *PatternError) Error() string { return e.Msg }

// Unwrap lets errors.Is test the kind.
func (e *PatternError) Unwrap() error { return e.Kind }

func perr(kind error, off int, msg, hint string) *PatternError {
	return &PatternError{Kind: kind, Offset: off, Msg: msg, Hint: hint}
}

// ParsePattern parses a pattern. A '*' alone, an empty segment, a partial
// glob such as "exec.path.py*", and white space or control characters are
// errors, each at the byte where it starts.
func ParsePattern(s string) (Pattern, error) {
	if s == "*" {
		return Pattern{}, perr(ErrStarAlone, 0, "'*' alone would match every action",
			"name a namespace, such as \"exec.*\" or \"mcp.notion.*\"")
	}
	if s == "" {
		return Pattern{}, perr(ErrEmptySeg, 0, "empty action pattern", "")
	}
	if t := pathTail(s); t >= 0 {
		return parsePathPattern(s, t)
	}
	return parsePlainPattern(s)
}

// parsePlainPattern parses a pattern whose every segment is dot-separated.
func parsePlainPattern(s string) (Pattern, error) {
	starts, err := scan(s, "pattern")
	if err != nil {
		return Pattern{}, err
	}
	segs := make([]string, 0, len(starts))
	for k, start := range starts {
		end := len(s)
		if k+1 < len(starts) {
			end = starts[k+1] - 1
		}
		seg := s[start:end]
		if seg == "" {
			return Pattern{}, perr(ErrEmptySeg, start, "empty segment in pattern",
				"segments are separated by exactly one '.', with none at either end")
		}
		if star := strings.IndexByte(seg, '*'); star >= 0 && seg != "*" {
			return Pattern{}, perr(ErrPartialGlob, start+star,
				fmt.Sprintf("partial glob %q: '*' must be a whole segment", seg),
				"write the segment in full, or use '*' for the whole segment")
		}
		segs = append(segs, seg)
	}
	return Pattern{text: s, segs: segs}, nil
}

func describeRune(s string, r rune, n int) string {
	switch {
	case r == ' ':
		return "a space"
	case r == '\t':
		return "a tab"
	case r == '\n':
		return "a line break"
	case r == utf8.RuneError && n <= 1:
		return fmt.Sprintf("byte 0x%02x, which is not UTF-8", s[0])
	case r < 0x80:
		return fmt.Sprintf("control character 0x%02x", r)
	case safetext.Control(r):
		return fmt.Sprintf("control character U+%04X", r)
	}
	return fmt.Sprintf("invisible character U+%04X", r)
}

// MustPattern parses a pattern known to be valid; it is for tests and
// constants, and panics on a bad pattern.
func MustPattern(s string) Pattern {
	p, err := ParsePattern(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Action is a concrete action name split into segments.
type Action []string

// ParseAction checks an action name: non-empty segments, no '*', no white
// space or control characters.
func ParseAction(s string) (Action, error) {
	if s == "" {
		return nil, perr(ErrEmptySeg, 0, "empty action", "")
	}
	if t := pathTail(s); t >= 0 {
		return parsePathAction(s, t)
	}
	return parsePlainAction(s)
}

// parsePlainAction parses an action whose every segment is dot-separated.
func parsePlainAction(s string) (Action, error) {
	starts, err := scan(s, "action")
	if err != nil {
		return nil, err
	}
	a := make(Action, 0, len(starts))
	for k, start := range starts {
		end := len(s)
		if k+1 < len(starts) {
			end = starts[k+1] - 1
		}
		seg := s[start:end]
		if star := strings.IndexByte(seg, '*'); star >= 0 {
			return nil, perr(ErrPartialGlob, start+star, "an action names one thing and has no '*'",
				"write the full action, such as \"exec.path.gh\"")
		}
		if seg == "" {
			return nil, perr(ErrEmptySeg, start, "empty segment in action", "")
		}
		a = append(a, seg)
	}
	return a, nil
}

// Valid reports whether s is a well-formed action, one ParseAction
// accepts, without building it, and returns its number of segments.
func Valid(s string) (int, bool) {
	if t := pathTail(s); t >= 0 {
		a, err := parsePathAction(s, t)
		return len(a), err == nil
	}
	n, seg := 1, 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '.':
				if seg == 0 {
					return 0, false
				}
				if n++; n > MaxSegments {
					return 0, false
				}
				seg = 0
			case c <= ' ' || c == 0x7f || c == '*':
				return 0, false
			default:
				seg++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if badRune(r) {
			return 0, false
		}
		seg++
		i += size
	}
	return n, seg > 0
}

// String joins the action's segments.
func (a Action) String() string { return strings.Join(a, ".") }

// Matches reports whether pattern p matches action a.
func (p Pattern) Matches(a Action) bool {
	for i, s := range p.segs {
		if i >= len(a) {
			return false
		}
		if p.glob != nil && i == len(p.segs)-1 {
			return len(a) == len(p.segs) && p.glob.Matches(a[i])
		}
		if s == "*" {
			if i == len(p.segs)-1 {
				return true // trailing: one or more remaining segments
			}
			continue
		}
		if s != a[i] {
			return false
		}
	}
	return len(a) == len(p.segs)
}

// Compare orders two patterns by specificity: negative when p is more
// specific than q, positive when less, zero only for identical patterns.
// Walking left to right, at the first segment where they differ a literal
// beats a one-segment '*', which beats a trailing '*'. Two different
// literals, or one pattern ending first, are ordered by kind and then text
// so that Compare is a total order.
func Compare(p, q Pattern) int {
	n := min(len(p.segs), len(q.segs))
	for i := 0; i < n; i++ {
		kp, kq := p.Kind(i), q.Kind(i)
		if kp != kq {
			return rank(kp) - rank(kq)
		}
		if kp == PathGlob && p.glob.lits != q.glob.lits {
			return q.glob.lits - p.glob.lits // more literal characters first
		}
		if (kp == Literal || kp == PathGlob) && p.segs[i] != q.segs[i] {
			return strings.Compare(p.segs[i], q.segs[i])
		}
	}
	return len(q.segs) - len(p.segs)
}

// Overlaps reports whether some action matches both p and q.
func Overlaps(p, q Pattern) bool {
	i := 0
	for ; i < len(p.segs) && i < len(q.segs); i++ {
		kp, kq := p.Kind(i), q.Kind(i)
		if kp == Trailing || kq == Trailing {
			return true
		}
		if kp == Literal && kq == Literal && p.segs[i] != q.segs[i] {
			return false
		}
		if !segsOverlap(p, q, i) {
			return false
		}
	}
	return len(p.segs) == len(q.segs)
}

// Covers reports whether every action that q matches is matched by p.
func Covers(p, q Pattern) bool {
	for i := 0; i < len(p.segs); i++ {
		kp := p.Kind(i)
		if kp == Trailing {
			return i < len(q.segs)
		}
		if i >= len(q.segs) {
			return false
		}
		kq := q.Kind(i)
		if kq == Trailing {
			return false // q reaches deeper than p's fixed length
		}
		if kp == Literal && (kq != Literal || p.segs[i] != q.segs[i]) {
			return false
		}
		if kp == PathGlob && !globCovers(p, q, i) {
			return false
		}
	}
	return len(p.segs) == len(q.segs)
}
