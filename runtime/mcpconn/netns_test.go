package mcpconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/mcptest"
	"github.com/chockhq/chock/internal/waitfor"
	"github.com/chockhq/chock/runtime/netguard"
)

// testAddr is in TEST-NET-3 (RFC 5737): global unicast to the production
// address policy, and only ever added inside a namespace this test makes.
const testAddr = "203.0.113.10"

const inNetnsEnv = "CHOCK_TEST_IN_NETNS"

// TestPinnedInNetns reaches the real server-everything over Streamable
// HTTP behind TLS, with the production address policy, on an address
// inside a network namespace the test makes for itself: the test binary
// runs itself again under unshare, where the namespace has only its own
// loopback interface and the test address.
func TestPinnedInNetns(t *testing.T) {
	if os.Getenv(inNetnsEnv) == "" {
		mcptest.Everything(t) // skip (or fail under CI) before making anything
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		setup := fmt.Sprintf(`ip link set lo up && ip addr add %s/32 dev lo && exec "$0" -test.run='^TestPinnedInNetns$' -test.v -test.count=1`, testAddr)
		cmd := exec.Command("unshare", "-rn", "sh", "-c", setup, exe)
		cmd.Env = append(os.Environ(), inNetnsEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil && strings.Contains(string(out), "unshare failed") && os.Getenv("CI") == "" {
			t.Skipf("no network namespace here: %s", out)
		}
		if err != nil || !strings.Contains(string(out), "--- PASS: TestPinnedInNetns") {
			t.Fatalf("in the namespace: %v\n%s", err, out)
		}
		t.Logf("in the namespace:\n%s", out)
		return
	}
	node, script := mcptest.Everything(t)
	// server-everything listens on every interface of this namespace.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := exec.Command(node, script, "streamableHttp")
	srv.Env = []string{"PATH=/usr/bin:/bin", fmt.Sprintf("PORT=%d", port)}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	backend := fmt.Sprintf("127.0.0.1:%d", port)
	// Nothing tells of another process listening but a dial that connects.
	waitfor.Poll(t, 5*time.Second, "server-everything listening", func() bool {
		c, err := net.Dial("tcp", backend)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	// TLS in front of it, on the test address.
	target, _ := url.Parse("http://" + backend)
	front := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
	fl, err := net.Listen("tcp", testAddr+":0")
	if err != nil {
		t.Fatal(err)
	}
	front.Listener = fl
	front.StartTLS()
	defer front.Close()
	pool := x509.NewCertPool()
	pool.AddCert(front.Certificate())
	checker := &netguard.Checker{ // the production policy: Policy is nil
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			if host == "mcp.example.com" {
				return []netip.Addr{netip.MustParseAddr(testAddr)}, nil
			}
			return nil, fmt.Errorf("no such host %s", host)
		},
		TLS: &tls.Config{RootCAs: pool},
	}
	frontURL, _ := url.Parse(front.URL)
	x := &exchanges{}
	s, err := OpenRemote(context.Background(), Remote{Name: "everything", URL: "https://mcp.example.com:" + frontURL.Port() + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer not-checked-by-it"}, Net: checker}, Options{OnExchange: x.add})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := len(s.Tools()); n < 10 {
		t.Fatalf("%d tools", n)
	}
	res, err := s.Call(context.Background(), "echo", json.RawMessage(`{"message":"pinned"}`))
	if err != nil || res.Text != "Echo: pinned" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	res, err = s.Call(context.Background(), "get-sum", json.RawMessage(`{"a":2,"b":3}`))
	if err != nil || !strings.Contains(res.Text, "5") {
		t.Fatalf("get-sum = %+v, %v", res, err)
	}
	for _, ex := range x.all() {
		if ex.Outcome != Answered || ex.Status != 200 || ex.Host != "mcp.example.com" {
			t.Fatalf("exchange = %+v", ex)
		}
	}
	// The same server under its loopback address is refused by the
	// production policy.
	_, err = OpenRemote(context.Background(), Remote{Name: "everything", URL: "https://127.0.0.1:" + frontURL.Port() + "/mcp", Net: checker}, Options{})
	wantError(t, err, RefusedByAddress, "loopback")
}
