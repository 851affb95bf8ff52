package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/rounds"
)

// TestNetNamespaceHasOnlyTheListeners: a call with Spec.Net has loopback
// up and nothing else: a connection to any other address finds no route,
// a UDP send has none either, and a connection to 127.0.0.1:3128 reaches
// the listener chock holds (accepted here, outside the call).
func TestNetNamespaceHasOnlyTheListeners(t *testing.T) {
	py := "/usr/bin/python3.11"
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("the test needs %s: %v", py, err)
	}
	script := `
import socket
def try_(what, f):
    try:
        f(); print(what, "ok")
    except OSError as e:
        print(what, "error", e.errno)
s = socket.socket(); s.settimeout(5)
try_("tcp-out", lambda: s.connect(("192.0.2.1", 80)))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try_("udp-out", lambda: u.sendto(b"x", ("192.0.2.1", 53)))
p = socket.socket(); p.settimeout(5)
try_("proxy", lambda: p.connect(("127.0.0.1", 3128)))
p.sendall(b"hello\n")
print("reply", p.recv(100).decode().strip())
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen()
try_("lo-own", lambda: socket.create_connection(ls.getsockname(), 5))
`
	exe, _ := os.Executable()
	spec := &Spec{Path: py, Argv: []string{"python3", "-c", script}, Env: []string{"PATH=/usr/bin"}, Exec: interp(t, py), Notify: true, Net: true}
	spec.Exec = append(spec.Exec, py)
	c := Command(spec, exe)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	if c.Net == nil || c.Net.HTTP == nil || c.Net.SOCKS == nil {
		t.Fatal("no listeners handed over")
	}
	defer c.Net.Close()
	l, err := net.FileListener(c.Net.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		line, _ := bufio.NewReader(conn).ReadString('\n')
		conn.Write([]byte("got " + line))
		conn.Close()
	}()
	c.Wait()
	l.Close()
	got := out.String()
	for _, want := range []string{"tcp-out error 101", "udp-out error 101", "proxy ok", "reply got hello", "lo-own ok"} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in:\n%s", want, got)
		}
	}
}

// BenchmarkNetNamespace interleaves a sandboxed /bin/true with its network
// namespace and listeners (Spec.Net) and the same without, and reports
// the median of the rounds' ratios: what the fence adds to a call's
// sandbox.
func BenchmarkNetNamespace(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	allow := []string{"/usr/bin/true"}
	if i, _, err := Interpreter("/usr/bin/true"); err == nil && i != "" {
		allow = append(allow, i)
	}
	run := func(net bool) func() float64 {
		return func() float64 {
			spec := &Spec{Path: "/usr/bin/true", Argv: []string{"true"}, Env: []string{"PATH=/usr/bin"}, Exec: allow, Notify: true, Net: net}
			c := Command(spec, exe)
			t0 := time.Now()
			if err := c.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			c.Net.Close()
			c.Wait()
			return time.Since(t0).Seconds()
		}
	}
	r := rounds.Run(b, 10, run(true), run(false))
	b.ReportMetric(r.Ratio, "net/no-net")
	b.ReportMetric(r.A*1e6, "net-µs/op")
	b.ReportMetric(r.B*1e6, "no-net-µs/op")
}
