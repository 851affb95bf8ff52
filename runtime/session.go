// Package runtime runs agent sessions under a compiled policy: every
// brokered action passes one interceptor chain — audit, time limit,
// policy, secrets, redaction, the action — secrets are injected into the
// one call that may hold them and redacted from everything written, and
// every decision and exchange goes to the session log (SPEC §7–9).
package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/credstore"
	"github.com/chockhq/chock/runtime/netguard"
	"github.com/chockhq/chock/runtime/redact"
	"github.com/chockhq/chock/runtime/sessionlog"
)

// Options configure a session.
type Options struct {
	Engine *eval.Engine
	// Config is the project's chock.zon, when the session was built from
	// sources; explanations then carry concrete hints.
	Config *config.Config
	Store  credstore.Store
	// Asker answers ask decisions; nil refuses every ask.
	Asker Asker
	// LogDir is where the session log goes (sessionlog.DefaultDir by default).
	LogDir string
	// CallTimeout bounds a call that names no time limit (default 60 s).
	CallTimeout time.Duration
	// TempDir is where file-bound secrets are written (os.TempDir by default).
	TempDir string
	// BaseEnv is the environment every call starts from (a minimal one
	// taken from this process by default); secrets are added to it.
	BaseEnv []string
	// Net checks the addresses fetch_url and remote MCP servers reach (the
	// production checker by default).
	Net *netguard.Checker
	// MCP tunes how MCP servers are reached.
	MCP MCPOptions
}

// Session is one agent session: a policy, a credential store, a log.
type Session struct {
	ID     string
	opts   Options
	log    *sessionlog.Log
	redact *redact.Set
	chain  Handler
	seq    atomic.Int64

	mu         sync.Mutex
	background []*os.Process
	servers    map[string]*server
	closed     bool
}

// MaxSlots is how many secrets one call may hold: a call granted more is
// refused rather than run with values that cannot all be redacted.
const MaxSlots = 8

// New starts a session: it sweeps file-bound secrets a crashed session
// left behind, opens the log and writes session.start.
func New(ctx context.Context, o Options) (*Session, error) {
	if o.Engine == nil {
		return nil, errors.New("runtime: a session needs an engine")
	}
	if o.Asker == nil {
		o.Asker = DenyAsker{}
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 60 * time.Second
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if o.BaseEnv == nil {
		o.BaseEnv = MinimalEnv(os.Environ())
	}
	if o.LogDir == "" {
		d, err := sessionlog.DefaultDir()
		if err != nil {
			return nil, err
		}
		o.LogDir = d
	}
	SweepSecretFiles(o.TempDir)
	s := &Session{ID: newID(), opts: o, redact: &redact.Set{}, servers: map[string]*server{}}
	l, err := sessionlog.Create(o.LogDir, s.ID, s.redact)
	if err != nil {
		return nil, fmt.Errorf("opening the session log: %w", err)
	}
	s.log = l
	store := ""
	if o.Store != nil {
		store = o.Store.Name()
	}
	cfgFile := ""
	if o.Config != nil {
		cfgFile = o.Config.File
	}
	if err := s.log.Event("session.start", true, sessionlog.F("session", s.ID), sessionlog.F("policy", o.Engine.Revision()),
		sessionlog.F("config", cfgFile), sessionlog.F("store", store)); err != nil {
		l.Close()
		return nil, err
	}
	s.chain = Chain(s.perform, s.audit, s.timeLimit, s.policy, s.secrets, s.redaction)
	return s, nil
}

func newID() string {
	var b [4]byte
	rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// LogPath is the session log's file.
func (s *Session) LogPath() string { return s.log.Path }

// Redactor is the session's set of held values.
func (s *Session) Redactor() *redact.Set { return s.redact }

// Close ends the session: background commands and MCP servers are stopped, the log gets
// session.end and is closed.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	bg := s.background
	s.mu.Unlock()
	for _, p := range bg {
		killGroup(p.Pid)
	}
	s.closeServers()
	err := s.log.Event("session.end", true, sessionlog.F("session", s.ID), sessionlog.F("calls", s.seq.Load()))
	return errors.Join(err, s.log.Close())
}

// event writes a log event; a failure to log is reported on the call.
func (s *Session) event(kind string, fields ...sessionlog.Field) error {
	return s.log.Event(kind, true, fields...)
}
