package mcpconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/chockhq/chock/internal/boundread"
	"github.com/chockhq/chock/runtime/netguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/http/httpguts"
)

// Remote is a server somebody else runs, reached over Streamable HTTP.
type Remote struct {
	Name string
	URL  string
	// Headers are the credential headers, sent on every request, each
	// with its whole value ("Bearer …" for Authorization is the caller's
	// to build).
	Headers map[string]string
	// Net resolves and checks addresses (the production checker when nil).
	Net *netguard.Checker
}

// CheckURL says whether u may name a remote server: https, a host, no
// user information.
func CheckURL(u string) (*url.URL, error) {
	p, err := url.Parse(u)
	if err != nil {
		return nil, fmt.Errorf("the url does not parse: %w", err)
	}
	switch {
	case p.Scheme != "https":
		return nil, fmt.Errorf("the url is %s, and a remote server is reached over https only: a credential and a tool result must not cross a network in the clear", p.Scheme)
	case p.User != nil:
		return nil, errors.New("the url carries user information; a credential goes in the secrets block")
	case p.Hostname() == "":
		return nil, errors.New("the url names no host")
	}
	return p, nil
}

// OpenRemote starts a remote server: it opens a session and reads the
// tool list within the discover budget. The exchange is reported to
// o.OnExchange whether it succeeds or not.
func OpenRemote(ctx context.Context, r Remote, o Options) (*Server, error) {
	u, err := CheckURL(r.URL)
	if err != nil {
		return nil, err
	}
	for name, value := range r.Headers {
		if !httpguts.ValidHeaderFieldName(name) || !httpguts.ValidHeaderFieldValue(value) {
			return nil, fmt.Errorf("the credential cannot be carried in header %q", name)
		}
	}
	checker := r.Net
	if checker == nil {
		checker = &netguard.Checker{}
	}
	o.defaults()
	d := &httpDialer{endpoint: u.String(), hostname: u.Hostname(), headers: r.Headers, bound: o.MaxReply}
	d.client = d.newClient(checker)
	return open(ctx, r.Name, d, o)
}

// httpDialer owns the HTTP client of one remote server and what it saw of
// the current exchange.
type httpDialer struct {
	endpoint string
	hostname string
	headers  map[string]string
	bound    int64
	client   *http.Client

	mu sync.Mutex
	st exchState
	// sid is the last session id the server gave: never repeated in a
	// message.
	sid string
}

// exchState is what the transport saw during one exchange.
type exchState struct {
	status     int
	redirected string // where to, when the server redirected
	refused    *netguard.RefusedError
	bound      bool
	lost       bool
	// answered: the question's POST got a response (status is its).
	answered bool
}

func (d *httpDialer) begin() {
	d.mu.Lock()
	d.st = exchState{}
	d.mu.Unlock()
}

func (d *httpDialer) state() exchState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st
}

func (d *httpDialer) update(f func(*exchState)) {
	d.mu.Lock()
	f(&d.st)
	d.mu.Unlock()
}

func (d *httpDialer) host() string     { return d.hostname }
func (d *httpDialer) reconnects() bool { return true }
func (d *httpDialer) status() int      { return d.state().status }

func (d *httpDialer) close() error {
	d.client.CloseIdleConnections()
	return nil
}

func (d *httpDialer) sessionLost(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) || d.state().lost
}

func (d *httpDialer) transport(context.Context) (mcp.Transport, error) {
	return &mcp.StreamableClientTransport{
		Endpoint:             d.endpoint,
		HTTPClient:           d.client,
		MaxRetries:           -1,   // a stream that ends early is not resumed
		DisableStandaloneSSE: true, // no listening stream
		MaxEventSize:         int(d.bound),
	}, nil
}

// newClient builds the one HTTP client the server is reached with: no
// proxy whatever the environment says, dials only to checked addresses,
// no redirect followed, no client-wide timeout (each exchange has its own).
func (d *httpDialer) newClient(checker *netguard.Checker) *http.Client {
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if checker.TLS != nil {
		tlsConf = checker.TLS.Clone()
		if tlsConf.MinVersion < tls.VersionTLS12 {
			tlsConf.MinVersion = tls.VersionTLS12
		}
	}
	base := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := checker.DialContext(ctx, network, addr)
			var refused *netguard.RefusedError
			if errors.As(err, &refused) {
				d.update(func(st *exchState) { st.refused = refused })
			}
			return c, err
		},
		TLSClientConfig:        tlsConf,
		ForceAttemptHTTP2:      true,
		MaxResponseHeaderBytes: 64 << 10,
		MaxIdleConns:           2,
	}
	return &http.Client{
		Transport: &guard{d: d, base: base},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			d.update(func(st *exchState) { st.redirected = req.URL.Redacted() })
			return fmt.Errorf("%w: to %s", netguard.ErrRedirect, req.URL.Redacted())
		},
	}
}

// guard is the RoundTripper every request of the session passes: it
// refuses GET (no listening stream, no resumption), sets the credential
// and the pinned protocol version, records the status, notices a dropped
// session, and bounds the reply.
type guard struct {
	d    *httpDialer
	base http.RoundTripper
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errors.New("chock opens no GET stream: every message one can carry is refused or counted")
	}
	req = req.Clone(req.Context())
	req.Header.Set("User-Agent", "chock")
	for name, value := range g.d.headers {
		req.Header.Set(name, value)
	}
	if req.Header.Get("Mcp-Protocol-Version") == "" {
		// The go-sdk sets it from session state kept in a type this adapter
		// wraps. The version is pinned, and initialize asks for the same
		// one, so every request carries it.
		req.Header.Set("Mcp-Protocol-Version", ProtocolVersion)
	}
	// The exchange's status is that of the POST carrying its question: 0
	// until that one is answered, whatever a notification beside it got.
	question := isQuestion(req.Context())
	if question {
		g.d.update(func(st *exchState) { st.status, st.answered = 0, false })
	}
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if question {
		g.d.update(func(st *exchState) { st.status, st.answered = resp.StatusCode, true })
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		g.d.mu.Lock()
		g.d.sid = sid
		g.d.mu.Unlock()
	}
	if resp.StatusCode >= 400 && req.Header.Get("Mcp-Session-Id") != "" {
		// 404 is the specified answer to a dropped session; a TypeScript
		// SDK server answers 400 "No valid session ID".
		peek, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		lost := resp.StatusCode == http.StatusNotFound ||
			(resp.StatusCode == http.StatusBadRequest && bytes.Contains(bytes.ToLower(peek), []byte("session")))
		if lost {
			g.d.update(func(st *exchState) { st.lost = true })
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(peek), resp.Body), resp.Body}
	}
	resp.Body = boundread.New(resp.Body, g.d.bound, func() error {
		g.d.update(func(st *exchState) { st.bound = true })
		return fmt.Errorf("%w of %d bytes", ErrReplyBound, g.d.bound)
	})
	return resp, nil
}

// classify says how a failed exchange ended.
func (d *httpDialer) classify(about string, err error) *Error {
	st := d.state()
	e := &Error{Outcome: NoAnswer, Status: st.status, Err: err}
	switch {
	case st.refused != nil:
		e.Outcome, e.Msg = RefusedByAddress, st.refused.Error()
	case st.redirected != "":
		e.Outcome, e.Msg = Redirected, fmt.Sprintf("the server redirected (%d) to %s, and redirects are refused: an endpoint is configuration, not a page somebody asked to read", st.status, st.redirected)
	case st.bound:
		e.Msg = fmt.Sprintf("the reply passed the %s bound, so it was refused", bytesHuman(d.bound))
	case st.status == http.StatusUnauthorized:
		e.Msg = "the server answered 401 Unauthorized: the credential is missing, refused or expired (chock carries a token and runs no OAuth flow)"
	case st.status == http.StatusForbidden:
		e.Msg = "the server answered 403 Forbidden: the credential does not permit this"
	case st.status >= 300:
		e.Msg = fmt.Sprintf("the server answered %d %s", st.status, http.StatusText(st.status))
	case st.answered:
		// The question was answered 2xx and the reply never came whole:
		// whatever words the library has for it (a stream that "terminated
		// without response", a reconnection that was never attempted),
		// the stream ended early.
		e.Msg = earlyEnd
	default:
		d.mu.Lock()
		sid := d.sid
		d.mu.Unlock()
		e.Msg = reachError(err, sid)
	}
	return e
}

// earlyEnd is chock's own sentence for a reply stream that ended before
// the reply (the call fails and says so).
const earlyEnd = "the stream ended before the reply arrived; the call failed, and nothing of it reached the model"

// reachError words a failure to reach the server at all in chock's
// terms: the network error that stopped it, never the library's account
// of its session (which names the server's session id).
func reachError(err error, sid string) string {
	var ne *net.OpError
	var de *net.DNSError
	switch {
	case errors.As(err, &de):
		return fmt.Sprintf("the server's name could not be resolved: %s", oneLine(de.Error()))
	case errors.As(err, &ne):
		return fmt.Sprintf("the server could not be reached: %s", oneLine(ne.Error()))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection before answering"
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return fmt.Sprintf("the server's certificate was refused: %s", oneLine(ce.Err.Error()))
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() {
		return "the server did not answer in time"
	}
	msg := err.Error()
	if sid != "" {
		msg = strings.ReplaceAll(msg, sid, "…") // the server's session is not for the model, nor the log
	}
	return "the server could not be reached: " + oneLine(msg)
}

// oneLine keeps an error on one line, bounded.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
