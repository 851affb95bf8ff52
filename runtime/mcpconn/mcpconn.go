// Package mcpconn reaches one MCP server — a local command over stdio or a
// remote endpoint over Streamable HTTP — through the MCP go-sdk behind a
// hardened adapter: the protocol version is pinned to 2025-11-25,
// the client advertises no capability, every request the server makes of
// the client is counted and never answered, the tool list is read once and
// fixed, replies are bounded, and each exchange has a time budget.
//
// For a remote server the adapter also owns the HTTP client: https only,
// every resolved address checked by netguard and the connection pinned to
// one, no proxy, no redirect, no listening GET stream, a credential header
// set on every request, and a 404 (or the peer's unknown-session answer)
// re-initialising the session once.
//
// The package knows nothing of policy: the runtime decides whether a server
// starts and whether a tool may be called, and logs the exchanges this
// package reports.
package mcpconn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/runtime/telemetry"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
)

// ProtocolVersion is the one MCP version chock speaks: the last with
// sessions, before 2026-07-28 removed them.
const ProtocolVersion = "2025-11-25"

// Bounds a server has, local or remote.
const (
	// MaxReply bounds one reply (and one stdio frame).
	MaxReply = 1 << 20
	// DiscoverTimeout is the budget for starting and reading the tool list.
	DiscoverTimeout = 10 * time.Second
	// CallTimeout is the budget for one tool call.
	CallTimeout = 60 * time.Second
	// maxPages bounds the pages of a tool list, so a server cannot page
	// empty lists forever.
	maxPages = 16
)

// Outcome is how an exchange ended, as the session log records it.
type Outcome string

// The outcomes of a call to a server.
const (
	Answered         Outcome = "answered"
	RefusedByPolicy  Outcome = "refused_by_policy"
	RefusedByAddress Outcome = "refused_by_address"
	Redirected       Outcome = "redirected"
	NoAnswer         Outcome = "no_answer"
)

// Discover is the About of the exchange that reads a server's tool list.
const Discover = "discover"

// Exchange is one question put to a server and how it ended.
type Exchange struct {
	Server string
	// Host is the remote server's host; empty for a local server.
	Host string
	// About is the tool the call was about, or Discover.
	About string
	// Status is the HTTP status of the last response (0: none, or local).
	Status  int
	Outcome Outcome
}

// Error is a failed exchange: why, and how it ended.
type Error struct {
	Server  string
	About   string
	Outcome Outcome
	Status  int
	Msg     string
	// Err is the underlying error, when there is one.
	Err error
}

func (e *Error) Error() string {
	about := "the tool list"
	if e.About != Discover {
		about = "tool " + e.About
	}
	return fmt.Sprintf("server %s, %s: %s", e.Server, about, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ToolError is a server's JSON-RPC error answer to a call: the server
// answered, and refused. Its text is the server's, untrusted.
type ToolError struct {
	Code    int64
	Message string
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("the server answered with error %d: %s", e.Code, e.Message)
}

// Tool is one tool a server declared at start.
type Tool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Annotations are the server's hints about the tool (read only,
	// destructive, ...): untrusted, as everything it declares.
	Annotations *mcp.ToolAnnotations `json:"annotations,omitempty"`
}

// Result is a tool's answer rendered as text. It is untrusted: it is
// whatever the server chose to send.
type Result struct {
	Text    string
	IsError bool
}

// Options are the budgets and hooks of a connection.
type Options struct {
	// DiscoverTimeout and CallTimeout override the package's budgets.
	DiscoverTimeout time.Duration
	CallTimeout     time.Duration
	// MaxReply overrides the reply bound.
	MaxReply int64
	// OnExchange, when set, is told of every exchange.
	OnExchange func(Exchange)
	// Logger receives the go-sdk's own log; discarded when nil.
	Logger *slog.Logger
	// Redact masks the values a session holds in what the server chose
	// (its session id) before a span carries it; as it is when nil.
	Redact func(string) string
}

func (o *Options) defaults() {
	if o.DiscoverTimeout <= 0 {
		o.DiscoverTimeout = DiscoverTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = CallTimeout
	}
	if o.MaxReply <= 0 {
		o.MaxReply = MaxReply
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
}

// dialer opens one logical MCP connection: a new session each time.
type dialer interface {
	transport(ctx context.Context) (mcp.Transport, error)
	// begin resets what the transport records of one exchange.
	begin()
	// classify turns a failed exchange into an Error.
	classify(about string, err error) *Error
	// status is the last HTTP status of the exchange (0 for stdio).
	status() int
	// sessionLost says whether the last failure was the server dropping
	// the session (404, or its unknown-session answer).
	sessionLost(err error) bool
	host() string
	// reconnects says whether a failed session is replaced by a new one
	// at the next call (remote), or kept (local: one process, one session).
	reconnects() bool
	close() error
}

// Server is one started MCP server: its fixed tool list and its session.
type Server struct {
	name string
	o    Options
	d    dialer

	mu    sync.Mutex // one exchange at a time
	cs    *mcp.ClientSession
	tools []Tool
	index map[string]bool
	// counts of what the server sent that chock never answers or reads.
	countMu sync.Mutex
	counts  map[string]int
	closed  bool
}

// Tools is the tool list read at start. It never changes.
func (s *Server) Tools() []Tool { return append([]Tool(nil), s.tools...) }

// ServerMessages counts, by method, the requests and notifications the
// server sent: sampling, elicitation, roots, a changed tool list, logging.
// None was answered or acted on.
func (s *Server) ServerMessages() map[string]int {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	out := make(map[string]int, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

func (s *Server) count(method string) {
	s.countMu.Lock()
	s.counts[method]++
	s.countMu.Unlock()
}

func newServer(name string, d dialer, o Options) *Server {
	o.defaults()
	return &Server{name: name, o: o, d: d, counts: map[string]int{}}
}

// open starts a server on d: a session and its tool list, or an error
// with everything it had opened closed.
func open(ctx context.Context, name string, d dialer, o Options) (*Server, error) {
	s := newServer(name, d, o)
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// start connects and reads the tool list within the discover budget.
func (s *Server) start(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.DiscoverTimeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d.begin()
	tools, err := s.discover(ctx)
	if err != nil {
		e := s.fail(ctx, s.o.DiscoverTimeout, Discover, err)
		return e
	}
	s.tools = tools
	s.index = make(map[string]bool, len(tools))
	for _, t := range tools {
		s.index[t.Name] = true
	}
	s.report(Exchange{About: Discover, Status: s.d.status(), Outcome: Answered})
	return nil
}

func (s *Server) report(x Exchange) {
	if s.o.OnExchange != nil {
		x.Server, x.Host = s.name, s.d.host()
		s.o.OnExchange(x)
	}
}

// fail classifies err, reports the exchange and returns the Error; an
// exchange whose budget ran out is reported as such, naming the budget.
func (s *Server) fail(ctx context.Context, budget time.Duration, about string, err error) *Error {
	var e *Error
	if !errors.As(err, &e) {
		e = s.d.classify(about, err)
		if e.Outcome == NoAnswer && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			e.Msg = fmt.Sprintf("no answer within %s", budget)
		}
	}
	e.Server, e.About = s.name, about
	s.report(Exchange{About: about, Status: e.Status, Outcome: e.Outcome})
	return e
}

func (s *Server) connect(ctx context.Context) error {
	t, err := s.d.transport(ctx)
	if err != nil {
		return err
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "chock", Version: "1"}, &mcp.ClientOptions{
		Logger:         s.o.Logger,
		Capabilities:   &mcp.ClientCapabilities{}, // nothing: no sampling, elicitation or roots
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})
	cs, err := c.Connect(ctx, &countingTransport{t, s.count}, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return err
	}
	if v := cs.InitializeResult().ProtocolVersion; v != ProtocolVersion {
		cs.Close()
		return &Error{Outcome: NoAnswer, Status: s.d.status(), Msg: fmt.Sprintf("the server speaks MCP %s; chock speaks %s only", v, ProtocolVersion)}
	}
	s.cs = cs
	return nil
}

func (s *Server) discover(ctx context.Context) ([]Tool, error) {
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	var tools []Tool
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, &Error{Outcome: NoAnswer, Status: s.d.status(), Msg: fmt.Sprintf("the tool list runs past %d pages", maxPages)}
		}
		res, err := s.cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			if t == nil {
				continue
			}
			if seen[t.Name] {
				return nil, &Error{Outcome: Answered, Status: s.d.status(), Msg: fmt.Sprintf("the server declares tool %q twice", t.Name)}
			}
			seen[t.Name] = true
			schema, _ := json.Marshal(t.InputSchema)
			tools = append(tools, Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: schema, Annotations: t.Annotations})
			if len(tools) > action.MaxTools {
				return nil, &Error{Outcome: Answered, Status: s.d.status(), Msg: fmt.Sprintf("the server declares more than %d tools; a server may declare at most %d", action.MaxTools, action.MaxTools)}
			}
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		cursor = res.NextCursor
	}
}

// Call calls a tool the server declared at start, within the call budget
// (Options.CallTimeout). A server that dropped the session gets one new
// session and the question once more; a second drop fails the call.
func (s *Server) Call(ctx context.Context, tool string, args json.RawMessage) (*Result, error) {
	return s.CallWithin(ctx, tool, args, 0)
}

// CallWithin is Call within budget, the caller's one budget for the call
// (Options.CallTimeout when budget is 0); an answer that does not come in
// time fails naming it.
func (s *Server) CallWithin(ctx context.Context, tool string, args json.RawMessage, budget time.Duration) (*Result, error) {
	if budget <= 0 {
		budget = s.o.CallTimeout
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("server %s is closed", s.name)
	}
	if !s.index[tool] {
		return nil, fmt.Errorf("server %s declared no tool %q at start, and the tool list is fixed then", s.name, tool)
	}
	var arguments any
	if len(args) > 0 && string(args) != "null" {
		// Sent on as they came (a JSON object, checked, not decoded into a
		// map to be encoded again): the go-sdk writes a RawMessage as is.
		if t := bytes.TrimLeft(args, " \t\r\n"); len(t) == 0 || t[0] != '{' || !json.Valid(t) {
			return nil, fmt.Errorf("tool %s: the arguments are not a JSON object", tool)
		}
		arguments = args
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	s.d.begin()
	res, err := s.call(ctx, tool, arguments)
	if err != nil && s.d.sessionLost(err) && ctx.Err() == nil {
		// The server dropped the session: open another, ask once more.
		s.drop()
		s.d.begin()
		if err = s.connect(ctx); err == nil {
			res, err = s.call(ctx, tool, arguments)
			if err != nil && s.d.sessionLost(err) {
				err = &Error{Outcome: NoAnswer, Status: s.d.status(), Msg: "the server dropped the session twice; it holds no session", Err: err}
			}
		}
	}
	if err != nil {
		var te *ToolError
		if errors.As(err, &te) {
			s.report(Exchange{About: tool, Status: s.d.status(), Outcome: Answered})
			return nil, err
		}
		e := s.fail(ctx, budget, tool, err)
		if s.d.reconnects() {
			s.drop() // a failed exchange may have broken the session; the next call opens another
		}
		return nil, e
	}
	s.report(Exchange{About: tool, Status: s.d.status(), Outcome: Answered})
	return res, nil
}

func (s *Server) call(ctx context.Context, tool string, arguments any) (*Result, error) {
	if s.cs == nil {
		if err := s.connect(ctx); err != nil {
			return nil, err
		}
	}
	transport := "pipe" // a local server's stdio
	if s.d.reconnects() {
		transport = "tcp" // a remote server's HTTP
	}
	ctx, span := telemetry.StartMCPCall(ctx, s.name, tool, transport)
	defer span.End()
	if id := s.cs.ID(); id != "" {
		// The server chose it, and a server given a secret may echo it.
		span.SetAttributes(telemetry.MCPSession.String(s.o.Redact(id)))
	}
	// The call's trace goes upstream in params._meta, by the MCP
	// conventions.
	p := &mcp.CallToolParams{Name: tool, Arguments: arguments}
	if m := telemetry.Inject(ctx); m != nil {
		p.Meta = m
	}
	r, err := s.cs.CallTool(ctx, p)
	if err != nil {
		span.SetAttributes(telemetry.ErrorType.String("chock.error"))
		span.SetStatus(codes.Error, "error")
		var we *jsonrpc.Error
		if errors.As(err, &we) && !s.d.sessionLost(err) {
			return nil, &ToolError{Code: we.Code, Message: we.Message}
		}
		return nil, err
	}
	if r.IsError {
		span.SetAttributes(telemetry.ErrorType.String("tool_error"))
		span.SetStatus(codes.Error, "tool error")
	}
	return &Result{Text: render(r), IsError: r.IsError}, nil
}

// drop closes the current session, if any.
func (s *Server) drop() {
	if s.cs != nil {
		s.cs.Close()
		s.cs = nil
	}
}

// Close ends the session and, for a local server, kills its process group.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.drop()
	return s.d.close()
}

// render turns a tool result into text: text content as it is, other
// content described in one line, structured content as JSON when there is
// no text. Nothing in it is interpreted.
func render(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link %s]", c.URI))
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				if c.Resource.Text != "" {
					parts = append(parts, c.Resource.Text)
				} else {
					parts = append(parts, fmt.Sprintf("[resource %s, %d bytes]", c.Resource.URI, len(c.Resource.Blob)))
				}
			}
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && r.StructuredContent != nil {
		b, _ := json.Marshal(r.StructuredContent)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, "\n")
}

// countingTransport hands the go-sdk a connection from which every request
// and notification of the server has been taken out and counted: sampling,
// elicitation and roots requests are never answered, and a changed tool
// list reaches nothing.
type countingTransport struct {
	mcp.Transport
	count func(method string)
}

func (t *countingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{c, t.count}, nil
}

type countingConn struct {
	mcp.Connection
	count func(method string)
}

// questionKey marks the context of a write that asks the server
// something (a request with an id): the HTTP status of that POST is the
// status of the exchange, not that of a notification sent beside it.
type questionKey struct{}

// Write marks a question's context, so the transport knows which POST
// carries it.
func (c *countingConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
		ctx = context.WithValue(ctx, questionKey{}, true)
	}
	return c.Connection.Write(ctx, m)
}

// isQuestion says whether ctx is that of a write marked by countingConn.
func isQuestion(ctx context.Context) bool { return ctx.Value(questionKey{}) != nil }

func (c *countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		m, err := c.Connection.Read(ctx)
		if err != nil {
			return nil, err
		}
		if r, ok := m.(*jsonrpc.Request); ok {
			c.count(r.Method)
			continue
		}
		return m, nil
	}
}

// ErrReplyBound is wrapped by a reply that passed the bound.
var ErrReplyBound = errors.New("the reply passed the bound")

// bytesHuman prints a bound the way the seed says it.
func bytesHuman(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
