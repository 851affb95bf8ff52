// Package redact replaces secret values with [secret:NAME] in everything a
// session writes, as a stream: a value split across two writes is still
// caught, because the last len(longest value)-1 bytes are held back until
// the next write (or Close) shows how they continue.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/chockhq/chock/compile/action"
)

// Set is the values a session holds, each with its name. It is safe for
// concurrent use; writers made from it see values added later.
type Set struct {
	mu     sync.RWMutex
	values []entry
	maxLen int
	// anchors cover every value, for the texts chock writes (String,
	// Bytes, Redacted); stream's cover the values a stream is searched
	// for (Writer): all but the text-only forms.
	anchors, stream []anchor
}

type entry struct {
	value []byte
	repl  []byte
	slot  string // who holds it: a call or a server
	// textOnly is a form only chock makes, in the texts it writes (the
	// lower-cased value of a host it normalised into an action): a
	// program's output is not searched for it.
	textOnly bool
}

// anchor is a byte searched for with bytes.IndexByte (vectorised); each
// value is assigned one anchor byte it contains, at offset off.
type anchor struct {
	b    byte
	hits []anchorHit
}

type anchorHit struct {
	entry int // index into values
	off   int // where the anchor byte sits in the value
}

// commonness ranks bytes by how often they occur in ordinary text output,
// so that anchors are the rare bytes of each value.
func commonness(c byte) int {
	switch {
	case c == ' ' || c == 'e' || c == 't' || c == 'a' || c == 'o' || c == 'i' || c == 'n' || c == 's' || c == 'r':
		return 100
	case c >= 'a' && c <= 'z':
		return 50
	case c == '\n' || c == '.' || c == ',' || c == '"' || c == '/' || c == '-' || c == '_' || c == ':' || c == '=':
		return 30
	case c >= '0' && c <= '9':
		return 8
	case c >= 'A' && c <= 'Z':
		return 6
	case c < 0x20 || c >= 0x7f:
		return 2
	}
	return 10
}

// Add makes value redacted as [secret:name] until Remove(slot) drops it,
// in its exact form and in each encoded form a program or a server may
// print it in (see Forms). Values shorter than action.MinSecretLen are not
// added (a one-letter "secret" would match everywhere and protect
// nothing), and Add reports false. Adding a value the set holds under
// the same name again changes nothing.
func (s *Set) Add(slot, name, value string) bool {
	if len(value) < action.MinSecretLen {
		return false
	}
	repl := []byte("[secret:" + name + "]")
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.values {
		if string(e.value) == value && bytes.Equal(e.repl, repl) {
			return true
		}
	}
	lower := strings.ToLower(value)
	for _, f := range Forms(value) {
		s.values = append(s.values, entry{value: []byte(f), repl: repl, slot: slot, textOnly: f == lower && f != value})
	}
	// Longest first, so that a value containing another is replaced whole.
	sort.SliceStable(s.values, func(i, j int) bool { return len(s.values[i].value) > len(s.values[j].value) })
	s.reindex()
	return true
}

// percentEncode escapes every byte of s as %XX but the unreserved ones of
// RFC 3986 and those in keep.
func percentEncode(s, keep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 || strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// Forms are the forms a value is masked in: the value itself; its
// standard and URL-safe base64 at each of the three alignments it can
// take inside a longer encoded text (only the characters that depend on
// the value alone); its lower-case form; and its JSON-, URI- and
// XML-escaped forms as several languages write them. (GitHub's runner
// masks much the same set; hex, reversed and split forms are not.)
// Forms shorter than action.MinSecretLen are left out.
func Forms(value string) []string {
	out := []string{value}
	seen := map[string]bool{value: true}
	add := func(f string) {
		if len(f) >= action.MinSecretLen && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	for shift := 0; shift < 3; shift++ {
		b := append(make([]byte, shift), value...)
		first := (shift*8 + 5) / 6           // the first character of value's bits only
		last := (shift + len(value)) * 8 / 6 // past the last such character
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			e := enc.EncodeToString(b)
			if first < last && last <= len(e) {
				add(e[first:last])
			}
		}
	}
	// Lower case, as a host name is normalised (an agent's URL becomes the
	// action net.fetch.<host>, lower-cased, and a refusal quotes it).
	add(strings.ToLower(value))
	var j bytes.Buffer
	je := json.NewEncoder(&j)
	je.SetEscapeHTML(false)
	if je.Encode(value) == nil {
		q := strings.TrimSuffix(j.String(), "\n")
		add(q[1 : len(q)-1])
	}
	if h, err := json.Marshal(value); err == nil {
		add(string(h[1 : len(h)-1]))
	}
	add(url.QueryEscape(value))
	add(url.PathEscape(value))
	// Percent-encoding as other languages do it: RFC 3986's unreserved set
	// alone; with '/' kept (Python's quote); encodeURIComponent's; and
	// encodeURI's.
	for _, keep := range []string{"", "/", "!'()*", "!'()*;,/?:@&=+$#"} {
		add(percentEncode(value, keep))
	}
	// XML and HTML escaping: named, decimal and hex entities for the
	// quotes, or the quotes left as they are (only & < > escaped).
	for _, q := range [][2]string{{"&quot;", "&apos;"}, {"&#34;", "&#39;"}, {"&#x22;", "&#x27;"}, {`"`, "'"}} {
		r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, q[0], "'", q[1])
		add(r.Replace(value))
	}
	var x bytes.Buffer
	xml.EscapeText(&x, []byte(value))
	add(x.String())
	add(html.EscapeString(value))
	return out
}

// Remove drops the values held by slot (a call's slot when it ends).
func (s *Set) Remove(slot string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.values[:0]
	for _, e := range s.values {
		if e.slot != slot {
			out = append(out, e)
		}
	}
	s.values = out
	s.reindex()
}

// reindex chooses the anchors of every value, and of the values a
// stream is searched for.
func (s *Set) reindex() {
	s.maxLen = 0
	for _, e := range s.values {
		s.maxLen = max(s.maxLen, len(e.value))
	}
	s.anchors = chooseAnchors(s.anchors[:0], s.values, func(entry) bool { return true })
	s.stream = chooseAnchors(s.stream[:0], s.values, func(e entry) bool { return !e.textOnly })
}

// chooseAnchors chooses anchors for the values in: greedily, the byte
// that covers the most values still uncovered per unit of commonness,
// until every value has one.
func chooseAnchors(anchors []anchor, values []entry, in func(entry) bool) []anchor {
	covered := make([]bool, len(values))
	left := 0
	for i, e := range values {
		if in(e) {
			left++
		} else {
			covered[i] = true
		}
	}
	for left > 0 {
		var count [256]int
		for i, e := range values {
			if covered[i] {
				continue
			}
			var seen [256]bool
			for _, c := range e.value {
				if !seen[c] {
					seen[c] = true
					count[c]++
				}
			}
		}
		best, bestScore := -1, 0.0
		for c := 0; c < 256; c++ {
			if count[c] == 0 {
				continue
			}
			score := float64(count[c]) / float64(commonness(byte(c)))
			if best < 0 || score > bestScore {
				best, bestScore = c, score
			}
		}
		a := anchor{b: byte(best)}
		for i, e := range values {
			if covered[i] {
				continue
			}
			if off := bytes.IndexByte(e.value, byte(best)); off >= 0 {
				a.hits = append(a.hits, anchorHit{entry: i, off: off})
				covered[i] = true
				left--
			}
		}
		anchors = append(anchors, a)
	}
	return anchors
}

// Len is the number of values held.
func (s *Set) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.values)
}

// Bytes redacts a whole buffer.
func (s *Set) Bytes(b []byte) []byte {
	out, changed := s.redacted(b)
	if !changed && len(b) > 0 {
		return append([]byte(nil), b...)
	}
	return out
}

// Redacted is Bytes, and says whether anything was redacted; when nothing
// was, it returns b itself, so a clean text costs no copy.
func (s *Set) Redacted(b []byte) ([]byte, bool) {
	out, changed := s.redacted(b)
	if !changed {
		return b, false
	}
	return out, true
}

// redacted returns b redacted and whether it differs from b; when it does
// not, the slice returned is nil.
func (s *Set) redacted(b []byte) ([]byte, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out, first []byte
	pieces := 0
	s.scan(s.anchors, b, len(b), func(p []byte) {
		switch pieces++; pieces {
		case 1:
			first = p
			return
		case 2:
			out = append(make([]byte, 0, len(b)+len(p)), first...)
		}
		out = append(out, p...)
	})
	if pieces > 1 {
		return out, true
	}
	// One piece: b itself untouched, or the one value it is, replaced.
	if len(first) == len(b) && (len(b) == 0 || &first[0] == &b[0]) {
		return nil, false
	}
	return append([]byte(nil), first...), true
}

// String redacts a whole string. A string holding no value is returned as
// it is, without a copy.
func (s *Set) String(str string) string {
	if str == "" {
		return str
	}
	b := unsafe.Slice(unsafe.StringData(str), len(str)) // only read
	out, changed := s.redacted(b)
	if !changed {
		return str
	}
	return string(out)
}

// scan finds the values in b that start before limit (a match may run
// past limit into b) and passes the redacted text to emit, in pieces that
// are slices of b or replacements. It returns how many bytes of b it
// consumed: limit, or more when a match ran past it.
//
// Each anchor byte is found with bytes.IndexByte; around every hit the
// values assigned to that anchor are compared in place. Overlapping
// matches resolve left to right, the longer first at the same start.
func (s *Set) scan(anchors []anchor, b []byte, limit int, emit func([]byte)) int {
	var ms []match
	check := func(a *anchor, pos int) {
		for _, h := range a.hits {
			start := pos - h.off
			v := s.values[h.entry].value
			if start >= 0 && start < limit && start+len(v) <= len(b) && b[start] == v[0] && bytes.Equal(b[start:start+len(v)], v) {
				ms = append(ms, match{start: start, end: start + len(v), entry: h.entry})
			}
		}
	}
	{
		for ai := range anchors {
			a := &anchors[ai]
			for i := 0; i < len(b); {
				k := bytes.IndexByte(b[i:], a.b)
				if k < 0 {
					break
				}
				check(a, i+k)
				i += k + 1
			}
		}
	}
	if len(ms) > 1 {
		sort.Slice(ms, func(i, j int) bool {
			if ms[i].start != ms[j].start {
				return ms[i].start < ms[j].start
			}
			return ms[i].end > ms[j].end
		})
	}
	start := 0
	for _, m := range ms {
		if m.start < start {
			continue // inside an earlier match
		}
		if m.start > start {
			emit(b[start:m.start])
		}
		emit(s.values[m.entry].repl)
		start = m.end
	}
	end := max(limit, start)
	if end > start {
		emit(b[start:end])
	}
	return end
}

// match is a value found at start.
type match struct {
	start, end int
	entry      int
}

// Writer redacts everything written through it into w: a program's or a
// server's output, searched for every form but the ones only chock makes
// (the lower-cased value, which Set.String masks in chock's own texts). It holds back at
// most the longest value's length less one byte between writes.
type Writer struct {
	set     *Set
	w       io.Writer
	pending []byte
	joint   []byte
	err     error
}

// NewWriter returns a writer that redacts set's values into w. Close (or
// Flush) writes what is held back.
func NewWriter(w io.Writer, set *Set) *Writer {
	return &Writer{set: set, w: w}
}

func (rw *Writer) emit(b []byte) {
	if rw.err == nil {
		_, rw.err = rw.w.Write(b)
	}
}

// Write redacts p. Matches that start in the held-back tail are resolved
// on a small joint buffer; the rest of p is scanned in place and written
// through without copying.
func (rw *Writer) Write(p []byte) (int, error) {
	if rw.err != nil {
		return 0, rw.err
	}
	rw.set.mu.RLock()
	defer rw.set.mu.RUnlock()
	hold := max(rw.set.maxLen-1, 0)
	rest := p
	if len(rw.pending) > 0 {
		// Resolve everything starting in the held tail: join it with
		// enough of p for a value starting there to end.
		n := min(len(p), hold)
		rw.joint = append(append(rw.joint[:0], rw.pending...), p[:n]...)
		// Only positions with hold bytes after them can be decided now.
		decidable := len(rw.joint) - hold
		if decidable <= 0 {
			rw.pending = append(rw.pending[:0], rw.joint...)
			return len(p), rw.err
		}
		used := rw.set.scan(rw.set.stream, rw.joint, min(len(rw.pending), decidable), rw.emit)
		if used < len(rw.pending) {
			// p was shorter than hold and is all in joint: keep the rest.
			rw.pending = append(rw.pending[:0], rw.joint[used:]...)
			return len(p), rw.err
		}
		rest = p[used-len(rw.pending):]
		rw.pending = rw.pending[:0]
	}
	limit := len(rest) - hold
	if limit <= 0 {
		rw.pending = append(rw.pending, rest...)
		return len(p), rw.err
	}
	used := rw.set.scan(rw.set.stream, rest, limit, rw.emit)
	rw.pending = append(rw.pending, rest[used:]...)
	if rw.err != nil {
		return 0, rw.err
	}
	return len(p), nil
}

// Flush redacts and writes what is held back. Call it when the stream ends.
func (rw *Writer) Flush() error {
	if rw.err != nil {
		return rw.err
	}
	rw.set.mu.RLock()
	rw.set.scan(rw.set.stream, rw.pending, len(rw.pending), rw.emit)
	rw.set.mu.RUnlock()
	rw.pending = rw.pending[:0]
	return rw.err
}

// Close flushes.
func (rw *Writer) Close() error { return rw.Flush() }
