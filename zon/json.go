package zon

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSON renders v with chock's convention: struct → object (field
// order kept), tuple → array, empty → {}, string → string (or
// {"bytes_hex":…} when not UTF-8), enum → {"enum": name}, char →
// {"char": n}, integer → number when it fits in int64 else a decimal
// string, float → number with a '.' or exponent, or "nan", "inf", "-inf".
func JSON(v *Value) []byte {
	var b strings.Builder
	writeJSON(&b, v, false)
	return []byte(b.String())
}

// TaggedJSON renders v losslessly: {"struct":[["name",v],…]}, {"tuple":[…]},
// {"empty":true}, {"int":"<decimal>"}, {"float":"<shortest repr>"},
// {"char":n}, {"enum":s}, {"string":s} or {"bytes_hex":h}, true, false, null.
func TaggedJSON(v *Value) []byte {
	var b strings.Builder
	writeJSON(&b, v, true)
	return []byte(b.String())
}

func writeJSON(b *strings.Builder, v *Value, tagged bool) {
	switch v.Kind {
	case KindStruct:
		if tagged {
			b.WriteString(`{"struct":[`)
			for i, f := range v.Fields {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteByte('[')
				writeJSONString(b, f.Name)
				b.WriteByte(',')
				writeJSON(b, f.Value, tagged)
				b.WriteByte(']')
			}
			b.WriteString("]}")
			return
		}
		b.WriteByte('{')
		for i, f := range v.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, f.Name)
			b.WriteByte(':')
			writeJSON(b, f.Value, tagged)
		}
		b.WriteByte('}')
	case KindTuple:
		if tagged {
			b.WriteString(`{"tuple":`)
		}
		b.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e, tagged)
		}
		b.WriteByte(']')
		if tagged {
			b.WriteByte('}')
		}
	case KindEmpty:
		if tagged {
			b.WriteString(`{"empty":true}`)
		} else {
			b.WriteString("{}")
		}
	case KindString:
		switch {
		case !utf8.ValidString(v.Str):
			b.WriteString(`{"bytes_hex":"`)
			b.WriteString(hex.EncodeToString([]byte(v.Str)))
			b.WriteString(`"}`)
		case tagged:
			b.WriteString(`{"string":`)
			writeJSONString(b, v.Str)
			b.WriteByte('}')
		default:
			writeJSONString(b, v.Str)
		}
	case KindEnum:
		if !utf8.ValidString(v.Str) {
			b.WriteString(`{"enum_bytes_hex":"`)
			b.WriteString(hex.EncodeToString([]byte(v.Str)))
			b.WriteString(`"}`)
			return
		}
		b.WriteString(`{"enum":`)
		writeJSONString(b, v.Str)
		b.WriteByte('}')
	case KindChar:
		b.WriteString(`{"char":`)
		b.WriteString(strconv.FormatInt(v.Int, 10))
		b.WriteByte('}')
	case KindInt:
		s := strconv.FormatInt(v.Int, 10)
		if v.Big != nil {
			s = v.Big.String()
		}
		switch {
		case tagged:
			b.WriteString(`{"int":"`)
			b.WriteString(s)
			b.WriteString(`"}`)
		case v.Big != nil:
			b.WriteByte('"')
			b.WriteString(s)
			b.WriteByte('"')
		default:
			b.WriteString(s)
		}
	case KindFloat:
		s := FormatFloat(v.Float)
		finite := !math.IsNaN(v.Float) && !math.IsInf(v.Float, 0)
		if tagged {
			b.WriteString(`{"float":"`)
			b.WriteString(s)
			b.WriteString(`"}`)
		} else if finite {
			b.WriteString(s)
		} else {
			b.WriteByte('"')
			b.WriteString(s)
			b.WriteByte('"')
		}
	case KindBool:
		if v.Bool {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case KindNull:
		b.WriteString("null")
	}
}

// FormatFloat writes f as the shortest decimal that reads back as f, always
// with a '.' or an exponent (Python's repr: 5.0, 1e-05, 1.23e+79, -0.0),
// or nan, inf, -inf.
func FormatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	i := strings.LastIndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[i+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

const hexDigits = "0123456789abcdef"

// writeJSONString writes s (valid UTF-8) as a JSON string, escaping only
// what JSON requires.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b.WriteString(s[start:i])
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		}
		start = i + 1
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}
