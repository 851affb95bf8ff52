package netguard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/lint"
)

func TestWhy(t *testing.T) {
	refused := []string{"127.0.0.1", "127.9.9.9", "::1", "0.0.0.0", "::", "169.254.169.254", "fd00:ec2::254", "100.100.100.200",
		"::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:0.0.0.0", "169.254.1.1", "fe80::1", "224.0.0.1"}
	for _, a := range refused {
		if Why(netip.MustParseAddr(a)) == "" {
			t.Errorf("%s is allowed", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "2606:2800:220:1::1", "10.0.0.7", "192.168.1.1"} {
		if why := Why(netip.MustParseAddr(a)); why != "" {
			t.Errorf("%s refused: %s", a, why)
		}
	}
}

func fake(addrs ...string) func(context.Context, string) ([]netip.Addr, error) {
	return func(context.Context, string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
}

func TestResolve(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name  string
		addrs []string
		want  string // "" allowed, else part of the refusal
	}{
		{"public", []string{"93.184.216.34"}, ""},
		{"loopback", []string{"127.0.0.1"}, "loopback"},
		{"metadata", []string{"169.254.169.254"}, "metadata"},
		{"mapped metadata", []string{"::ffff:169.254.169.254"}, "metadata"},
		{"mixed", []string{"93.184.216.34", "127.0.0.1"}, "loopback"},
		{"unspecified", []string{"0.0.0.0"}, "unspecified"},
		{"too many", strings.Split(strings.Repeat("93.184.216.34,", MaxAddrs+1), ",")[:MaxAddrs+1], "more than the 16 checked"},
	}
	for _, c := range cases {
		ch := &Checker{Lookup: fake(c.addrs...)}
		_, err := ch.Resolve(ctx, "host.example")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: want a refusal with %q, got %v", c.name, c.want, err)
		}
	}
	if _, err := (&Checker{}).Resolve(ctx, "localhost"); !errors.Is(err, ErrRefused) {
		t.Errorf("localhost: %v", err)
	}
	if _, err := (&Checker{}).Resolve(ctx, "[::1]"); !errors.Is(err, ErrRefused) {
		t.Errorf("[::1]: %v", err)
	}
}

// testChecker allows loopback so that a test server can stand in for a
// remote one; everything else is the production machinery.
func testChecker(srv *httptest.Server) *Checker {
	return &Checker{Policy: func(a netip.Addr) string {
		if a.IsLoopback() {
			return ""
		}
		return Why(a)
	}, TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig}
}

func TestClientRefusesRedirectsAndProxies(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "https://example.com/", http.StatusFound)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	t.Setenv("HTTPS_PROXY", "http://192.0.2.1:9") // a proxy that does not exist
	c := testChecker(srv).Client(5 * time.Second)
	resp, err := c.Get(srv.URL + "/")
	if err != nil {
		t.Fatalf("the proxy variable moved the connection: %v", err)
	}
	resp.Body.Close()
	if _, err := c.Get(srv.URL + "/redirect"); !errors.Is(err, ErrRedirect) {
		t.Errorf("redirect: %v", err)
	}
	// The production checker refuses the loopback server outright.
	if _, err := (&Checker{}).Client(5 * time.Second).Get(srv.URL + "/"); !errors.Is(err, ErrRefused) {
		t.Errorf("production checker reached loopback: %v", err)
	}
}

// TestLintAgrees: lint refuses a server url at exactly the literal hosts
// the checker refuses before a dial, link-local and multicast included.
func TestLintAgrees(t *testing.T) {
	c := &Checker{Lookup: func(context.Context, string) ([]netip.Addr, error) { return nil, errors.New("no lookups here") }}
	for _, host := range []string{"169.254.10.10", "[fe80::1]", "224.0.0.1", "[ff02::1]", "127.0.0.1", "[::1]", "0.0.0.0",
		"169.254.169.254", "[::ffff:169.254.169.254]", "[fd00:ec2::254]", "100.100.100.200", "a.localhost", "localhost",
		"203.0.113.10", "[2001:db8::1]", "10.0.0.7"} {
		_, err := c.Resolve(context.Background(), host)
		refused := errors.Is(err, ErrRefused)
		src := `.{ .policy = .{ .allow = .{ "mcp.s.tool.*" } }, .mcp_servers = .{.{ .name = "s", .url = "https://` + host + `/mcp" }} }`
		cfg, ds := config.Load("chock.zon", []byte(src))
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		fired := false
		for _, d := range lint.Run(lint.Input{Config: cfg}) {
			fired = fired || d.Code == lint.CodeServerURLLocal
		}
		if fired != refused {
			t.Errorf("%s: lint refuses %v, the checker refuses %v (%v)", host, fired, refused, err)
		}
	}
}
