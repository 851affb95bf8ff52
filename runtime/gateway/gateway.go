// Package gateway is chock's second driver: the MCP server a
// real agent client connects to (chock mcp serve). Each connection is one
// agent session, opened as chock run opens one, and every tools/call it
// receives is mapped onto the same driver.ToolCall → runtime.Session path
// as a script line: audit, time limit, policy, secrets, redaction, the
// action.
//
// It offers exec, fetch_url and each tool of each started server whose
// mcp.S.tool.T the policy does not deny, named S__T; a refusal is a tool
// result that names the rule (never a JSON-RPC error, so the model reads
// why); an ask goes to the client as an elicitation when it declared one
// (elicitation/create in 2025-11-25 and before, an input_required result
// in 2026-07-28), to the terminal with --ask prompt, and is otherwise
// refused; and a swapped policy recomputes what is offered and tells the
// client (notifications/tools/list_changed).
package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/runtime"
	"github.com/chockhq/chock/runtime/mcpconn"
	"github.com/chockhq/chock/runtime/sessionlog"
	"github.com/chockhq/chock/runtime/telemetry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// Ask says how the gateway puts an ask decision that the client cannot
// be asked.
type Ask int

const (
	// AskElicit asks the client when it declared elicitation; otherwise the
	// ask reads as refused. The default.
	AskElicit Ask = iota
	// AskPrompt asks the client when it declared elicitation, and the
	// person at chock's controlling terminal otherwise.
	AskPrompt
	// AskDeny refuses every ask.
	AskDeny
)

// ParseAsk reads --ask: elicit, prompt or deny.
func ParseAsk(s string) (Ask, bool) {
	switch s {
	case "elicit", "":
		return AskElicit, true
	case "prompt":
		return AskPrompt, true
	case "deny":
		return AskDeny, true
	}
	return AskElicit, false
}

func (a Ask) String() string {
	switch a {
	case AskPrompt:
		return "prompt"
	case AskDeny:
		return "deny"
	}
	return "elicit"
}

// Separator joins a server's name and its tool's in the name the tool is
// offered under: notion__search for notion's search. A client adds its own
// prefix (Claude Code shows mcp__chock__notion__search).
const Separator = "__"

// MaxConnections bounds the connections open at once over HTTP: each
// starts the configured servers of its own session.
const MaxConnections = 64

// Options configure a gateway.
type Options struct {
	// Engine is the policy every session decides with; Swap replaces the
	// policy in it, in place, for every session at once.
	Engine *eval.Engine
	// Config and Sources are the policy's sources, when it was built from
	// them: hints then carry concrete edits, and asks show excerpts.
	Config  *config.Config
	Sources diag.Sources
	// NewSession opens the session of one connection, with the asker the
	// gateway gives it. The session's servers are started by the gateway.
	NewSession func(ctx context.Context, asker runtime.Asker) (*runtime.Session, error)
	// Ask is how an ask the client cannot be asked is put.
	Ask Ask
	// Prompter asks at the controlling terminal (Ask == AskPrompt).
	Prompter *runtime.TerminalAsker
	// Log gets the gateway's own lines (a connection, its servers, a
	// swapped policy); nil discards them.
	Log io.Writer
	// Version is the server version the gateway reports.
	Version string
}

// Gateway serves MCP clients, one session per connection.
type Gateway struct {
	o    Options
	view atomic.Pointer[view]

	mu     sync.Mutex
	conns  map[*conn]bool
	closed bool
	// sessionless is the one session of every 2026-07-28 request over
	// HTTP, which carries no session of its own.
	sessionless   *conn
	sessionlessMu sync.Mutex
	// template answers the HTTP handler's look-ups for requests of a
	// session that already exists: only its protocol versions are read.
	template *mcp.Server

	promptMu sync.Mutex
	logMu    sync.Mutex
}

// view is the policy's sources as of the last swap, for explanations.
type view struct {
	cfg *config.Config
	src diag.Sources
}

// New makes a gateway.
func New(o Options) (*Gateway, error) {
	if o.Engine == nil || o.NewSession == nil {
		return nil, errors.New("gateway: an engine and a session opener are needed")
	}
	if o.Ask == AskPrompt && o.Prompter == nil {
		return nil, errors.New("gateway: --ask prompt needs a terminal to prompt on")
	}
	if o.Version == "" {
		o.Version = "devel"
	}
	g := &Gateway{o: o, conns: map[*conn]bool{}}
	g.view.Store(&view{cfg: o.Config, src: o.Sources})
	g.template = mcp.NewServer(g.impl(), nil)
	g.template.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "ping" {
				return next(ctx, method, req)
			}
			return nil, fmt.Errorf("chock: %s outside a session; a session opens with initialize", method)
		}
	})
	return g, nil
}

func (g *Gateway) impl() *mcp.Implementation {
	return &mcp.Implementation{Name: "chock", Title: "chock: every tool call under policy", Version: g.o.Version}
}

// logf writes one line of the gateway's own.
func (g *Gateway) logf(format string, args ...any) {
	if g.o.Log == nil {
		return
	}
	g.logMu.Lock()
	defer g.logMu.Unlock()
	fmt.Fprintf(g.o.Log, "chock mcp serve: "+format+"\n", args...)
}

// Swap replaces the policy of every session with the bundle b (compiled
// from cfg and src, which may be nil for a bundle), recomputes what each
// connection is offered and tells its client. A bundle that does not
// prepare changes nothing.
func (g *Gateway) Swap(ctx context.Context, b *bundle.Bundle, cfg *config.Config, src diag.Sources) error {
	if err := g.o.Engine.Swap(ctx, b); err != nil {
		return err
	}
	g.Swapped(ctx, cfg, src)
	return nil
}

// Swapped tells every session that the engine's policy was replaced
// (by Swap or Adopt, or by OPA's bundle plugin), recomputes what each
// connection is offered and tells its client. cfg and src are the new
// policy's, nil for a bundle.
func (g *Gateway) Swapped(ctx context.Context, cfg *config.Config, src diag.Sources) {
	g.view.Store(&view{cfg: cfg, src: src})
	rev := g.o.Engine.Revision()
	for _, c := range g.live() {
		c.sess.Record("policy.swapped", sessionlog.F("policy", rev))
		c.refresh(ctx)
	}
}

// Adopt swaps in the policy another engine decides with, prepared
// already (eval.Engine.Adopt): mcp serve's reload of bundles. cfg and src
// are as for Swap.
func (g *Gateway) Adopt(ctx context.Context, other *eval.Engine, cfg *config.Config, src diag.Sources) error {
	if err := g.o.Engine.Adopt(other); err != nil {
		return err
	}
	g.Swapped(ctx, cfg, src)
	return nil
}

// Engine is the engine every session decides with.
func (g *Gateway) Engine() *eval.Engine { return g.o.Engine }

// Revision is the revision of the policy every session decides with.
func (g *Gateway) Revision() string { return g.o.Engine.Revision() }

// Kept records in every live session that the policy's sources changed
// and the running policy stays, and why.
func (g *Gateway) Kept(why string) {
	for _, c := range g.live() {
		c.sess.Record("policy.kept", sessionlog.F("policy", g.o.Engine.Revision()), sessionlog.F("why", why))
	}
}

// Held records in every live session that an edit of the policy's
// sources widens what the agent may do and is held: the running policy
// stays. widenings say what it would widen.
func (g *Gateway) Held(widenings []string) {
	telemetry.RecordHeld(context.Background())
	for _, c := range g.live() {
		c.sess.Record("policy.held", sessionlog.F("policy", g.o.Engine.Revision()), sessionlog.F("widenings", widenings))
	}
}

// live are the connections open now.
func (g *Gateway) live() []*conn {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*conn, 0, len(g.conns))
	for c := range g.conns {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].sess.ID < out[j].sess.ID })
	return out
}

// Close ends every session with reason and refuses new connections.
func (g *Gateway) Close(reason string) error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	var errs []error
	for _, c := range g.live() {
		errs = append(errs, c.end(reason))
	}
	return errors.Join(errs...)
}

// Abort is for a process about to exit at once: every session's Abort.
func (g *Gateway) Abort() {
	for _, c := range g.live() {
		c.sess.Abort()
	}
}

// conn is one connection: one agent session and the MCP server that
// speaks for it.
type conn struct {
	g         *Gateway
	transport string
	sess      *runtime.Session
	server    *mcp.Server
	servers   []runtime.ServerStatus

	mu      sync.Mutex
	offered map[string]upstream // S__T → the server's tool
	pending map[string]*pending // input_required rounds waiting for answers
	order   []string            // pending's keys, oldest first
	clients map[string]bool     // clients recorded in the log
	// ending is closed once the session has ended; endErr is End's error.
	ending chan struct{}
	endErr error
}

// upstream is a server's tool as it is offered.
type upstream struct{ server, tool string }

// newConn opens the session of a new connection and starts its servers.
func (g *Gateway) newConn(ctx context.Context, transport string) (*conn, error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, errors.New("the gateway is stopping")
	}
	g.mu.Unlock()
	c := &conn{g: g, transport: transport, offered: map[string]upstream{}, pending: map[string]*pending{}, clients: map[string]bool{}}
	sess, err := g.o.NewSession(ctx, &asker{c: c})
	if err != nil {
		return nil, err
	}
	c.sess = sess
	sts, err := sess.StartServers(ctx)
	if err != nil {
		sess.End("starting the servers failed")
		return nil, err
	}
	c.servers = sts
	g.logf("session %s (%s), policy %s, log %s", sess.ID, transport, eval.ShortRevision(g.o.Engine.Revision()), sess.LogPath())
	for _, st := range sts {
		g.logf("session %s: %s", sess.ID, serverLine(st))
	}
	c.server = mcp.NewServer(g.impl(), &mcp.ServerOptions{
		Instructions: "Every tool here runs under the chock policy of this project (chock.zon): exec runs a program, fetch_url fetches an https URL, " +
			"and SERVER" + Separator + "TOOL calls a tool of a configured MCP server. A refused call answers with the action, the decision, " +
			"the rule that decided it and why; a secret value never appears in a result.",
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	c.server.AddReceivingMiddleware(c.middleware)
	rev := g.o.Engine.Revision()
	c.refresh(ctx)
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		c.end("the gateway is stopping")
		return nil, errors.New("the gateway is stopping")
	}
	g.conns[c] = true
	g.mu.Unlock()
	if g.o.Engine.Revision() != rev {
		c.refresh(ctx) // a swap came between: it did not see this connection
	}
	return c, nil
}

// serverLine says what starting one server came to, on one line.
func serverLine(st runtime.ServerStatus) string {
	if !st.Started {
		return fmt.Sprintf("server %s: left out: %s", st.Name, safetext.Line(st.Why))
	}
	where := "stdio, no network"
	if st.Network {
		where = "stdio, network allowed"
	}
	if st.Kind == "url" {
		where = st.Host
	}
	return fmt.Sprintf("server %s: started (%s), %d tools", st.Name, where, len(st.Tools))
}

// end ends the connection's session, once; a second caller waits for
// the first to be done, so the gateway's Close waits for an end under way.
func (c *conn) end(reason string) error {
	c.mu.Lock()
	if c.ending != nil {
		done := c.ending
		c.mu.Unlock()
		<-done
		return c.endErr
	}
	c.ending = make(chan struct{})
	c.mu.Unlock()
	c.endErr = c.sess.End(reason)
	c.g.mu.Lock()
	delete(c.g.conns, c)
	c.g.mu.Unlock()
	c.g.logf("session %s ended: %s", c.sess.ID, reason)
	close(c.ending)
	return c.endErr
}

// refresh works out what the connection is offered under the policy as it
// is now: exec, fetch_url, and each started server's tools that are not
// denied. Replacing the tools tells a connected client the list changed.
func (c *conn) refresh(ctx context.Context) {
	offered := map[string]upstream{}
	var tools []*mcp.Tool
	var names []string
	hidden := 0
	red := c.sess.Redactor()
	// A name two servers' tools would both be offered under (server a's
	// tool b__c and server a__b's tool c) means neither: each is hidden,
	// and logged with the other's name.
	claims := map[string][]upstream{}
	for _, st := range c.servers {
		if !st.Started {
			continue
		}
		for _, t := range c.sess.ServerTools(st.Name) {
			name := st.Name + Separator + t.Name
			claims[name] = append(claims[name], upstream{server: st.Name, tool: t.Name})
		}
	}
	for _, st := range c.servers {
		if !st.Started {
			continue
		}
		var ts []mcpconn.Tool
		var acts []string
		for _, t := range c.sess.ServerTools(st.Name) {
			act, err := action.MCPTool(st.Name, t.Name)
			if err != nil {
				continue // the session already kept such a server out
			}
			ts, acts = append(ts, t), append(acts, act)
		}
		// One query for the server's tools (a remote OPA is a round trip
		// away); a call of one is decided, and logged, when it is made.
		ds, err := c.g.o.Engine.DecideManyUnlogged(ctx, acts, config.Loop)
		for i, t := range ts {
			act := acts[i]
			name := st.Name + Separator + t.Name
			if others := othersClaiming(claims[name], st.Name, t.Name); len(others) > 0 {
				hidden++
				c.sess.Record("tool.hidden", sessionlog.F("name", name), sessionlog.F("action", act),
					sessionlog.F("rule", "the name is also "+strings.Join(others, " and ")+", so it is offered for neither"))
				continue
			}
			var d *eval.Decision
			if err == nil {
				d = ds[i]
			}
			if err != nil || d.Decision == config.Deny {
				rule := "an error deciding it"
				if err == nil {
					rule = ruleText(d)
				}
				hidden++
				c.sess.Record("tool.hidden", sessionlog.F("name", name), sessionlog.F("action", act), sessionlog.F("rule", rule))
				continue
			}
			if prev, dup := offered[name]; dup {
				c.sess.Record("tool.hidden", sessionlog.F("name", name), sessionlog.F("action", act),
					sessionlog.F("rule", fmt.Sprintf("the name is already offered for server %s's tool %s", prev.server, prev.tool)))
				hidden++
				continue
			}
			offered[name] = upstream{server: st.Name, tool: t.Name}
			tools = append(tools, reserved(name, t, red.String))
			names = append(names, name)
		}
	}
	c.mu.Lock()
	var gone []string
	for name := range c.offered {
		if _, ok := offered[name]; !ok {
			gone = append(gone, name)
		}
	}
	c.offered = offered
	c.mu.Unlock()
	if len(gone) > 0 {
		c.server.RemoveTools(gone...)
	}
	for _, t := range runtime.Tools {
		if t.Offered {
			c.server.AddTool(ownTool(t), c.handleOwn(t))
		}
	}
	for _, t := range tools {
		u := offered[t.Name]
		c.server.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return c.handleUpstream(ctx, req, u)
		})
	}
	c.sess.Record("tools.offered", sessionlog.F("tools", append(runtime.OfferedNames(), names...)), sessionlog.F("hidden", hidden))
}

// ruleText names what decided d: the deciding layer, and its rule or
// default with the position.
func ruleText(d *eval.Decision) string {
	l := d.Decider()
	if l == nil {
		return "default"
	}
	return l.Spelling() + " " + l.RuleText()
}

// othersClaiming names the server tools other than server's tool that
// claim one offered name ("server a__b's tool c").
func othersClaiming(claims []upstream, server, tool string) []string {
	var out []string
	for _, u := range claims {
		if u.server != server || u.tool != tool {
			out = append(out, fmt.Sprintf("server %s's tool %s", u.server, u.tool))
		}
	}
	return out
}

// upstreamOf is the server's tool a name not offered would mean: the one
// configured server name it starts with, then the separator. A name that
// two configured servers' names could start (a__b__c, with servers a and
// a__b) means neither.
func (c *conn) upstreamOf(name string) (upstream, bool) {
	best, n := "", 0
	for _, st := range c.servers {
		if strings.HasPrefix(name, st.Name+Separator) && len(name) > len(st.Name+Separator) {
			best, n = st.Name, n+1
		}
	}
	if n != 1 {
		return upstream{}, false
	}
	return upstream{server: best, tool: name[len(best)+len(Separator):]}, true
}

// offers says whether a tool of this name is on the list.
func (c *conn) offers(name string) bool {
	if t := runtime.ToolNamed(name); t != nil && t.Offered {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.offered[name]
	return ok
}

// clientRequest is what every request a server receives says of its
// client.
type clientRequest interface {
	ClientInfo() *mcp.Implementation
	ClientCapabilities() *mcp.ClientCapabilities
	ProtocolVersion() string
}

// middleware records each client the first time it is seen, and takes a
// call of a tool that is not offered but names a server's tool (a denied
// one, called by name) through the chain, which refuses it as any
// refusal: hiding a tool is not what enforces the policy.
func (c *conn) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" {
			if cr, ok := req.(*mcp.CallToolRequest); ok && cr.Params != nil && !c.offers(cr.Params.Name) {
				if u, ok := c.upstreamOf(cr.Params.Name); ok {
					c.noteClient(req)
					return c.handleUpstream(ctx, cr, u)
				}
			}
		}
		res, err := next(ctx, method, req)
		c.noteClient(req)
		return res, err
	}
}

// noteClient records a client (name, version, protocol) in the session
// log the first time it is seen: at initialize in 2025-11-25 and before,
// at the first request that names it in 2026-07-28.
func (c *conn) noteClient(req mcp.Request) {
	cr, ok := req.(clientRequest)
	if !ok {
		return
	}
	info := cr.ClientInfo()
	proto := cr.ProtocolVersion()
	if info == nil || proto == "" {
		return
	}
	key := info.Name + "\x00" + info.Version + "\x00" + proto
	c.mu.Lock()
	seen := c.clients[key]
	c.clients[key] = true
	c.mu.Unlock()
	if seen {
		return
	}
	caps := cr.ClientCapabilities()
	elicit := caps != nil && caps.Elicitation != nil
	c.sess.Record("client.connected", sessionlog.F("client", info.Name), sessionlog.F("client_version", info.Version),
		sessionlog.F("protocol", proto), sessionlog.F("transport", c.transport), sessionlog.F("elicitation", elicit))
	c.g.logf("session %s: client %s %s connected (%s, MCP %s, elicitation %s)", c.sess.ID,
		safetext.Line(info.Name), safetext.Line(info.Version), c.transport, safetext.Line(proto), yesNo(elicit))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
