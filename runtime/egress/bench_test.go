package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/rounds"
)

// benchProxy serves a proxy for one call that allows every host, in front
// of a loopback server whose /big answers size bytes. The address rule is
// the test's (loopback allowed): the cost measured is the proxy's.
func benchProxy(b *testing.B, size int) (server string, proxied *http.Client, closeAll func()) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	chunk := []byte(strings.Repeat("x", 1<<20))
	go http.Serve(up, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			io.WriteString(w, "ok")
			return
		}
		for left := size; left > 0; left -= len(chunk) {
			w.Write(chunk[:min(left, len(chunk))])
		}
	}))
	hl, _ := net.Listen("tcp", "127.0.0.1:0")
	p := &Proxy{Resolver: &hosts{table: map[string][]netip.Addr{}}, AddrWhy: func(netip.Addr) string { return "" }}
	c := p.Serve(context.Background(), DeciderFunc(func(_ context.Context, r Request) Verdict {
		return Verdict{Allow: true, Action: "net.connect." + r.Host}
	}), hl, nil)
	u, _ := url.Parse("http://" + hl.Addr().String())
	proxied = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), DisableKeepAlives: true}}
	return up.Addr().String(), proxied, func() { c.Close(); up.Close() }
}

func get(b *testing.B, c *http.Client, u string, want int64) {
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != want {
		b.Fatalf("%s: %d bytes, %v", u, n, err)
	}
}

// BenchmarkEgressDownload interleaves a 64 MiB download from a loopback
// server through the egress proxy with the same download direct, and
// reports the median of the rounds' throughput ratios proxied/direct
// (direct's time over the proxy's).
func BenchmarkEgressDownload(b *testing.B) {
	const size = 64 << 20
	server, proxied, done := benchProxy(b, size)
	defer done()
	direct := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	u := "http://" + server + "/big"
	timed := func(c *http.Client) func() float64 {
		return func() float64 {
			t0 := time.Now()
			get(b, c, u, size)
			return time.Since(t0).Seconds()
		}
	}
	// Run reports A/B of the costs: direct's time over the proxy's is the
	// proxy's throughput over direct's.
	r := rounds.Run(b, 5, timed(direct), timed(proxied))
	b.ReportMetric(r.Ratio, "proxied/direct-throughput")
	b.ReportMetric(size/r.B/(1<<20), "proxied-MiB/s")
	b.ReportMetric(size/r.A/(1<<20), "direct-MiB/s")
	b.ReportMetric(float64(r.N), "rounds")
}

// BenchmarkEgressConnect interleaves a new connection and one small
// request through the egress proxy (a decision, the dial, the request)
// with the same direct, and reports the median over the rounds of the
// proxy's extra time per connection.
func BenchmarkEgressConnect(b *testing.B) {
	server, proxied, done := benchProxy(b, 0)
	defer done()
	direct := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	u := "http://" + server + "/small"
	var extra []float64
	r := rounds.Calls(b, 20, func(int) { get(b, proxied, u, 2) }, func(int) { get(b, direct, u, 2) })
	extra = append(extra, r.A-r.B)
	b.ReportMetric(rounds.Median(extra)/1e6, "extra-ms/connection")
	b.ReportMetric(r.A, "proxied-ns/op")
	b.ReportMetric(r.B, "direct-ns/op")
	b.ReportMetric(float64(r.N), "rounds")
}
