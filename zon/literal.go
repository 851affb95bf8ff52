package zon

// Literal decoding with Zig's rules (number_literal.zig, string_literal.zig):
// each failure carries the byte offset inside the token that Zig reports.

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// litError is a failure inside a literal token, at byte offset Off of it.
type litError struct {
	Off int
	Msg string
}

// numResult is a decoded number literal.
type numResult struct {
	isFloat bool
	i       int64
	big     *big.Int
	f       float64
}

func digitValue(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return -1
}

var baseNames = map[int]string{2: "binary", 8: "octal", 10: "decimal", 16: "hex"}

// parseNumber validates and decodes a number token.
func parseNumber(b string) (numResult, *litError) {
	i, base := 0, 10
	if len(b) >= 2 && b[0] == '0' {
		switch b[1] {
		case 'b':
			base, i = 2, 2
		case 'o':
			base, i = 8, 2
		case 'x':
			base, i = 16, 2
		case 'B', 'O', 'X':
			return numResult{}, &litError{1, "base prefix must be lowercase"}
		case '.', 'e', 'E':
		default:
			msg := fmt.Sprintf("number '%s' has leading zero", b)
			return numResult{}, &litError{0, msg}
		}
	}
	if len(b) == 2 && base != 10 {
		return numResult{}, &litError{2, "expected a digit after base prefix"}
	}
	var (
		underscore, period, exponent, float bool
		special                             byte
	)
	for ; i < len(b); i++ {
		c := b[i]
		switch c {
		case '_':
			if i == 2 && base != 10 {
				return numResult{}, &litError{i, "expected digit before digit separator"}
			}
			if special != 0 {
				return numResult{}, &litError{i, "expected digit before digit separator"}
			}
			if underscore {
				return numResult{}, &litError{i, "repeated digit separator"}
			}
			underscore = true
			continue
		case 'e', 'E', 'p', 'P':
			isExp := (base == 10 && (c == 'e' || c == 'E')) || (base == 16 && (c == 'p' || c == 'P'))
			if isExp {
				float = true
				if exponent {
					return numResult{}, &litError{i, "duplicate exponent"}
				}
				if underscore {
					return numResult{}, &litError{i, "expected digit before exponent"}
				}
				special = c
				exponent = true
				continue
			}
		case '.':
			if base != 10 && base != 16 {
				return numResult{}, &litError{2, "invalid base for float literal"}
			}
			if exponent {
				return numResult{}, &litError{i, "unexpected period after exponent"}
			}
			float = true
			if period {
				return numResult{}, &litError{i, "duplicate period"}
			}
			period = true
			if underscore {
				return numResult{}, &litError{i, "expected digit before '.'"}
			}
			special = c
			continue
		case '+', '-':
			switch special {
			case 'p', 'P', 'e', 'E':
			default:
				return numResult{}, &litError{i, fmt.Sprintf("sign '%c' cannot follow digit '%c' in %s base", c, b[i-1], baseNames[base])}
			}
			special = c
			continue
		}
		d := digitValue(c)
		if d < 0 {
			return numResult{}, &litError{i, fmt.Sprintf("invalid character '%c'", c)}
		}
		if d >= base {
			return numResult{}, &litError{i, fmt.Sprintf("invalid digit '%c' for %s base", c, baseNames[base])}
		}
		if exponent && d >= 10 {
			return numResult{}, &litError{i, fmt.Sprintf("invalid digit '%c' in exponent", c)}
		}
		underscore = false
		special = 0
	}
	if underscore {
		return numResult{}, &litError{len(b) - 1, "trailing digit separator"}
	}
	if special != 0 {
		return numResult{}, &litError{len(b) - 1, fmt.Sprintf("expected digit after '%c'", b[len(b)-2])}
	}
	clean := strings.ReplaceAll(b, "_", "")
	if float {
		return numResult{isFloat: true, f: decodeFloat(clean, base)}, nil
	}
	digits := clean
	if base != 10 {
		digits = clean[2:]
	}
	if n, err := strconv.ParseInt(digits, base, 64); err == nil {
		return numResult{i: n}, nil
	}
	z, ok := new(big.Int).SetString(digits, base)
	if !ok { // unreachable after validation; report rather than panic
		return numResult{}, &litError{0, "invalid number literal"}
	}
	return numResult{big: z}, nil
}

// decodeFloat turns a validated float literal (no underscores) into the
// nearest float64. Values past float64's range become ±Inf, as the ZON
// test convention asks (Zig itself keeps f128).
func decodeFloat(s string, base int) float64 {
	if base == 16 {
		if !strings.ContainsAny(s, "pP") {
			s += "p0"
		}
		if strings.HasPrefix(s[2:], ".") {
			s = s[:2] + "0" + s[2:]
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// strconv reports range errors with ±Inf or 0 already set.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f
		}
		bf, _, perr := big.ParseFloat(s, 0, 200, big.ToNearestEven)
		if perr != nil {
			return math.NaN()
		}
		f, _ = bf.Float64()
	}
	return f
}

// parseEscape decodes the escape at s[i] == '\\'. It returns the code point,
// whether it came from \u (so it must be UTF-8 encoded), and the index after it.
func parseEscape(s string, i int) (rune, bool, int, *litError) {
	if i+1 >= len(s) {
		return 0, false, i, &litError{i + 1, "invalid escape character"}
	}
	i += 2
	switch c := s[i-1]; c {
	case 'n':
		return '\n', false, i, nil
	case 'r':
		return '\r', false, i, nil
	case '\\':
		return '\\', false, i, nil
	case 't':
		return '\t', false, i, nil
	case '\'':
		return '\'', false, i, nil
	case '"':
		return '"', false, i, nil
	case 'x':
		v := 0
		for j := i; j < i+2; j++ {
			if j >= len(s) {
				return 0, false, j, &litError{j, "expected hex digit"}
			}
			d := digitValue(s[j])
			if d < 0 || d >= 16 {
				return 0, false, j, &litError{j, fmt.Sprintf("expected hex digit, found '%c'", s[j])}
			}
			v = v*16 + d
		}
		return rune(v), false, i + 2, nil
	case 'u':
		j := i
		if j >= len(s) || s[j] != '{' {
			return 0, false, j, &litError{j, fmt.Sprintf("expected '{', found '%s'", at(s, j))}
		}
		j++
		if j >= len(s) {
			return 0, false, j, &litError{j, "expected hex digit or '}'"}
		}
		if s[j] == '}' {
			return 0, false, j, &litError{j, "empty unicode escape sequence"}
		}
		v := 0
		for ; j < len(s); j++ {
			c := s[j]
			if c == '}' {
				return rune(v), true, j + 1, nil
			}
			d := digitValue(c)
			if d < 0 || d >= 16 {
				return 0, false, j, &litError{j, fmt.Sprintf("expected hex digit or '}', found '%c'", c)}
			}
			v = v*16 + d
			if v > 0x10ffff {
				return 0, false, j, &litError{j, "unicode escape does not correspond to a valid unicode scalar value"}
			}
		}
		return 0, false, j, &litError{j, "expected '}'"}
	default:
		return 0, false, i, &litError{i - 1, fmt.Sprintf("invalid escape character: '%c'", c)}
	}
}

func at(s string, i int) string {
	if i < len(s) {
		return s[i : i+1]
	}
	return ""
}

// parseString decodes a "..." token (quotes included) into its bytes.
func parseString(tok string) (string, *litError) {
	if strings.IndexByte(tok, '\\') < 0 {
		return tok[1 : len(tok)-1], nil
	}
	var b strings.Builder
	b.Grow(len(tok))
	i := 1
	for i < len(tok)-1 {
		c := tok[i]
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		escAt := i + 1
		r, isU, next, err := parseEscape(tok, i)
		if err != nil {
			return "", err
		}
		if isU {
			if r >= 0xD800 && r <= 0xDFFF {
				return "", &litError{escAt + 1, "unicode escape does not correspond to a valid unicode scalar value"}
			}
			b.WriteRune(r)
		} else {
			b.WriteByte(byte(r))
		}
		i = next
	}
	return b.String(), nil
}

// parseChar decodes a '...' token (quotes included) into one code point.
func parseChar(tok string) (rune, *litError) {
	if len(tok) < 3 {
		return 0, &litError{0, "empty character literal"}
	}
	if tok[1] == '\\' {
		r, _, next, err := parseEscape(tok, 1)
		if err != nil {
			return 0, err
		}
		if next+1 != len(tok) || tok[next] != '\'' {
			return 0, &litError{next, fmt.Sprintf("expected single quote ('), found '%s'", at(tok, next))}
		}
		return r, nil
	}
	inner := tok[1 : len(tok)-1]
	n := utf8SeqLen(inner[0])
	if n == 0 {
		return 0, &litError{1, "unicode escape does not correspond to a valid unicode scalar value"}
	}
	if len(inner) > n {
		return 0, &litError{1 + n, fmt.Sprintf("expected single quote ('), found '%s'", at(tok, 1+n))}
	}
	if len(inner) < n {
		return 0, &litError{1, "unicode escape does not correspond to a valid unicode scalar value"}
	}
	r, size := utf8.DecodeRuneInString(inner)
	if r == utf8.RuneError && size <= 1 {
		return 0, &litError{1, "unicode escape does not correspond to a valid unicode scalar value"}
	}
	return r, nil
}

// utf8SeqLen is the length a UTF-8 sequence with lead byte b claims, 0 if b
// cannot lead one.
func utf8SeqLen(b byte) int {
	switch {
	case b < 0x80:
		return 1
	case b&0xE0 == 0xC0:
		return 2
	case b&0xF0 == 0xE0:
		return 3
	case b&0xF8 == 0xF0:
		return 4
	}
	return 0
}
