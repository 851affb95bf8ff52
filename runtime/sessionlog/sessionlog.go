// Package sessionlog writes and reads a session's log: JSONL, append-only,
// mode 0600, one event a line, every string redacted before it is written.
package sessionlog

import (
	"bufio"
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/chockhq/chock/runtime/redact"
)

// Field is one key and value of an event, in the order written.
type Field struct {
	Key   string
	Value any
}

// F makes a Field.
func F(key string, value any) Field { return Field{key, value} }

// DefaultDir is $CHOCK_STATE_DIR, or $XDG_STATE_HOME/chock, or
// ~/.local/state/chock; sessions go in its sessions folder.
func DefaultDir() (string, error) {
	if d := os.Getenv("CHOCK_STATE_DIR"); d != "" {
		return filepath.Join(d, "sessions"), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "chock", "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no home directory for the session log: %w", err)
	}
	return filepath.Join(home, ".local", "state", "chock", "sessions"), nil
}

// Log is one session's log file.
type Log struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	redact *redact.Set
	now    func() time.Time
	buf    []byte // the line being written, reused

	// Path is the file's path.
	Path string
}

// Create makes the log of session id in dir (created 0700), refusing to
// reuse a file. Strings in events are redacted with set.
func Create(dir, id string, set *redact.Set) (*Log, error) {
	return open(dir, id, set, os.O_EXCL)
}

// Append opens the log of session id in dir (created 0700) to append to
// it, making it when it is not there: for a session whose events come
// from several processes (chock hook, once per tool call). A link is
// refused.
func Append(dir, id string, set *redact.Set) (*Log, error) {
	if strings.HasPrefix(id, ".") {
		return nil, fmt.Errorf("invalid session id %q", id)
	}
	return open(dir, id, set, syscall.O_NOFOLLOW)
}

// open opens the log of session id in dir for appending, with flag.
func open(dir, id string, set *redact.Set, flag int) (*Log, error) {
	if strings.ContainsAny(id, `/\`) || id == "" || id == "." || id == ".." {
		return nil, fmt.Errorf("invalid session id %q", id)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, id+".jsonl")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND|flag, 0o600)
	if err != nil {
		return nil, err
	}
	return &Log{f: f, w: bufio.NewWriter(f), redact: set, now: time.Now, Path: p}, nil
}

// Event appends one event: {"kind": kind, fields...}. With stamp, a "time"
// field follows the kind. Strings are redacted, also inside lists and maps.
// The line is written out by hand, as encoding/json writes the same values
// (a test holds the two to each other), into a buffer the log keeps: an
// event costs no reflection, and no allocation for the values a session
// logs (strings, numbers, bools, lists of strings, errors).
func (l *Log) Event(kind string, stamp bool, fields ...Field) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return errors.New("the session log is closed")
	}
	b := append(l.buf[:0], `{"kind":`...)
	b = appendString(b, kind)
	if stamp {
		b = append(b, `,"time":"`...)
		b = l.now().UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	for _, f := range fields {
		b = append(b, ',')
		b = appendString(b, f.Key)
		b = append(b, ':')
		b = l.appendValue(b, f.Value)
	}
	b = append(b, "}\n"...)
	l.buf = b
	line := b
	if l.redact != nil && l.redact.Len() > 0 {
		line, _ = l.redact.Redacted(line) // belt and braces: values inside JSON escapes are caught above
	}
	if _, err := l.w.Write(line); err != nil {
		return err
	}
	switch kind {
	case "decision", "tool.call", "secret.used", "ask":
		// Flushed with the call's result, or by Flush before its action runs.
		return nil
	case "mcp.request":
		// An exchange with a server is logged once it is over: flushed
		// with what follows it (the call's result, the server's start),
		// one write for the two.
		return nil
	}
	return l.w.Flush()
}

// Flush writes buffered events to the file.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return nil
	}
	return l.w.Flush()
}

// str is s redacted.
func (l *Log) str(s string) string {
	if l.redact == nil || l.redact.Len() == 0 {
		return s
	}
	return l.redact.String(s)
}

// appendValue appends v as JSON, as encoding/json writes it, every string
// in it redacted.
func (l *Log) appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return appendString(b, l.str(x))
	case bool:
		return strconv.AppendBool(b, x)
	case int, int8, int16, int32, int64, time.Duration:
		return strconv.AppendInt(b, reflect.ValueOf(x).Int(), 10)
	case uint, uint8, uint16, uint32, uint64:
		return strconv.AppendUint(b, reflect.ValueOf(x).Uint(), 10)
	case float64:
		return appendFloat(b, x, 64)
	case float32:
		return appendFloat(b, float64(x), 32)
	case error:
		return appendString(b, l.str(x.Error()))
	case []string:
		return appendList(b, x, func(b []byte, e string) []byte { return appendString(b, l.str(e)) })
	case []any:
		return appendList(b, x, l.appendValue)
	case map[string]any:
		return appendMap(b, x, l.appendValue)
	case map[string]string:
		return appendMap(b, x, func(b []byte, v string) []byte { return appendString(b, l.str(v)) })
	case encoding.TextMarshaler:
		t, err := x.MarshalText()
		if err != nil {
			return append(b, "null"...)
		}
		return appendString(b, l.str(string(t)))
	}
	// A type of value no event has yet: encoding/json, through a JSON
	// round trip, so its strings are redacted too.
	raw, err := json.Marshal(v)
	if err != nil {
		return append(b, "null"...)
	}
	var plain any
	if json.Unmarshal(raw, &plain) != nil {
		return append(b, "null"...)
	}
	return l.appendValue(b, plain)
}

// appendFloat writes f as encoding/json does; NaN and the infinities,
// which JSON has not, as null.
func appendFloat(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString writes s as a JSON string, as encoding/json does without
// HTML escaping; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == 0x2028 || r == 0x2029 {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Close flushes and closes the file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return nil
	}
	err := errors.Join(l.w.Flush(), l.f.Sync(), l.f.Close())
	l.w = nil
	return err
}

// Info summarises one session's log.
type Info struct {
	ID       string
	Start    time.Time
	Revision string
	Events   int
	Ended    bool
}

// List returns the sessions in dir, oldest first.
func List(dir string) ([]Info, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		id := strings.TrimSuffix(e.Name(), ".jsonl")
		evs, err := Read(dir, id)
		if err != nil {
			continue
		}
		info := Info{ID: id, Events: len(evs)}
		for _, ev := range evs {
			switch ev["kind"] {
			case "session.start":
				if t, ok := ev["time"].(string); ok {
					info.Start, _ = time.Parse(time.RFC3339Nano, t)
				}
				info.Revision, _ = ev["policy"].(string)
			case "session.end":
				info.Ended = true
			}
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.Before(out[j].Start)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Event is one decoded line.
type Event = map[string]any

// Read returns the events of session id in dir.
func Read(dir, id string) ([]Event, error) {
	lines, err := ReadLines(dir, id)
	if err != nil {
		return nil, err
	}
	out := make([]Event, 0, len(lines))
	for i, ln := range lines {
		var ev Event
		d := json.NewDecoder(bytes.NewReader(ln))
		d.UseNumber()
		if err := d.Decode(&ev); err != nil {
			return nil, fmt.Errorf("%s line %d: not an event", id, i+1)
		}
		out = append(out, ev)
	}
	return out, nil
}

// ReadLines returns the raw lines of session id's log.
func ReadLines(dir, id string) ([][]byte, error) {
	if strings.ContainsAny(id, `/\`) || id == "" || id == "." || id == ".." {
		return nil, fmt.Errorf("invalid session id %q", id)
	}
	b, err := os.ReadFile(filepath.Join(dir, id+".jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no session %q", id)
	}
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, ln := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(ln)) > 0 {
			out = append(out, ln)
		}
	}
	return out, nil
}

// appendMap writes m as a JSON object, keys sorted as encoding/json sorts
// them, each value by val.
func appendMap[V any](b []byte, m map[string]V, val func([]byte, V) []byte) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = val(b, m[k])
	}
	return append(b, '}')
}

// appendList writes a list as JSON, each element by one; nil is null.
func appendList[T any](b []byte, x []T, one func([]byte, T) []byte) []byte {
	if x == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, e := range x {
		if i > 0 {
			b = append(b, ',')
		}
		b = one(b, e)
	}
	return append(b, ']')
}
