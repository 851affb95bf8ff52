package fleet

import (
	"fmt"
	"io"
	"sync"

	"github.com/open-policy-agent/opa/v1/logging"
)

// lineLogger is OPA's logger for a person: one line per message at Error
// and Warn ("opa: bundle plugin: ..."), nothing below, and the plugin's
// name when OPA gives one.
type lineLogger struct {
	mu     *sync.Mutex
	w      io.Writer
	plugin string
	// last is the last error printed, shared by every copy.
	last *string
}

func newLineLogger(w io.Writer) *lineLogger {
	return &lineLogger{mu: &sync.Mutex{}, w: w, last: new(string)}
}

// lastError is the last error OPA reported, with its plugin.
func (l *lineLogger) lastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return *l.last
}

func (l *lineLogger) print(level, format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prefix := "opa: "
	if l.plugin != "" {
		prefix += l.plugin + " plugin: "
	}
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(l.w, "%s%s%s\n", prefix, level, msg)
	if level == "" {
		*l.last = prefix + msg
	}
}

func (l *lineLogger) Debug(string, ...any) {}
func (l *lineLogger) Info(string, ...any)  {}
func (l *lineLogger) Error(format string, a ...any) {
	l.print("", format, a...)
}
func (l *lineLogger) Warn(format string, a ...any) {
	l.print("warning: ", format, a...)
}

// WithFields keeps the plugin's name; OPA's other fields are for machines.
func (l *lineLogger) WithFields(f map[string]any) logging.Logger {
	c := *l
	if p, ok := f["plugin"].(string); ok {
		c.plugin = p
	} else if n, ok := f["name"].(string); ok && c.plugin == "" {
		c.plugin = n
	}
	return &c
}

func (l *lineLogger) GetLevel() logging.Level { return logging.Warn }
func (l *lineLogger) SetLevel(logging.Level)  {}
