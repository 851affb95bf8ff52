// Package sessionlog writes and reads a session's log: JSONL, append-only,
// mode 0600, one event a line, every string redacted before it is written.
package sessionlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

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
	// Path is the file's path.
	Path string
}

// Create makes the log of session id in dir (created 0700), refusing to
// reuse a file. Strings in events are redacted with set.
func Create(dir, id string, set *redact.Set) (*Log, error) {
	if strings.ContainsAny(id, `/\`) || id == "" || id == "." || id == ".." {
		return nil, fmt.Errorf("invalid session id %q", id)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := filepath.Join(dir, id+".jsonl")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &Log{f: f, w: bufio.NewWriter(f), redact: set, now: time.Now, Path: p}, nil
}

// Event appends one event: {"kind": kind, fields...}. With stamp, a "time"
// field follows the kind. Strings are redacted, also inside lists and maps.
func (l *Log) Event(kind string, stamp bool, fields ...Field) error {
	var b bytes.Buffer
	b.WriteString(`{"kind":`)
	writeJSON(&b, kind)
	if stamp {
		b.WriteString(`,"time":`)
		writeJSON(&b, l.now().UTC().Format(time.RFC3339Nano))
	}
	for _, f := range fields {
		b.WriteByte(',')
		writeJSON(&b, f.Key)
		b.WriteByte(':')
		writeJSON(&b, l.clean(f.Value))
	}
	b.WriteString("}\n")
	line := b.Bytes()
	if l.redact != nil && l.redact.Len() > 0 {
		line = l.redact.Bytes(line) // belt and braces: values inside JSON escapes are caught above
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return errors.New("the session log is closed")
	}
	if _, err := l.w.Write(line); err != nil {
		return err
	}
	switch kind {
	case "decision", "tool.call", "secret.used", "ask":
		// Flushed with the call's result, or by Flush before its action runs.
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

// clean redacts every string in v.
func (l *Log) clean(v any) any {
	if l.redact == nil || l.redact.Len() == 0 {
		return v
	}
	switch x := v.(type) {
	case string:
		return l.redact.String(x)
	case []string:
		out := make([]string, len(x))
		for i, s := range x {
			out[i] = l.redact.String(s)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = l.clean(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = l.clean(e)
		}
		return out
	case error:
		return l.redact.String(x.Error())
	}
	return v
}

func writeJSON(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case string:
		writeString(b, x)
		return
	case bool:
		b.WriteString(strconv.FormatBool(x))
		return
	case int:
		b.WriteString(strconv.Itoa(x))
		return
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
		return
	case []string:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, e)
		}
		b.WriteByte(']')
		return
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		b.WriteString(`null`)
		return
	}
	b.Truncate(b.Len() - 1) // Encode's newline
}

// writeString writes s as a JSON string; invalid UTF-8 becomes U+FFFD,
// as encoding/json writes it.
func writeString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hex[(r>>uint(shift))&0xf])
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
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
