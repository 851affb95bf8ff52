package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/rounds"
	"github.com/chockhq/chock/internal/stockopa"
)

// loadPolicy denies or asks every fetch the load makes, so no call
// reaches the network: 2,000 host rules over a default deny.
func loadPolicy() string {
	var b bytes.Buffer
	b.WriteString(".{ .policy = .{ .default = .deny, .rules = .{\n")
	for i := range 2000 {
		d := "deny"
		if i%2 == 0 {
			d = "ask"
		}
		fmt.Fprintf(&b, "    .{ .action = \"net.fetch.test.load.h%d\", .decision = .%s },\n", i, d)
		fmt.Fprintf(&b, "    .{ .action = \"net.fetch.test.load%d.*\", .decision = .%s },\n", i, d)
	}
	b.WriteString("} } }\n")
	return b.String()
}

const (
	loadSessions = 8
	loadCalls    = 10000
)

// runLoad opens loadSessions sessions on e and has them make loadCalls
// fetch calls in all, each refused by one decision of a distinct action
// (no decision cache answers). It returns the wall time and each call's
// latency.
func runLoad(b *testing.B, e *eval.Engine, round int) (time.Duration, []time.Duration) {
	b.Helper()
	var sessions []*Session
	for range loadSessions {
		s, err := New(context.Background(), Options{Engine: e, LogDir: b.TempDir(), TempDir: b.TempDir(), BaseEnv: []string{"PATH=/usr/bin:/bin"}})
		if err != nil {
			b.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	lat := make([][]time.Duration, loadSessions)
	var wg sync.WaitGroup
	start := time.Now()
	for k, s := range sessions {
		wg.Go(func() {
			for i := range loadCalls / loadSessions {
				n := k*(loadCalls/loadSessions) + i
				host := fmt.Sprintf("h%d.load.test", n%2000)
				if n%3 == 1 {
					host = fmt.Sprintf("r%d-%d.load%d.test", round, n, n%2000)
				} else if n%3 == 2 {
					host = fmt.Sprintf("x%d-%d.other.test", round, n)
				}
				t0 := time.Now()
				_, err := s.Run(context.Background(), &Call{Tool: "fetch_url", Fetch: &FetchRequest{URL: "https://" + host + "/"}})
				lat[k] = append(lat[k], time.Since(t0))
				var refused *RefusedError
				if !errors.As(err, &refused) {
					b.Errorf("%s: %v, want a refusal", host, err)
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	for _, s := range sessions {
		s.Close()
	}
	return wall, slices.Concat(lat...)
}

// BenchmarkSessionsRemote is the load test of --opa-url: 8 concurrent
// sessions making 10,000 decisions in all (fetch calls, each refused by
// its one decision, logged to the session log) against one stock
// opa run --server on 127.0.0.1; then the same through the policy in
// process, a fresh engine each round so its cache does not answer. It
// reports each side's calls per second and p99 latency.
func BenchmarkSessionsRemote(b *testing.B) {
	p, ds, err := load.FromSources(context.Background(), load.Input{Configs: []load.Source{{Name: "chock.zon", Data: []byte(loadPolicy())}}})
	if err != nil {
		b.Fatalf("%v\n%v", err, ds)
	}
	var buf bytes.Buffer
	if err := p.Output.WriteBundle(&buf, nil); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "bundle.tar.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	srv := stockopa.Start(b, nil, "--bundle", path)
	remote, err := eval.NewRemote(context.Background(), eval.RemoteOptions{URL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	var rWall, eWall time.Duration
	var rLat, eLat []time.Duration
	round := 0
	for b.Loop() {
		round++
		b.StopTimer()
		embedded, err := eval.FromOutput(context.Background(), p.Output)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		w, l := runLoad(b, remote, round)
		rWall, rLat = rWall+w, append(rLat, l...)
		w, l = runLoad(b, embedded, round)
		eWall, eLat = eWall+w, append(eLat, l...)
	}
	b.ReportMetric(float64(len(rLat))/rWall.Seconds(), "remote-calls/s")
	b.ReportMetric(rounds.P99Millis(rLat), "remote-p99-ms")
	b.ReportMetric(float64(len(eLat))/eWall.Seconds(), "embedded-calls/s")
	b.ReportMetric(rounds.P99Millis(eLat), "embedded-p99-ms")
}
