package egress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chockhq/chock/internal/netaddr"
)

// byHost sorts records by host, then port: they are logged as each
// connection ends, in no set order.
func byHost(rs []Record) []Record {
	slices.SortStableFunc(rs, func(a, b Record) int {
		if c := strings.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		return a.Port - b.Port
	})
	return rs
}

// hosts is a resolver over a table, recording every name looked up.
type hosts struct {
	mu     sync.Mutex
	table  map[string][]netip.Addr
	looked []string
}

func (h *hosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.looked = append(h.looked, host)
	if !strings.HasSuffix(host, ".") {
		return nil, fmt.Errorf("%s is looked up unrooted, so a search domain may be appended", host)
	}
	if a, ok := h.table[strings.TrimSuffix(host, ".")]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

type fixture struct {
	t       *testing.T
	proxy   *Proxy
	call    *Call
	http    string
	socks   string
	hosts   *hosts
	mu      sync.Mutex
	records []Record
	server  string // host:port of the upstream (127.0.0.1)
}

// newFixture serves a call whose policy allows the hosts in allow, with
// the upstream an HTTP server on 127.0.0.1 that the address rule lets
// through in this test only (the product's rule refuses loopback: see
// TestNameOnLoopbackIsRefused).
func newFixture(t *testing.T, allow ...string) *fixture {
	f := &fixture{t: t, hosts: &hosts{table: map[string][]netip.Addr{}}}
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { up.Close() })
	f.server = up.Addr().String()
	go http.Serve(up, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "hello %s %s %s proxy-auth=%q", r.Method, r.URL.Path, body, r.Header.Get("Proxy-Authorization"))
	}))
	for _, h := range []string{"allowed.example", "denied.example"} {
		f.hosts.table[h] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	f.proxy = &Proxy{Resolver: f.hosts, AddrWhy: func(netip.Addr) string { return "" },
		Log: func(r Record) { f.mu.Lock(); f.records = append(f.records, r); f.mu.Unlock() }}
	hl, _ := net.Listen("tcp", "127.0.0.1:0")
	sl, _ := net.Listen("tcp", "127.0.0.1:0")
	f.http, f.socks = hl.Addr().String(), sl.Addr().String()
	d := DeciderFunc(func(_ context.Context, r Request) Verdict {
		a := "net.connect." + r.Host
		for _, h := range allow {
			if h == r.Host {
				return Verdict{Allow: true, Action: a}
			}
		}
		return Verdict{Action: a, Refusal: "refused by chock: " + a + " is deny, by the project's default"}
	})
	f.call = f.proxy.Serve(context.Background(), d, hl, sl)
	t.Cleanup(f.call.Close)
	return f
}

func (f *fixture) port() string { _, p, _ := net.SplitHostPort(f.server); return p }

func (f *fixture) client() *http.Client {
	u, _ := url.Parse("http://" + f.http)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}}
}

func (f *fixture) done() []Record {
	f.call.Close()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.records
}

func TestPlainRequestAllowedAndRefused(t *testing.T) {
	f := newFixture(t, "allowed.example")
	resp, err := f.client().Post("http://allowed.example:"+f.port()+"/x", "text/plain", strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != `hello POST /x body proxy-auth=""` {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	resp, err = f.client().Get("http://denied.example:" + f.port() + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "net.connect.denied.example is deny, by the project's default") {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	recs := byHost(f.done())
	if len(recs) != 2 || recs[0].Outcome != Connected || recs[0].Sent == 0 || recs[0].Received == 0 || recs[1].Outcome != RefusedByPolicy {
		t.Fatalf("%+v", recs)
	}
	for _, l := range f.hosts.looked {
		if l == "denied.example." {
			t.Error("a refused name was looked up: the lookup carries it out")
		}
	}
}

func TestConnectTunnel(t *testing.T) {
	f := newFixture(t, "allowed.example")
	conn, err := net.Dial("tcp", f.http)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The tunnelled request follows the CONNECT at once, in one write.
	fmt.Fprintf(conn, "CONNECT allowed.example:%s HTTP/1.1\r\nHost: allowed.example\r\n\r\nGET /t HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", f.port())
	all, _ := io.ReadAll(conn)
	if !bytes.HasPrefix(all, []byte("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK")) || !bytes.Contains(all, []byte("hello GET /t")) {
		t.Fatalf("%q", all)
	}
	conn2, _ := net.Dial("tcp", f.http)
	defer conn2.Close()
	fmt.Fprintf(conn2, "CONNECT denied.example:443 HTTP/1.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn2), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 403 || !strings.Contains(string(b), "net.connect.denied.example") {
		t.Fatalf("%d %q", resp.StatusCode, b)
	}
	recs := byHost(f.done())
	if len(recs) != 2 || recs[0].Via != "connect" || recs[0].Addr.String() != "127.0.0.1" || recs[0].Sent == 0 || recs[1].Port != 443 {
		t.Fatalf("%+v", recs)
	}
}

func socksDial(t *testing.T, addr string, atyp byte, host []byte, port int) (net.Conn, byte) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write([]byte{5, 1, 0})
	var m [2]byte
	io.ReadFull(conn, m[:])
	req := []byte{5, 1, 0, atyp}
	if atyp == 3 {
		req = append(req, byte(len(host)))
	}
	req = append(req, host...)
	req = binary.BigEndian.AppendUint16(req, uint16(port))
	conn.Write(req)
	var rep [10]byte
	io.ReadFull(conn, rep[:])
	return conn, rep[1]
}

func TestSOCKS(t *testing.T) {
	f := newFixture(t, "allowed.example")
	var port int
	fmt.Sscan(f.port(), &port)
	conn, code := socksDial(t, f.socks, 3, []byte("allowed.example"), port)
	if code != 0 {
		t.Fatalf("reply %d", code)
	}
	fmt.Fprintf(conn, "GET /s HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	all, _ := io.ReadAll(conn)
	conn.Close()
	if !bytes.Contains(all, []byte("hello GET /s")) {
		t.Fatalf("%q", all)
	}
	_, code = socksDial(t, f.socks, 3, []byte("denied.example"), port)
	if code != socksNotAllowed {
		t.Fatalf("denied: reply %d", code)
	}
	_, code = socksDial(t, f.socks, 3, []byte("allowed.example\x00.evil"), port)
	if code != socksNotAllowed {
		t.Fatalf("NUL: reply %d", code)
	}
	_, code = socksDial(t, f.socks, 1, []byte{192, 0, 2, 1}, 80)
	if code != socksNotAllowed {
		t.Fatalf("address: reply %d", code)
	}
	recs := byHost(f.done())
	outcomes := []string{}
	for _, r := range recs {
		outcomes = append(outcomes, r.Outcome)
	}
	if strings.Join(outcomes, " ") != "refused_by_policy connected refused_malformed refused_by_policy" {
		t.Fatalf("%v", outcomes)
	}
}

// TestNameOnLoopbackIsRefused: with the product's address rule an
// allowed name that resolves to loopback is refused, and so is one that
// resolves to an address of this machine.
func TestNameOnLoopbackIsRefused(t *testing.T) {
	f := newFixture(t, "allowed.example", "own.example")
	f.proxy.AddrWhy = nil
	own := ""
	if addrs, _ := net.InterfaceAddrs(); len(addrs) > 0 {
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.(*net.IPNet).IP); ok && netaddr.Why(ip) == "" {
				f.hosts.table["own.example"] = []netip.Addr{ip}
				own = ip.String()
			}
		}
	}
	for host, want := range map[string]string{"allowed.example": "127.0.0.1, a loopback address", "own.example": own + ", an address of this machine"} {
		if host == "own.example" && own == "" {
			continue
		}
		resp, err := f.client().Get("http://" + host + ":" + f.port() + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %q", host, resp.StatusCode, b)
		}
	}
}

func TestCleanHost(t *testing.T) {
	for in, want := range map[string]string{
		"Example.COM": "example.com", "example.com.": "example.com", "10.0.0.7": "10.0.0.7", "[2001:DB8::1]": "2001:db8::1",
		"2001:db8::1": "2001:db8::1", "_srv.example": "_srv.example", "xn--bcher-kva.example": "xn--bcher-kva.example",
	} {
		if got, err := CleanHost(in); err != nil || got != want {
			t.Errorf("CleanHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", ".", "a..b", "example.com..", "a\x00.example", "user@example.com", "a%2eb", "a b", "127.1", "0x7f.1", "a.0x7f",
		"bücher.example", "[fe80::1%lo]", "fe80::1%lo", strings.Repeat("a", 64) + ".com", "a.2130706433", "[10.0.0.1]", "a\n.com"} {
		if got, err := CleanHost(in); err == nil {
			t.Errorf("CleanHost(%q) = %q, want an error", in, got)
		}
	}
}

func FuzzCleanHost(f *testing.F) {
	for _, s := range []string{"example.com", "[::1]", "a\x00b", "127.1", "Ex.AMPLE."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := CleanHost(s)
		if err != nil {
			return
		}
		if again, err := CleanHost(h); err != nil || again != h {
			t.Fatalf("CleanHost(%q) = %q, which cleans to %q, %v", s, h, again, err)
		}
		for i := 0; i < len(h); i++ {
			if h[i] < 0x21 || h[i] > 0x7e || h[i] == '@' || h[i] == '%' {
				t.Fatalf("CleanHost(%q) = %q holds byte 0x%02x", s, h, h[i])
			}
		}
	})
}

func FuzzReadSOCKS(f *testing.F) {
	f.Add([]byte{5, 1, 0, 5, 1, 0, 3, 7, 'e', 'x', '.', 'c', 'o', 'm', 0, 80})
	f.Add([]byte{5, 1, 0, 5, 1, 0, 1, 10, 0, 0, 1, 0, 80})
	f.Add([]byte{5, 1, 0, 5, 3, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 53})
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := readSOCKS(bufio.NewReader(bytes.NewReader(b)), io.Discard)
		if err == nil && (req.cmd != socksConnect || req.port < 0 || req.port > 65535) {
			t.Fatalf("%+v", req)
		}
	})
}
