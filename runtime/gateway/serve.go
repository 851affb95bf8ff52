package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves one connection over t (the process's stdin and
// stdout): one session, from the first message to the client closing the
// stream or ctx ending, when the session ends with the context's cause.
func (g *Gateway) ServeStdio(ctx context.Context, t mcp.Transport) error {
	c, err := g.newConn(ctx, "stdio")
	if err != nil {
		return err
	}
	ss, err := c.server.Connect(ctx, t, nil)
	if err != nil {
		c.end("connecting failed: " + err.Error())
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-done
		return c.end(context.Cause(ctx).Error())
	case err := <-done:
		reason := "the client closed the connection"
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
			reason = "the connection failed: " + err.Error()
		}
		return c.end(reason)
	}
}

// NewToken is a fresh bearer token for the HTTP transport: 32 random
// bytes, URL-safe base64.
func NewToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// IdleTimeout ends an HTTP session that has had no request for this long;
// a client that comes back after it gets 404 and opens a new session, as
// the protocol says it must.
const IdleTimeout = time.Hour

// maxInitialize bounds what is read of a POST that may open a session,
// to see whether it is an initialize (the go-sdk reads it again, under
// its own bound).
const maxInitialize = 64 << 10

// Handler serves MCP's Streamable HTTP transport at /mcp, every request
// carrying "Authorization: Bearer TOKEN" (401 otherwise), with the go-sdk's
// own protections on (a Host that is not this machine's answered 403, a
// body over 4 MiB 413) and cross-origin browser requests refused.
//
// A client speaking 2025-11-25 or before opens a session with initialize:
// each such session is one agent session. A 2026-07-28 request carries no
// session: every one of them is served by one sessionless agent session,
// opened at the first and ended with the gateway.
func (g *Gateway) Handler(token string) http.Handler {
	stateful := mcp.NewStreamableHTTPHandler(g.sessionServer, &mcp.StreamableHTTPOptions{SessionTimeout: IdleTimeout})
	stateless := mcp.NewStreamableHTTPHandler(g.sessionlessServer, &mcp.StreamableHTTPOptions{Stateless: true})
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
			stateless.ServeHTTP(w, r)
			return
		}
		sl := &slot{}
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && opensSession(r) {
			r = r.WithContext(context.WithValue(r.Context(), slotKey{}, sl))
		}
		stateful.ServeHTTP(w, r)
		if sl.c != nil {
			g.follow(sl.c)
		}
	})
	want := []byte("Bearer " + token)
	guarded := http.NewCrossOriginProtection().Handler(inner)
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="chock"`)
			http.Error(w, "Unauthorized: chock mcp serve wants Authorization: Bearer <the token it printed, or $CHOCK_GATEWAY_TOKEN>", http.StatusUnauthorized)
			return
		}
		guarded.ServeHTTP(w, r)
	}))
	return mux
}

// opensSession says whether a POST without a session is an initialize
// (the one message that opens a session), putting the body back.
func opensSession(r *http.Request) bool {
	if r.Body == nil {
		return false
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxInitialize+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
	if err != nil || len(b) > maxInitialize {
		return false
	}
	type message struct {
		Method string `json:"method"`
	}
	var m message
	if json.Unmarshal(b, &m) == nil {
		return m.Method == "initialize"
	}
	var batch []message // 2025-03-26 let a client batch its messages
	if json.Unmarshal(b, &batch) == nil {
		for _, m := range batch {
			if m.Method == "initialize" {
				return true
			}
		}
	}
	return false
}

type readCloser struct {
	io.Reader
	io.Closer
}

// slot carries the connection an initialize opens between the go-sdk's
// look-ups of the server for that one request.
type slot struct {
	c   *conn
	err error
}

type slotKey struct{}

// sessionServer is the server of a new 2025-11-25 session: a connection
// of its own, opened at its initialize. Every other request is the
// go-sdk's to route to its session; for them the template answers, of
// which only the protocol versions are read.
func (g *Gateway) sessionServer(r *http.Request) *mcp.Server {
	sl, _ := r.Context().Value(slotKey{}).(*slot)
	if sl == nil {
		return g.template
	}
	if sl.c == nil && sl.err == nil {
		g.mu.Lock()
		n := len(g.conns)
		g.mu.Unlock()
		if n >= MaxConnections {
			sl.err = errors.New("too many connections")
			g.logf("a new session refused: %d connections are open, the most there may be", n)
			return nil
		}
		sl.c, sl.err = g.newConn(context.WithoutCancel(r.Context()), "streamable_http")
		if sl.err != nil {
			g.logf("a new session failed: %v", sl.err)
		}
	}
	if sl.c == nil {
		return nil
	}
	return sl.c.server
}

// follow ends c's session when its client's session ends: at DELETE, the
// idle timeout, or at once when its initialize opened none.
func (g *Gateway) follow(c *conn) {
	var sessions []*mcp.ServerSession
	for ss := range c.server.Sessions() {
		sessions = append(sessions, ss)
	}
	if len(sessions) == 0 {
		c.end("the client's initialize opened no session")
		return
	}
	go func() {
		for _, ss := range sessions {
			ss.Wait()
		}
		c.end("the client's session ended")
	}()
}

// sessionlessServer is the server of every 2026-07-28 request over HTTP:
// one connection, opened at the first such request.
func (g *Gateway) sessionlessServer(r *http.Request) *mcp.Server {
	g.sessionlessMu.Lock()
	defer g.sessionlessMu.Unlock()
	if g.sessionless == nil {
		c, err := g.newConn(context.WithoutCancel(r.Context()), "streamable_http (sessionless)")
		if err != nil {
			g.logf("the sessionless session failed: %v", err)
			return nil
		}
		g.sessionless = c
	}
	return g.sessionless.server
}
