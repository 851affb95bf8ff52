package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/runtime/mcpconn"
	"github.com/chockhq/chock/runtime/sandbox"
	"github.com/chockhq/chock/runtime/sessionlog"
	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// lookalike says why a server declaring a tool of this name is kept out:
// the name holds an invisible format or control character (a zero-width
// space, a bidi control, a variation selector), which can make one name
// read as another, or it reads as one of OwnTools once Unicode
// compatibility forms and case are folded (NFKC, full case folding:
// "ｅｘｅｃ", "EXEC") and confusable letters are mapped to the ones they
// look like (UTS #39 skeletons: Cyrillic "ехес"). "" when the name is
// fine.
func lookalike(name string) string {
	for _, r := range name {
		if safetext.Hidden(r) || safetext.Control(r) || r == utf8.RuneError {
			return fmt.Sprintf("it declares a tool named %s, which holds the invisible character U+%04X, so the whole server is kept out",
				safetext.Line(strconv.Quote(name)), r)
		}
	}
	folded := cases.Fold().String(norm.NFKC.String(name))
	skeleton := confusables.Skeleton(folded)
	for _, own := range OwnTools {
		switch {
		case name == own:
			return fmt.Sprintf("it declares a tool named %q, which is one of Chock's own, so the whole server is kept out", name)
		case folded == own, skeleton == confusables.Skeleton(own):
			return fmt.Sprintf("it declares a tool named %s, which reads as %q, one of Chock's own, so the whole server is kept out",
				safetext.Line(strconv.Quote(name)), own)
		}
	}
	return ""
}

// MCPOptions tune how servers are reached; zero values are the defaults (mcpconn.DiscoverTimeout, mcpconn.CallTimeout).
type MCPOptions struct {
	// DiscoverTimeout bounds starting a server and reading its tools (10 s).
	DiscoverTimeout time.Duration
	// CallTimeout bounds one tool call (60 s).
	CallTimeout time.Duration
	// MaxReply bounds one reply (1 MiB).
	MaxReply int64
	// Dir is the working directory of local servers.
	Dir string
}

// MCPRequest is a call of a server's tool.
type MCPRequest struct {
	Server    string          `json:"server"`
	Tool      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ServerStatus is what starting a server came to.
type ServerStatus struct {
	Name string `json:"name"`
	// Kind is "command" or "url".
	Kind string `json:"kind"`
	// Host is a remote server's host.
	Host    string `json:"host,omitempty"`
	Started bool   `json:"started"`
	// Why says why a server was left out.
	Why string `json:"why,omitempty"`
	// Network says whether a local server may reach the network.
	Network bool         `json:"network,omitempty"`
	Tools   []ToolStatus `json:"tools,omitempty"`
}

// ToolStatus is one tool a server declared, with what the policy says of
// calling it (looked at, not asked: nothing is granted by looking).
type ToolStatus struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Action      string          `json:"action"`
	Decision    config.Decision `json:"decision"`
	Rule        string          `json:"rule"`
}

// server is a configured server in a session.
type server struct {
	status ServerStatus
	conn   *mcpconn.Server
	// net is a local server's egress proxy (mcp.S.network allowed).
	net *callNet
}

// StartServers starts the configured MCP servers (those named in only,
// when given) under start-phase policy, where nobody can be asked: ask
// reads as refused. It logs a line for each server started or dropped and
// one mcp.request for each exchange. The returned statuses are in
// configuration order.
func (s *Session) StartServers(ctx context.Context, only ...string) ([]ServerStatus, error) {
	want := map[string]bool{}
	for _, n := range only {
		want[n] = true
	}
	var out []ServerStatus
	n := 0
	for _, sv := range s.opts.Engine.Meta().Servers {
		if len(only) > 0 && !want[sv.Name] {
			continue
		}
		delete(want, sv.Name)
		var st ServerStatus
		var err error
		if n == action.MaxServers {
			st = ServerStatus{Name: sv.Name, Kind: kindOf(sv.URL)}
			err = s.dropServer(&st, fmt.Sprintf("a session has at most %d servers, and this is one more", action.MaxServers))
		} else {
			st, err = s.startServer(ctx, sv.Name, sv.URL, sv.Command)
			n++
		}
		if err != nil {
			return out, err
		}
		out = append(out, st)
	}
	for name := range want {
		return out, fmt.Errorf("no server %q is configured", name)
	}
	return out, nil
}

func kindOf(url string) string {
	if url != "" {
		return "url"
	}
	return "command"
}

// dropServer records a server left out of the session and why; err is
// only a failure to log.
func (s *Session) dropServer(st *ServerStatus, why string) error {
	st.Started, st.Why = false, s.redact.String(why)
	s.mu.Lock()
	s.servers[st.Name] = &server{status: *st}
	s.mu.Unlock()
	return s.event("server.dropped", sessionlog.F("server", st.Name), sessionlog.F("why", st.Why))
}

// refusal words a start-phase refusal: the deciding rule, the note that
// ask read as refused, and what would permit it.
func (s *Session) refusal(d *eval.Decision) string {
	x := eval.Explain(d, s.opts.Config)
	parts := []string{d.Action + " is " + eval.Describe(d)}
	switch {
	case d.Unavailable:
		parts = []string{d.Action + " is refused: " + d.Error}
	case d.Error != "":
		parts = []string{d.Action + " is malformed: " + d.Error}
	}
	if x.StartNote != "" {
		parts = append(parts, x.StartNote)
	}
	if x.Hint != nil && x.Hint.Text != "" {
		parts = append(parts, x.Hint.Text)
	}
	return strings.Join(parts, "; ")
}

// inPrivate says whether p is under one of the session's private
// temporary folders (where calls and servers see their own, not the
// person's).
func (s *Session) inPrivate(p string) bool {
	for _, d := range s.private {
		if p == d.At || strings.HasPrefix(p, d.At+"/") {
			return true
		}
	}
	return false
}

// serverBindBack is what of a server's file p, in the person's /tmp, is
// bound back read-only: its outermost folder below the temporary folder
// that holds no writable folder (a script's whole package, its
// node_modules beside it), or "" where a writable folder holds p already.
func (s *Session) serverBindBack(p string) string {
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	isAt := func(d string) bool {
		return slices.ContainsFunc(s.private, func(pd sandbox.PrivateDir) bool { return pd.At == d })
	}
	holds := func(d string) bool {
		for _, w := range s.writable {
			if w == d || strings.HasPrefix(w, d+"/") {
				return true
			}
		}
		return false
	}
	if isAt(p) {
		return "" // /tmp itself (server-filesystem /tmp): the session's own, never the person's with its sockets
	}
	for _, w := range s.writable {
		if !isAt(w) && strings.HasPrefix(p, w+"/") {
			return "" // bound back writable with its folder
		}
	}
	best := p
	for d := filepath.Dir(p); s.inPrivate(d) && !isAt(d); d = filepath.Dir(d) {
		if holds(d) {
			break
		}
		best = d
	}
	return best
}

// serverSpec is a local server's sandbox: what an exec call's is, but
// that it runs what it was built to run (no execute set, no exec watch).
func (s *Session) serverSpec(ctx context.Context, cmd *exec.Cmd, network bool) (*sandbox.Spec, error) {
	dir := cmd.Dir
	if dir == "" || !filepath.IsAbs(dir) {
		if s.wd == "" {
			return nil, errors.New("the session's working directory is unknown, so the server's cannot be entered inside the sandbox")
		}
		dir = filepath.Join(s.wd, dir)
	}
	plan, err := s.planFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("the file rules could not be applied (%v)", err)
	}
	env := slices.Clone(cmd.Env)
	if len(s.private) > 0 {
		env = append(slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") }), "TMPDIR=/tmp")
	}
	if network {
		env = proxyEnv(env)
	}
	// The PATH's folders inside a writable one are read-only, as in every
	// call: a server plants no program a call would run.
	ro := s.underWritable(append(append([]string(nil), s.programs.Dirs...), s.pinned...))
	// What the configured command names in the person's /tmp (its
	// program, a script and the package around it) is bound back in,
	// read-only: the session's private /tmp is over it.
	for _, a := range append([]string{cmd.Path}, cmd.Args[1:]...) {
		if filepath.IsAbs(a) && s.inPrivate(filepath.Clean(a)) {
			if d := s.serverBindBack(filepath.Clean(a)); d != "" {
				ro = append(ro, d)
			}
		}
	}
	return &sandbox.Spec{Path: cmd.Path, Argv: cmd.Args, Env: env, Dir: dir, Writable: s.writable,
		ReadOnly: ro, Hide: s.hidden,
		Private: s.private, FileRules: plan.rules, Net: true, AnyExec: true, Pins: maps.Clone(s.pinIDs)}, nil
}

// startServer starts one server under start-phase policy, or drops it with
// a line saying why; err is a failure to decide or to log.
func (s *Session) startServer(ctx context.Context, name, url string, command []string) (ServerStatus, error) {
	st := ServerStatus{Name: name, Kind: kindOf(url)}
	parent := "server:" + name
	if (url == "") == (len(command) == 0) {
		return st, s.dropServer(&st, "an entry names a command or a url, and never both")
	}
	o := mcpconn.Options{DiscoverTimeout: s.opts.MCP.DiscoverTimeout, CallTimeout: s.opts.MCP.CallTimeout,
		MaxReply: s.opts.MCP.MaxReply, OnExchange: s.logExchange, Redact: s.redact.String}
	var local mcpconn.Local
	var remote mcpconn.Remote
	// fence is a local server's egress proxy, once it started.
	var fence *callNet
	if url != "" {
		if _, err := mcpconn.CheckURL(url); err != nil {
			return st, s.dropServer(&st, err.Error())
		}
		host, _ := action.URLHost(url)
		st.Host = host
		act, err := action.MCPHost(name, url)
		if err != nil {
			return st, s.dropServer(&st, err.Error())
		}
		d, err := s.decide(ctx, act, config.Start, parent)
		if err != nil {
			return st, err
		}
		if d.Decision != config.Allow {
			s.logExchange(mcpconn.Exchange{Server: name, Host: host, About: mcpconn.Discover, Outcome: mcpconn.RefusedByPolicy})
			return st, s.dropServer(&st, s.refusal(d))
		}
		remote = mcpconn.Remote{Name: name, URL: url, Net: s.opts.Net, Headers: map[string]string{}}
	} else {
		d, err := s.decide(ctx, "mcp."+name+".network", config.Start, parent)
		if err != nil {
			return st, err
		}
		st.Network = d.Decision == config.Allow
		env := append([]string(nil), s.opts.BaseEnv...)
		prog, err := s.serverProgram(command[0])
		if err != nil {
			return st, s.dropServer(&st, fmt.Sprintf("the command is not there: %v", err))
		}
		local = mcpconn.Local{Name: name, Argv: append([]string{prog}, command[1:]...), Env: env, Dir: s.opts.MCP.Dir, NoNetwork: !st.Network}
		// In the sandbox: the exec calls' file-system sandbox, without
		// their execute set (the file system read-only but the writable
		// folders, the policy's files read-only in them, the store, logs
		// and keyring bus hidden, the file rules, a pid namespace) and a
		// network namespace whose only way out, with mcp.S.network
		// allowed, is chock's egress proxy. With --no-sandbox, that
		// network namespace alone, where the server may have network.
		if !s.opts.NoSandbox || st.Network {
			local.Start = func(cmd *exec.Cmd) error {
				var sc *sandbox.Cmd
				if s.opts.NoSandbox {
					sc = sandbox.Wrap(cmd, &sandbox.Spec{Path: cmd.Path, Argv: cmd.Args, Env: proxyEnv(cmd.Env)}, s.initPath)
				} else {
					spec, err := s.serverSpec(ctx, cmd, st.Network)
					if err != nil {
						return err
					}
					sc = sandbox.Confine(cmd, spec, s.initPath)
				}
				sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				if err := sc.Start(sctx); err != nil {
					return err
				}
				if !st.Network {
					sc.Net.Close() // loopback only, and no proxy listening on it
					return nil
				}
				n, err := s.serveServer(name, d, sc.Net)
				if err != nil {
					killGroup(cmd.Process.Pid)
					return err
				}
				fence = n
				return nil
			}
		}
	}

	if why, err := s.serverSecrets(ctx, name, url != "", remote.Headers, &local.Env); err != nil || why != "" {
		if err != nil {
			return st, err
		}
		return st, s.dropServer(&st, why)
	}

	var conn *mcpconn.Server
	var err error
	if url != "" {
		conn, err = mcpconn.OpenRemote(ctx, remote, o)
	} else {
		conn, err = mcpconn.OpenLocal(ctx, local, o)
	}
	if err != nil {
		fence.close()
		return st, s.dropServer(&st, err.Error())
	}
	for _, t := range conn.Tools() {
		if why := lookalike(t.Name); why != "" {
			conn.Close()
			return st, s.dropServer(&st, why)
		}
		act, err := action.MCPTool(name, t.Name)
		if err != nil {
			conn.Close()
			return st, s.dropServer(&st, fmt.Sprintf("it declares a tool whose name cannot be a policy action, so the whole server is kept out: %v", err))
		}
		if s.holdsSecret(act) {
			conn.Close()
			return st, s.dropServer(&st, "it declares a tool whose name holds a secret's value, so the whole server is kept out")
		}
		st.Tools = append(st.Tools, ToolStatus{Name: t.Name, Description: s.redact.String(t.Description), Action: act, Rule: "default"})
	}
	// What its tools' decisions are, for the listing, in one query; a call
	// of one is decided, and logged, when it is made.
	acts := make([]string, len(st.Tools))
	for i, ts := range st.Tools {
		acts[i] = ts.Action
	}
	if ds, err := s.engine(ctx).DecideManyUnlogged(ctx, acts, config.Loop); err == nil {
		for i, d := range ds {
			st.Tools[i].Decision = d.Decision
			if l := d.Decider(); l != nil {
				st.Tools[i].Rule = l.RuleText()
			}
		}
	}
	st.Started = true
	s.mu.Lock()
	s.servers[name] = &server{status: st, conn: conn, net: fence}
	s.mu.Unlock()
	fields := []sessionlog.Field{sessionlog.F("server", name), sessionlog.F("transport", transportOf(st.Kind)), sessionlog.F("tools", len(st.Tools))}
	if url != "" {
		fields = append(fields, sessionlog.F("host", st.Host))
	} else {
		network := "none (an empty network namespace)"
		if st.Network {
			network = "through chock's egress proxy"
		}
		fields = append(fields, sessionlog.F("network", network), sessionlog.F("pid", conn.Pid()))
	}
	return st, s.event("server.started", fields...)
}

// serverSecrets gives a server the secrets offered to it, each asked under
// secret.use.NAME at start, where only allow gives, and read once, before
// the first request: a remote server's as headers, a local server's in
// its environment. why says why the server is dropped ("" when it is not);
// err is a failure to decide or to log.
func (s *Session) serverSecrets(ctx context.Context, name string, remote bool, headers map[string]string, env *[]string) (why string, err error) {
	g := grantee{target: eval.Target{Server: name}, action: "mcp." + name, phase: config.Start, parent: "server:" + name,
		server: true, remote: remote}
	grants, refused, err := s.grants(ctx, g)
	if err != nil || refused != nil {
		if refused != nil {
			why = refused.Reason
		}
		return why, err
	}
	for _, gr := range grants {
		if gr.sec.Bind == config.BindHeader {
			headers[gr.sec.As] = gr.header
		} else {
			*env = append(*env, gr.sec.As+"="+gr.value)
		}
		if err := s.give(g, gr); err != nil {
			return "", err
		}
	}
	if err := s.log.Flush(); err != nil {
		return "", fmt.Errorf("session log: %w", err)
	}
	return "", nil
}

// logExchange writes one mcp.request, in the one shape the session log gives it: why an
// exchange failed is on the server.dropped or tool.result line it led to.
func (s *Session) logExchange(x mcpconn.Exchange) {
	fields := []sessionlog.Field{sessionlog.F("server", x.Server)}
	if x.Host != "" {
		fields = append(fields, sessionlog.F("host", x.Host))
	}
	fields = append(fields, sessionlog.F("about", x.About), sessionlog.F("status", x.Status), sessionlog.F("outcome", string(x.Outcome)))
	s.log.Event("mcp.request", false, fields...)
}

// server is the named server of the session, nil when none was configured.
func (s *Session) server(name string) *server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servers[name]
}

// runMCP calls a server's tool. The result is untrusted text, redacted.
func (s *Session) runMCP(ctx context.Context, c *Call) (*Result, error) {
	sv := s.server(c.MCP.Server)
	switch {
	case sv == nil:
		return nil, fmt.Errorf("no server %q is in this session", c.MCP.Server)
	case sv.conn == nil:
		return nil, fmt.Errorf("server %s was left out of this session at start: %s", c.MCP.Server, sv.status.Why)
	}
	res, err := sv.conn.CallWithin(ctx, c.MCP.Tool, c.MCP.Arguments, c.budget)
	if err != nil {
		return nil, err
	}
	return &Result{Content: s.redact.String(res.Text), IsError: res.IsError}, nil
}

// closeServersNow kills the process group of every local server without
// waiting for an exchange in flight; s.mu is held.
// serverProgram is the file a local server's command runs: a bare name
// as the session's PATH resolved it, a path (chock.zon's own) as written.
func (s *Session) serverProgram(argv0 string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	if fs := s.programs.Means(argv0); len(fs) > 0 {
		return fs[0].Path, nil
	}
	return "", fmt.Errorf("%s: not found on the session's PATH", argv0)
}

func (s *Session) closeServersNow() {
	for _, sv := range s.servers {
		if sv.conn != nil {
			killGroup(sv.conn.Pid())
		}
	}
}

// closeServers stops every server and logs what each sent that was
// counted and never answered.
func (s *Session) closeServers() {
	s.mu.Lock()
	var list []*server
	for _, sv := range s.servers {
		if sv.conn != nil {
			list = append(list, sv)
		}
	}
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].status.Name < list[j].status.Name })
	for _, sv := range list {
		sv.conn.Close()
		sv.net.close()
		fields := []sessionlog.Field{sessionlog.F("server", sv.status.Name)}
		if m := sv.conn.ServerMessages(); len(m) > 0 {
			fields = append(fields, sessionlog.F("unanswered", m))
		}
		s.event("server.stopped", fields...)
	}
}

func transportOf(kind string) string {
	if kind == "url" {
		return "streamable_http"
	}
	return "stdio"
}
