// Package runtime runs agent sessions under a compiled policy: every
// brokered action passes one interceptor chain — audit, time limit,
// policy, secrets, redaction, the action — secrets are injected into the
// one call that may hold them and redacted from everything written, and
// every decision and exchange goes to the session log.
package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/credstore"
	"github.com/chockhq/chock/runtime/egress"
	"github.com/chockhq/chock/runtime/mcpconn"
	"github.com/chockhq/chock/runtime/netguard"
	"github.com/chockhq/chock/runtime/redact"
	"github.com/chockhq/chock/runtime/sandbox"
	"github.com/chockhq/chock/runtime/sessionlog"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sys/unix"
)

// envValue is the value of key in env (the last one set), or "".
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// Options configure a session.
type Options struct {
	Engine *eval.Engine
	// Prescan, when its PATH is the session's, is the scan of the PATH's
	// programs started earlier (StartPrescan), beside loading the policy.
	Prescan *Prescan
	// Config is the project's chock.zon, when the session was built from
	// sources; explanations then carry concrete hints.
	Config *config.Config
	Store  credstore.Store
	// Asker answers ask decisions; nil refuses every ask.
	Asker Asker
	// LogDir is where the session log goes (sessionlog.DefaultDir by default).
	LogDir string
	// CallTimeout bounds a program or fetch_url call that names no time
	// limit (default mcpconn.CallTimeout, 60 s a call); an MCP
	// tool call has MCP.CallTimeout.
	CallTimeout time.Duration
	// TempDir is where file-bound secrets are written (os.TempDir by default).
	TempDir string
	// BaseEnv is the environment every call starts from (a minimal one
	// taken from this process by default); secrets are added to it.
	BaseEnv []string
	// Net checks the addresses fetch_url and remote MCP servers reach (the
	// production checker by default).
	Net *netguard.Checker
	// Resolver resolves the names a call's programs connect to through
	// the egress proxy: the system's resolver by default. Only tests set
	// it.
	Resolver egress.Resolver
	// MCP tunes how MCP servers are reached.
	MCP MCPOptions
	// NoSandbox runs exec calls without a sandbox (--no-sandbox): for a
	// person who says so; session.start records it.
	NoSandbox bool
	// SandboxInit is the binary that makes sandboxes (chock-sandbox beside
	// this executable, else this executable, by default).
	SandboxInit string
	// Writable are folders calls may write besides the working directory
	// and the temporary folders (--writable); everything else is
	// read-only inside a call.
	Writable []string
	// Protect are the policy's own files (chock.zon, the org files, the
	// bundle): read-only inside every call, wherever they are.
	Protect []string
	// Scratch are the temporary folders calls may write (TempDir, /tmp,
	// /var/tmp and /dev/shm by default).
	Scratch []string
	// Client is the agent client the session serves (claude-code, …),
	// when known: an attribute of the session's span.
	Client string
}

// Session is one agent session: a policy, a credential store, a log.
type Session struct {
	ID     string
	opts   Options
	log    *sessionlog.Log
	redact *redact.Set
	chain  Handler
	seq    atomic.Int64
	// revision is the policy revision of the last decision logged.
	revision atomic.Pointer[string]

	mu         sync.Mutex
	background []*os.Process
	// running are the process groups of calls under way, and files the
	// file-bound secrets written for them: what Abort must reach at once.
	running map[int]bool
	files   map[string]bool
	servers map[string]*server
	closed  bool

	// programs is the session's PATH, resolved when it started.
	programs   *sandbox.Programs
	execRights rightsCache
	// holders are the placeholder folders the running calls' file rules
	// use (files.go).
	holders placeholders
	// walks keeps what the file rules' globs found, folder by folder.
	walks    walkCache
	initPath string
	// initID is the init binary's identity when the session started: a
	// replaced init is refused, not run.
	initID sandbox.FileID
	// hidden are the paths no call sees (the credential store, the logs,
	// the keyring's bus); pinned are read-only in every call (the folders
	// of chock's own binaries, the policy's files); writable are the only
	// folders a call may write.
	hidden, pinned, writable []string
	// pinIDs are the hidden and pinned paths' identities when the session
	// started.
	pinIDs map[string]sandbox.Inode
	// private are the session's own temporary folders, bound over /tmp,
	// /var/tmp and /dev/shm in its calls; privateRoot holds them.
	private     []sandbox.PrivateDir
	privateRoot string
	// wd is the session's working directory: where a call that names no
	// dir runs, and what a relative dir is taken from.
	wd string
	// span is the session's invoke_agent span (a no-op one when export
	// is off).
	span trace.Span
}

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
		o.CallTimeout = mcpconn.CallTimeout
	}
	if o.MCP.CallTimeout <= 0 {
		o.MCP.CallTimeout = mcpconn.CallTimeout
	}
	if o.MCP.DiscoverTimeout <= 0 {
		o.MCP.DiscoverTimeout = mcpconn.DiscoverTimeout
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
	var pins []sandbox.Pin
	for _, p := range o.Engine.Meta().Programs {
		if p.Pinned {
			pins = append(pins, sandbox.Pin{Name: p.Name, Paths: p.Paths})
		}
	}
	programs, err := o.Prescan.programs(envValue(o.BaseEnv, "PATH"), pins)
	if err != nil {
		return nil, fmt.Errorf("resolving the session's PATH: %w", err)
	}
	sandboxState := "on"
	if o.NoSandbox {
		sandboxState = "off (--no-sandbox)"
	} else {
		// No call may read this process's environment or memory through
		// /proc, whatever uid it runs as.
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			return nil, fmt.Errorf("making chock non-dumpable: %w", err)
		}
	}
	s := &Session{ID: newID(), opts: o, redact: &redact.Set{}, servers: map[string]*server{},
		running: map[int]bool{}, files: map[string]bool{}, programs: programs, initPath: initPath(o.SandboxInit)}
	if err := s.guard(o); err != nil {
		return nil, err
	}
	var scopes []sessionlog.Field
	if !o.NoSandbox {
		if err := s.makePrivate(); err != nil {
			return nil, err
		}
		abi, scoped := sandbox.Scopes()
		if scoped == nil {
			scoped = []string{}
		}
		scopes = append(scopes, sessionlog.F("landlock_abi", abi), sessionlog.F("scoped", scoped))
	}
	l, err := sessionlog.Create(o.LogDir, s.ID, s.redact)
	if err != nil {
		s.removePrivate()
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
	start := append([]sessionlog.Field{sessionlog.F("session", s.ID), sessionlog.F("policy", o.Engine.Revision()),
		sessionlog.F("config", cfgFile), sessionlog.F("store", store), sessionlog.F("sandbox", sandboxState)}, scopes...)
	if err := s.log.Event("session.start", true, start...); err != nil {
		l.Close()
		s.removePrivate()
		return nil, err
	}
	s.maskAll(ctx)
	s.startSpan(ctx)
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

// Close ends the session with the reason "done"; see End.
func (s *Session) Close() error { return s.End("done") }

// End ends the session: background commands and MCP servers are stopped,
// and the log gets session.end with the reason and is closed. Calls under
// way are the caller's to cancel first (through their context).
func (s *Session) End(reason string) error {
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
	s.removePrivate()
	s.releaseAll()
	s.endSpan(reason)
	err := s.log.Event("session.end", true, sessionlog.F("session", s.ID), sessionlog.F("calls", s.seq.Load()),
		sessionlog.F("reason", s.redact.String(reason)))
	return errors.Join(err, s.log.Close())
}

// Abort is for a process about to exit at once (a second signal): it
// kills every process group of the session, calls under way and
// background commands alike, and deletes every file-bound secret, without
// waiting for anything. The log is not written.
func (s *Session) Abort() {
	s.releaseAll()
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid := range s.running {
		killGroup(pid)
	}
	for _, p := range s.background {
		killGroup(p.Pid)
	}
	for f := range s.files {
		os.Remove(f)
	}
	s.closeServersNow()
}

// track records a running call's process group, until untrack.
func (s *Session) track(pid int) {
	s.mu.Lock()
	s.running[pid] = true
	s.mu.Unlock()
}

func (s *Session) untrack(pid int) {
	s.mu.Lock()
	delete(s.running, pid)
	s.mu.Unlock()
}

// secretFile writes a file-bound secret for one call and returns its path
// and the function that deletes it; Abort deletes it too.
func (s *Session) secretFile(value string) (string, func(), error) {
	path, remove, err := writeSecretFile(s.opts.TempDir, s.ID, value)
	if err != nil {
		return "", nil, err
	}
	s.mu.Lock()
	s.files[path] = true
	s.mu.Unlock()
	return path, func() {
		remove()
		s.mu.Lock()
		delete(s.files, path)
		s.mu.Unlock()
	}, nil
}

// guard works out what every sandbox hides and keeps read-only: the
// session logs, the file store's folder, the store's own locations, and
// the folders of chock and its init, so that no call can rewrite the
// binary that makes the next call's sandbox. The folders of the logs and
// of the file store are made (0700) when missing: one made later, by
// `chock login` during the session or by the log itself, would not be
// hidden.
func (s *Session) guard(o Options) error {
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	folders := []string{o.LogDir}
	if d, err := credstore.DefaultConfigDir(); err == nil {
		folders = append(folders, d)
	}
	if f, ok := o.Store.(credstore.Foldered); ok {
		folders = append(folders, f.Folder())
	}
	for _, d := range folders {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("making %s, which every call must have hidden: %w", d, err)
		}
	}
	hidden := folders
	if l, ok := o.Store.(credstore.Located); ok {
		hidden = append(hidden, l.Locations()...)
	}
	// The runtime folder holds the person's agents and buses (ssh-agent,
	// gpg-agent, D-Bus, Wayland): hidden whole; sockets elsewhere in /run
	// one by one.
	runDir := os.Getenv("XDG_RUNTIME_DIR")
	if runDir == "" {
		runDir = fmt.Sprintf("/run/user/%d", os.Getuid())
	}
	if real, err := filepath.EvalSymlinks(runDir); err == nil {
		runDir = real
		hidden = append(hidden, real)
	}
	hidden = append(hidden, runtimeSockets(runDir)...)
	seen := map[string]bool{}
	for _, h := range hidden {
		if !seen[h] && exists(h) {
			seen[h] = true
			s.hidden = append(s.hidden, h)
		}
	}
	for _, p := range []string{s.initPath, "/proc/self/exe"} {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if dir := filepath.Dir(real); !slices.Contains(privateAt, dir) {
				s.pinned = append(s.pinned, dir)
			} else {
				// A binary right in /tmp: the folder is the session's own
				// /tmp inside a call, so the file is what stays read-only.
				s.pinned = append(s.pinned, real)
			}
		}
	}
	for _, p := range o.Protect {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			s.pinned = append(s.pinned, real)
		}
	}
	// What each hidden and protected folder is now: a call's init mounts
	// onto it only while the path still opens that folder. A file is
	// covered as it is opened but not held to its first inode: a store
	// rewritten by chock login, or a policy an editor saves, is a new file
	// renamed over the old (and a folder above it is pinned).
	s.pinIDs = map[string]sandbox.Inode{}
	for _, p := range append(append([]string(nil), s.hidden...), s.pinned...) {
		if in, dir, err := sandbox.InodeAt(p); err == nil && dir {
			s.pinIDs[p] = in
		}
	}
	s.initID, _ = sandbox.Identify(s.initPath)
	if wd, err := os.Getwd(); err == nil {
		s.wd = wd
		s.writable = append(s.writable, wd)
	}
	scratch := o.Scratch
	if scratch == nil {
		scratch = []string{o.TempDir, "/tmp", "/var/tmp", "/dev/shm"}
	}
	s.writable = append(s.writable, scratch...)
	s.writable = append(s.writable, o.Writable...)
	s.writable = outermost(s.writable)
	return nil
}

// privateAt are the temporary folders every call gets the session's own
// of, in place of the machine's.
var privateAt = []string{"/tmp", "/var/tmp", "/dev/shm"}

// makePrivate makes the session's temporary folders (0700, in TempDir):
// bound over /tmp, /var/tmp and /dev/shm in every call, shared by the
// session's calls and no one else.
func (s *Session) makePrivate() error {
	root, err := os.MkdirTemp(s.opts.TempDir, "chock-private-"+s.ID+"-")
	if err != nil {
		return fmt.Errorf("making the session's temporary folders: %w", err)
	}
	s.privateRoot = root
	for _, at := range privateAt {
		if _, err := os.Stat(at); err != nil {
			continue
		}
		host := filepath.Join(root, strings.ReplaceAll(strings.TrimPrefix(at, "/"), "/", "-"))
		if err := os.Mkdir(host, 0o700); err != nil {
			s.removePrivate()
			return fmt.Errorf("making the session's temporary folders: %w", err)
		}
		s.private = append(s.private, sandbox.PrivateDir{Host: host, At: at})
	}
	return nil
}

// removePrivate deletes the session's temporary folders and what its
// calls left there.
func (s *Session) removePrivate() {
	if s.privateRoot != "" {
		os.RemoveAll(s.privateRoot)
	}
}

// runtimeSockets are the pathname sockets under /run (the session's
// runtime folder aside, which is hidden whole), at most a few levels
// down: each is hidden from every call, as the keyring's bus is.
func runtimeSockets(skip string) []string {
	var out []string
	filepath.WalkDir("/run", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if (skip != "" && p == skip) || strings.Count(p, "/") > 4 {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&os.ModeSocket != 0 && len(out) < 256 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// outermost keeps of dirs those that exist, where they really are, and
// that no other one holds: a folder inside a writable one is writable
// already (one mount fewer for every call), but for /tmp, /var/tmp and
// /dev/shm, which are the session's own in a call.
func outermost(dirs []string) []string {
	var real []string
	seen := map[string]bool{}
	for _, d := range dirs {
		if r, err := filepath.EvalSymlinks(d); err == nil && !seen[r] {
			if st, err := os.Stat(r); err == nil && st.IsDir() {
				seen[r] = true
				real = append(real, r)
			}
		}
	}
	var out []string
	for _, d := range real {
		inside := false
		for _, e := range real {
			// A call's /tmp is the session's own, holding none of the
			// machine's: a folder under it is a mount of its own.
			if e != d && within(d, e) && !slices.Contains(privateAt, e) {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, d)
		}
	}
	return out
}

// within says whether path p is dir or under it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// underWritable keeps of paths those inside a writable folder: the rest
// are read-only already, under the read-only root.
func (s *Session) underWritable(paths []string) []string {
	var out []string
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = p
		}
		for _, w := range s.writable {
			if within(real, w) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// maskAll registers, before anything is logged of a call, the value of
// every secret the policy names that the store holds: a value the agent
// knew some other way is masked in the first call's argv as in every
// later line. A value the store cannot give now is masked when released.
func (s *Session) maskAll(ctx context.Context) {
	if s.opts.Store == nil {
		return
	}
	seen := map[string]bool{}
	for _, sec := range s.opts.Engine.Meta().Secrets {
		if seen[sec.Name] {
			continue
		}
		seen[sec.Name] = true
		if v, err := s.opts.Store.Get(ctx, sec.Name); err == nil {
			s.redact.Add("session", sec.Name, v)
		}
	}
}

// secretFileFor gives call c a file-bound secret and returns the path the
// program reads it at. In a sandbox the file is written inside it only
// (on a tmpfs mounted over an empty directory made here); with
// --no-sandbox it is a 0600 file in TempDir, deleted when the call ends.
func (s *Session) secretFileFor(c *Call, name, value string) (string, error) {
	if s.opts.NoSandbox {
		path, remove, err := s.secretFile(value)
		if err != nil {
			return "", err
		}
		c.cleanup = append(c.cleanup, remove)
		return path, nil
	}
	if c.fileDir == "" {
		dir, err := os.MkdirTemp(s.opts.TempDir, fmt.Sprintf("%s%d-*", secretFilePrefix, os.Getpid()))
		if err != nil {
			return "", err
		}
		c.fileDir = dir
		c.cleanup = append(c.cleanup, func() { os.Remove(dir) })
	}
	c.files = append(c.files, sandbox.SecretFile{Name: name, Value: value})
	return c.fileDir + "/" + name, nil
}

// event writes a log event; a failure to log is reported on the call.
func (s *Session) event(kind string, fields ...sessionlog.Field) error {
	return s.log.Event(kind, true, fields...)
}

// Prescan is a scan of a PATH's programs running in the background, for
// the session New starts with it (Options.Prescan): a command starts it
// before it loads the policy, which it does not need until the pins.
type Prescan struct {
	path string
	done chan struct{}
	scan *sandbox.PathScan
}

// StartPrescan starts scanning the programs of baseEnv's PATH, baseEnv
// being Options.BaseEnv (nil: the minimal environment New makes of this
// process's).
func StartPrescan(baseEnv []string) *Prescan {
	if baseEnv == nil {
		baseEnv = MinimalEnv(os.Environ())
	}
	path := envValue(baseEnv, "PATH")
	p := &Prescan{path: path, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.scan = sandbox.ScanPath(path)
	}()
	return p
}

// programs are the session's programs under path with the pins: the
// prescan's when it scanned path, else a scan made now.
func (p *Prescan) programs(path string, pins []sandbox.Pin) (*sandbox.Programs, error) {
	if p == nil || p.path != path {
		return sandbox.Scan(path, pins)
	}
	<-p.done
	return p.scan.Programs(pins), nil
}
