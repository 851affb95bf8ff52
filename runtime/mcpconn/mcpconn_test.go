package mcpconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/internal/mcptest"
	"github.com/chockhq/chock/internal/waitfor"
	"github.com/chockhq/chock/runtime/netguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) {
	mcptest.MaybeServe()
	os.Exit(m.Run())
}

// exchanges collects what a server reports.
type exchanges struct {
	mu   sync.Mutex
	list []Exchange
}

func (x *exchanges) add(e Exchange) {
	x.mu.Lock()
	x.list = append(x.list, e)
	x.mu.Unlock()
}

func (x *exchanges) all() []Exchange {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]Exchange(nil), x.list...)
}

func (x *exchanges) last(t *testing.T) Exchange {
	t.Helper()
	l := x.all()
	if len(l) == 0 {
		t.Fatal("no exchange was reported")
	}
	return l[len(l)-1]
}

// loopbackOnly is the test policy of the loopback tests: the production
// policy refuses 127.0.0.1, which is where httptest listens. The
// production policy itself is tested below on resolver answers and, end to
// end, in TestPinnedInNetns.
func loopbackOnly(a netip.Addr) string {
	if a.Unmap().IsLoopback() {
		return ""
	}
	return "not loopback (test policy)"
}

// tlsServer serves h over TLS on 127.0.0.1 and returns the URL under the
// name mcp.example.com (which the test resolver maps to it and the test
// certificate covers) and a checker that trusts it.
func tlsServer(t testing.TB, h http.Handler) (string, *netguard.Checker) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c := &netguard.Checker{
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			if host == "mcp.example.com" {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return nil, fmt.Errorf("no such host %s (test resolver)", host)
		},
		Policy: loopbackOnly,
		TLS:    &tls.Config{RootCAs: pool},
	}
	return "https://mcp.example.com:" + u.Port() + "/mcp", c
}

// opts reports exchanges to x, with budgets no loaded machine reaches.
func opts(x *exchanges) Options {
	return Options{DiscoverTimeout: 15 * time.Second, CallTimeout: 15 * time.Second, OnExchange: x.add}
}

// recordAuth wraps a handler and records the Authorization header of
// every request, DELETE included.
type recordAuth struct {
	h     http.Handler
	mu    sync.Mutex
	seen  []string
	proto []string
}

func (r *recordAuth) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.Header.Get("Authorization"))
	r.proto = append(r.proto, req.Header.Get("Mcp-Protocol-Version"))
	r.mu.Unlock()
	r.h.ServeHTTP(w, req)
}

func TestRemoteGoSDKServer(t *testing.T) {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer("") },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}) // it answers mcp.example.com on 127.0.0.1
	rec := &recordAuth{h: h}
	u, checker := tlsServer(t, rec)
	var x exchanges
	s, err := OpenRemote(context.Background(), Remote{Name: "probe", URL: u, Headers: map[string]string{"Authorization": "Bearer tok-123456"}, Net: checker}, opts(&x))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "echo,env,net" {
		t.Fatalf("tools = %v", names)
	}
	res, err := s.Call(context.Background(), "echo", json.RawMessage(`{"message":"over TLS"}`))
	if err != nil || res.Text != "echo: over TLS" {
		t.Fatalf("call = %+v, %v", res, err)
	}
	// Arguments go on as they came, and only a JSON object does.
	for _, bad := range []string{`[1]`, `"x"`, `{"message":`, ` 7`} {
		if _, err := s.Call(context.Background(), "echo", json.RawMessage(bad)); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
			t.Errorf("arguments %s: %v", bad, err)
		}
	}
	if res, err := s.Call(context.Background(), "echo", json.RawMessage(" \n{\"message\":\"spaced\"}")); err != nil || res.Text != "echo: spaced" {
		t.Fatalf("call = %+v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := x.all()
	if len(got) != 3 || got[0].About != Discover || got[0].Outcome != Answered || got[0].Status != 200 ||
		got[1].About != "echo" || got[1].Outcome != Answered || got[0].Host != "mcp.example.com" {
		t.Fatalf("exchanges = %+v", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	sawDelete := false
	for i, s := range rec.seen {
		if !strings.HasSuffix(s, " Bearer tok-123456") {
			t.Errorf("request %d carried %q", i, s)
		}
		if strings.HasPrefix(s, "GET") {
			t.Errorf("a GET was sent: %s", s)
		}
		sawDelete = sawDelete || strings.HasPrefix(s, "DELETE")
		if rec.proto[i] != ProtocolVersion {
			t.Errorf("request %d (%s) has protocol version %q", i, s, rec.proto[i])
		}
	}
	if !sawDelete {
		t.Error("the session was not ended with DELETE")
	}
}

func TestRemoteNamedHeader(t *testing.T) {
	hs := mcptest.NewHostile(mcptest.Honest)
	u, checker := tlsServer(t, hs)
	s, err := OpenRemote(context.Background(), Remote{Name: "probe", URL: u, Headers: map[string]string{"X-Api-Key": "key-abcdef"}, Net: checker}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := hs.LastHeader()
	if h.Get("X-Api-Key") != "key-abcdef" || h.Get("Authorization") != "" {
		t.Fatalf("headers = %v", h)
	}
}

func TestRemoteRefusesBadHeaderValue(t *testing.T) {
	_, err := OpenRemote(context.Background(), Remote{Name: "p", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer a\nb"}}, Options{})
	if err == nil || strings.Contains(err.Error(), "a\nb") {
		t.Fatalf("err = %v", err)
	}
}

func TestCheckURL(t *testing.T) {
	for _, u := range []string{"http://mcp.example.com/mcp", "https://user:pw@mcp.example.com/", "https:///mcp", "ftp://x/", "%zz"} {
		if _, err := CheckURL(u); err == nil {
			t.Errorf("%s: accepted", u)
		}
	}
	if _, err := CheckURL("https://mcp.notion.com/mcp"); err != nil {
		t.Error(err)
	}
}

// open starts a server against a hostile peer with short budgets.
func openHostile(t *testing.T, f mcptest.Fault) (*Server, *mcptest.Hostile, *exchanges, error) {
	t.Helper()
	hs := mcptest.NewHostile(f)
	u, checker := tlsServer(t, hs)
	x := &exchanges{}
	o := Options{DiscoverTimeout: 15 * time.Second, CallTimeout: 15 * time.Second, OnExchange: x.add}
	if f == mcptest.SlowDiscover || f == mcptest.SlowCall {
		// The budgets, made short by the option the CLI sets too.
		o.DiscoverTimeout, o.CallTimeout = time.Second, time.Second
		if f == mcptest.SlowCall {
			o.DiscoverTimeout = 15 * time.Second
		}
	}
	s, err := OpenRemote(context.Background(), Remote{Name: "hostile", URL: u, Net: checker}, o)
	if s != nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, hs, x, err
}

func wantError(t *testing.T, err error, outcome Outcome, text string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *Error", err, err)
	}
	if e.Outcome != outcome || !strings.Contains(e.Error(), text) {
		t.Fatalf("err = %q outcome %s, want %s containing %q", e.Error(), e.Outcome, outcome, text)
	}
	return e
}

func TestRedirectRefused(t *testing.T) {
	_, hs, x, err := openHostile(t, mcptest.Redirect)
	wantError(t, err, Redirected, "redirects are refused")
	if ex := x.last(t); ex.Outcome != Redirected || ex.Status != 307 || ex.About != Discover {
		t.Fatalf("exchange = %+v", ex)
	}
	if reqs, _, _ := hs.Snapshot(); len(reqs) != 1 {
		t.Fatalf("requests = %v, want the one redirected", reqs)
	}
}

func TestUnauthorizedReported(t *testing.T) {
	_, hs, x, err := openHostile(t, mcptest.Unauthorized)
	wantError(t, err, NoAnswer, "401 Unauthorized")
	if ex := x.last(t); ex.Status != 401 {
		t.Fatalf("exchange = %+v", ex)
	}
	if reqs, _, _ := hs.Snapshot(); len(reqs) != 1 {
		t.Fatalf("requests = %v: resource_metadata must not be followed", reqs)
	}
}

func TestOldProtocolRefused(t *testing.T) {
	_, _, _, err := openHostile(t, mcptest.OldProtocol)
	if err == nil || !strings.Contains(err.Error(), "2025-11-25") {
		t.Fatalf("err = %v", err)
	}
}

func TestSlowDiscover(t *testing.T) {
	start := time.Now()
	_, _, x, err := openHostile(t, mcptest.SlowDiscover)
	wantError(t, err, NoAnswer, "no answer within 1s")
	if time.Since(start) > 30*time.Second {
		t.Fatal("the discover budget did not hold")
	}
	// The tool list never answered: its status is 0, not the 202 the
	// initialized notification before it got.
	if ex := x.last(t); ex.About != Discover || ex.Status != 0 || ex.Outcome != NoAnswer {
		t.Fatalf("exchange = %+v", ex)
	}
}

func TestSlowCall(t *testing.T) {
	s, _, x, err := openHostile(t, mcptest.SlowCall)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Call(context.Background(), "echo", nil)
	wantError(t, err, NoAnswer, "no answer within 1s")
	if ex := x.last(t); ex.About != "echo" || ex.Outcome != NoAnswer || ex.Status != 0 {
		t.Fatalf("exchange = %+v", ex)
	}
}

func TestEndlessReply(t *testing.T) {
	for _, f := range []mcptest.Fault{mcptest.Endless, mcptest.EndlessJSON} {
		t.Run(string(f), func(t *testing.T) {
			s, _, _, err := openHostile(t, f)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Call(context.Background(), "echo", nil)
			wantError(t, err, NoAnswer, "1 MiB bound")
		})
	}
}

// TestEarlyStreamEnd: a reply stream that ends before the result, with or
// without event ids (which the go-sdk would try to resume), fails the
// call in chock's own words: no library text, no session id.
func TestEarlyStreamEnd(t *testing.T) {
	for _, f := range []mcptest.Fault{mcptest.EarlyEnd, mcptest.EarlyEndIDs} {
		t.Run(string(f), func(t *testing.T) {
			s, _, x, err := openHostile(t, f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Call(context.Background(), "echo", nil)
			if res != nil {
				t.Fatalf("a half answer: %+v", res)
			}
			want := "server hostile, tool echo: " + earlyEnd
			if err == nil || err.Error() != want {
				t.Fatalf("got %v, want %q", err, want)
			}
			if ex := x.last(t); ex.Status != 200 || ex.Outcome != NoAnswer {
				t.Errorf("exchange %+v", ex)
			}
			// The next call opens a new session and is answered... or fails
			// the same way, never with the library's words.
			_, err = s.Call(context.Background(), "echo", nil)
			if err != nil && err.Error() != want {
				t.Errorf("second call: %v", err)
			}
		})
	}
}

// TestSessionDroppedOnce: a 404, or the unknown-session 400 servers built
// on the TypeScript SDK send, opens a new session and asks once more.
func TestSessionDroppedOnce(t *testing.T) {
	for _, f := range []mcptest.Fault{mcptest.Drop404Once, mcptest.Drop400Once} {
		t.Run(string(f), func(t *testing.T) {
			s, hs, x, err := openHostile(t, f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Call(context.Background(), "echo", nil)
			if err != nil || res.Text != "answered" {
				t.Fatalf("call = %+v, %v", res, err)
			}
			if _, inits, _ := hs.Snapshot(); inits != 2 {
				t.Fatalf("initialize sent %d times, want 2", inits)
			}
			if ex := x.last(t); ex.Outcome != Answered || ex.Status != 200 {
				t.Fatalf("exchange = %+v", ex)
			}
		})
	}
}

func TestSessionDroppedTwice(t *testing.T) {
	s, hs, x, err := openHostile(t, mcptest.Drop404Always)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Call(context.Background(), "echo", nil)
	wantError(t, err, NoAnswer, "dropped the session twice")
	if _, inits, _ := hs.Snapshot(); inits != 2 {
		t.Fatalf("initialize sent %d times, want 2", inits)
	}
	if ex := x.last(t); ex.Status != 404 {
		t.Fatalf("exchange = %+v", ex)
	}
}

func TestServerRequestsCountedNeverAnswered(t *testing.T) {
	s, hs, _, err := openHostile(t, mcptest.ServerRequests)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Call(context.Background(), "echo", nil)
	if err != nil || res.Text != "answered" {
		t.Fatalf("call = %+v, %v", res, err)
	}
	got := s.ServerMessages()
	for _, m := range []string{"sampling/createMessage", "elicitation/create", "roots/list", "notifications/tools/list_changed"} {
		if got[m] != 1 {
			t.Errorf("%s counted %d times", m, got[m])
		}
	}
	if _, _, responses := hs.Snapshot(); responses != 0 {
		t.Fatalf("the client answered %d server requests", responses)
	}
}

func TestToolListFixed(t *testing.T) {
	s, _, _, err := openHostile(t, mcptest.ToolListChange)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Tools()); n != 1 {
		t.Fatalf("tools = %d after a list change", n)
	}
	if _, err := s.Call(context.Background(), "added-later", nil); err == nil || !strings.Contains(err.Error(), "fixed") {
		t.Fatalf("a tool added after start was called: %v", err)
	}
	if s.ServerMessages()["notifications/tools/list_changed"] != 1 {
		t.Fatal("the list change was not counted")
	}
}

// TestAddressesRefused runs the production address policy on resolver
// answers: a refused name gets no HTTP status, as nothing is dialled.
func TestAddressesRefused(t *testing.T) {
	answers := map[string][]string{
		"loop.example.com":   {"127.0.0.1"},
		"loop6.example.com":  {"::1"},
		"mapped.example.com": {"::ffff:127.0.0.1"},
		"meta.example.com":   {"169.254.169.254"},
		"meta6.example.com":  {"::ffff:169.254.169.254"},
		"zero.example.com":   {"0.0.0.0"},
		"zero6.example.com":  {"::"},
		"mixed.example.com":  {"203.0.113.7", "127.0.0.1"},
	}
	var many []string
	for i := range netguard.MaxAddrs + 1 {
		many = append(many, fmt.Sprintf("203.0.113.%d", i+1))
	}
	answers["many.example.com"] = many
	checker := &netguard.Checker{Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, a := range answers[host] {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}}
	for host := range answers {
		t.Run(host, func(t *testing.T) {
			x := &exchanges{}
			_, err := OpenRemote(context.Background(), Remote{Name: "far", URL: "https://" + host + "/mcp", Net: checker}, opts(x))
			wantError(t, err, RefusedByAddress, host)
			if ex := x.last(t); ex.Outcome != RefusedByAddress || ex.Status != 0 || ex.Host != host {
				t.Fatalf("exchange = %+v", ex)
			}
		})
	}
	// Literal addresses are checked too.
	for _, u := range []string{"https://127.0.0.1/mcp", "https://[::1]/mcp", "https://169.254.169.254/mcp", "https://localhost/mcp"} {
		_, err := OpenRemote(context.Background(), Remote{Name: "far", URL: u}, opts(&exchanges{}))
		wantError(t, err, RefusedByAddress, "")
	}
}

// TestProxyIgnored sets HTTPS_PROXY to a server that records what reaches
// it: nothing does, and the MCP server is reached directly.
func TestProxyIgnored(t *testing.T) {
	var proxied sync.Map
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Store(r.Method+" "+r.Host, true)
		http.Error(w, "proxy", http.StatusBadGateway)
	}))
	defer proxy.Close()
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "ALL_PROXY"} {
		t.Setenv(v, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	s, hs, _, err := openHostile(t, mcptest.Honest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(context.Background(), "echo", nil); err != nil {
		t.Fatal(err)
	}
	n := 0
	proxied.Range(func(k, v any) bool { n++; return true })
	if reqs, _, _ := hs.Snapshot(); n != 0 || len(reqs) < 3 {
		t.Fatalf("proxy saw %d requests; server saw %v", n, reqs)
	}
}

func helper(t *testing.T, extra string, noNet bool, env ...string) (*Server, *exchanges, error) {
	t.Helper()
	argv, henv := mcptest.HelperCommand(t, extra)
	x := &exchanges{}
	s, err := OpenLocal(context.Background(), Local{Name: "helper", Argv: argv, Env: append(henv, env...), NoNetwork: noNet},
		Options{DiscoverTimeout: 20 * time.Second, CallTimeout: 20 * time.Second, OnExchange: x.add})
	if s != nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, x, err
}

func TestLocalEnvironmentIsOnlyWhatItIsGiven(t *testing.T) {
	t.Setenv("PARENT_SECRET", "must-not-reach")
	s, x, err := helper(t, "", false, "PATH=/usr/bin:/bin", "GIVEN=visible")
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Call(context.Background(), "env", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := mcptest.ServeEnv + "=\nGIVEN=visible\nPATH=/usr/bin:/bin"
	if res.Text != want {
		t.Fatalf("env = %q, want %q", res.Text, want)
	}
	if ex := x.last(t); ex.Host != "" || ex.Status != 0 || ex.Outcome != Answered {
		t.Fatalf("exchange = %+v", ex)
	}
}

func TestLocalNoNetwork(t *testing.T) {
	s, _, err := helper(t, "", true)
	if err != nil {
		if os.Getenv("CI") == "" && strings.Contains(err.Error(), "namespace") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	res, err := s.Call(context.Background(), "net", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "lo down 0" {
		t.Fatalf("interfaces in the server's namespace = %q, want only lo, down", res.Text)
	}
}

func TestLocalTooManyTools(t *testing.T) {
	_, _, err := helper(t, fmt.Sprintf("many:%d", action.MaxTools-2), false) // 3 + 62 = 65
	if err == nil || !strings.Contains(err.Error(), "more than 64 tools") {
		t.Fatalf("err = %v", err)
	}
	if _, _, err := helper(t, fmt.Sprintf("many:%d", action.MaxTools-3), false); err != nil {
		t.Fatalf("64 tools: %v", err)
	}
}

// TestLocalProcessGroupKilled starts the helper behind a shell that leaves
// a child running; closing the server kills the whole group.
func TestLocalProcessGroupKilled(t *testing.T) {
	argv, env := mcptest.HelperCommand(t, "")
	sh := []string{"/bin/sh", "-c", `sleep 300 & exec "$0" "$1"`, argv[0], argv[1]}
	s, err := OpenLocal(context.Background(), Local{Name: "group", Argv: sh, Env: append(env, "PATH=/usr/bin:/bin")}, Options{DiscoverTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	pgid := s.Pid()
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("group %d not running: %v", pgid, err)
	}
	s.Close()
	// Nothing tells of a process group emptying: kill(-pgid, 0) is asked.
	if !waitfor.PollWithin(10*time.Second, func() bool { return syscall.Kill(-pgid, 0) != nil }) {
		t.Fatalf("process group %d still alive after Close", pgid)
	}
}

func TestLocalMissingCommand(t *testing.T) {
	_, err := OpenLocal(context.Background(), Local{Name: "gone", Argv: []string{"/nonexistent/mcp-server"}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/mcp-server") {
		t.Fatalf("err = %v", err)
	}
}

func TestEverythingStdio(t *testing.T) {
	node, script := mcptest.Everything(t)
	x := &exchanges{}
	s, err := OpenLocal(context.Background(), Local{Name: "everything", Argv: []string{node, script, "stdio"},
		Env: []string{"PATH=/usr/bin:/bin", "ONLY_THIS=visible"}, NoNetwork: true}, Options{OnExchange: x.add})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	names := map[string]bool{}
	for _, tl := range s.Tools() {
		names[tl.Name] = true
	}
	for _, n := range []string{"echo", "get-env", "get-sum"} {
		if !names[n] {
			t.Fatalf("tools = %v, no %s", names, n)
		}
	}
	if names["trigger-sampling-request"] || names["trigger-elicitation-request"] || names["get-roots-list"] {
		t.Fatalf("tools = %v: a capability was advertised", names)
	}
	res, err := s.Call(context.Background(), "echo", json.RawMessage(`{"message":"hello"}`))
	if err != nil || res.Text != "Echo: hello" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	res, err = s.Call(context.Background(), "get-env", nil)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(res.Text), &env); err != nil {
		t.Fatalf("get-env = %q: %v", res.Text, err)
	}
	if len(env) != 2 || env["ONLY_THIS"] != "visible" {
		t.Fatalf("server environment = %v", env)
	}
}

// TestLocalReplyBound: a stdio frame past the bound is refused, not read.
func TestLocalReplyBound(t *testing.T) {
	s, x, err := helper(t, "big", false)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Call(context.Background(), "big", json.RawMessage(`{"size":1000}`))
	if err != nil || len(res.Text) != 1000 {
		t.Fatalf("small reply: %v", err)
	}
	_, err = s.Call(context.Background(), "big", json.RawMessage(fmt.Sprintf(`{"size":%d}`, MaxReply+1)))
	wantError(t, err, NoAnswer, "1 MiB bound")
	if ex := x.last(t); ex.Outcome != NoAnswer || ex.About != "big" {
		t.Fatalf("exchange = %+v", ex)
	}
}

// TestLocalSlowCallKeepsTheServer: a call past its budget fails; the
// server, one process for the session, answers the next call.
func TestLocalSlowCallKeepsTheServer(t *testing.T) {
	argv, env := mcptest.HelperCommand(t, "sleep")
	s, err := OpenLocal(context.Background(), Local{Name: "slow", Argv: argv, Env: env}, Options{DiscoverTimeout: 20 * time.Second, CallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Call(context.Background(), "sleep", json.RawMessage(`{"ms":10000}`))
	wantError(t, err, NoAnswer, "no answer within 1s")
	res, err := s.Call(context.Background(), "sleep", json.RawMessage(`{"ms":1}`))
	if err != nil || res.Text != "slept" {
		t.Fatalf("after a time-out: %+v, %v", res, err)
	}
}

// TestReachErrorHidesTheSession: the server's session id, whatever it
// holds, is not repeated in a message.
func TestReachErrorHidesTheSession(t *testing.T) {
	sid := "s3ss)on-1d"
	msg := reachError(fmt.Errorf(`calling "tools/call": failed to reconnect (session ID: %s): boom`, sid), sid)
	if strings.Contains(msg, sid) || strings.Contains(msg, "on-1d") {
		t.Fatalf("%q", msg)
	}
}

// TestLocalDaemonDiesWithTheServer: a server that leaves a daemon behind
// (fork, setsid, fork), holding its output open, does not outlive Close,
// and Close does not wait on it.
func TestLocalDaemonDiesWithTheServer(t *testing.T) {
	argv, env := mcptest.HelperCommand(t, "")
	marker := fmt.Sprintf("300.%d3", os.Getpid())
	sh := []string{"/bin/sh", "-c", `(setsid sh -c 'sleep ` + marker + `' &) ; exec "$0" "$1"`, argv[0], argv[1]}
	s, err := OpenLocal(context.Background(), Local{Name: "daemon", Argv: sh, Env: append(env, "PATH=/usr/bin:/bin")}, Options{DiscoverTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	daemons := func() []int {
		var pids []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
			if strings.Contains(string(b), marker) && !strings.Contains(string(st), ") Z ") {
				pid, _ := strconv.Atoi(e.Name())
				pids = append(pids, pid)
			}
		}
		return pids
	}
	// Nothing tells of another process starting: its command line is
	// looked for.
	waitfor.Poll(t, 5*time.Second, "the daemon starting", func() bool { return len(daemons()) > 0 })
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Close waited on the daemon")
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range daemons() {
		if ok, err := waitfor.Exit(pid, time.Until(deadline)); !ok || err != nil {
			t.Fatalf("the server's daemon outlived it: %v", err)
		}
	}
}
