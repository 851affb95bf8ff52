package eval

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/benchgen"
	"github.com/chockhq/chock/internal/rounds"
)

// loadSessions and loadDecisions are issue #17's load: 8 concurrent
// sessions making 10,000 decisions in all.
const (
	loadSessions  = 8
	loadDecisions = 10000
)

// loadActions are loadDecisions distinct actions over benchgen.Policy(n)
// with n ≥ loadDecisions: literal programs and tools, host wildcards,
// tool wildcards across servers (allowed, asked and denied in turn), and
// one in ten a miss that the default denies. None is asked twice, so an
// embedded engine's cache never answers.
func loadActions() []string {
	out := make([]string, loadDecisions)
	for i := range out {
		switch {
		case i%10 == 9:
			out[i] = fmt.Sprintf("exec.path.missing%d", i)
		case i%4 == 0:
			out[i] = fmt.Sprintf("exec.path.tool%d", i)
		case i%4 == 1:
			out[i] = fmt.Sprintf("mcp.server%d.tool.op%d", i%40, i)
		case i%4 == 2:
			out[i] = fmt.Sprintf("net.fetch.com.example%d.www", i)
		default:
			out[i] = fmt.Sprintf("mcp.s%d.tool.op%d", i, i)
		}
	}
	return out
}

// load makes the decisions of acts on e from loadSessions goroutines,
// each on its own view of e (Pinned) with an equal share, at alternate
// phases; it returns the wall time and every decision's latency.
func load(b *testing.B, e *Engine, acts []string) (time.Duration, []time.Duration) {
	ctx := context.Background()
	lat := make([][]time.Duration, loadSessions)
	per := len(acts) / loadSessions
	var wg sync.WaitGroup
	start := time.Now()
	for s := range loadSessions {
		view := e.Pinned()
		mine := acts[s*per : (s+1)*per]
		lat[s] = make([]time.Duration, 0, len(mine))
		wg.Go(func() {
			for i, a := range mine {
				ph := config.Loop
				if i%2 == 1 {
					ph = config.Start
				}
				t0 := time.Now()
				d, err := view.Decide(ctx, a, ph)
				lat[s] = append(lat[s], time.Since(t0))
				if err != nil || d == nil {
					b.Errorf("%s: %v", a, err)
					return
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	return wall, slices.Concat(lat...)
}

// BenchmarkRemoteLoad is issue #17's load test: 8 concurrent sessions,
// each with its own view of the engine, make 10,000 decisions in all
// (1,250 each, distinct actions over a 10,000-rule policy: literal and
// wildcard matches, allowed, asked and denied, and misses) against one
// stock opa run --server on 127.0.0.1 (decision logs off), through
// NewRemote; then the same 10,000 decisions through the embedded engine
// (FromOutput), its cache never answering. It reports each side's
// decisions per second and p99 latency.
func BenchmarkRemoteLoad(b *testing.B) {
	const rules = 10000
	out := compiled(b, benchgen.Policy(rules), benchgen.Org("acme", 1000, 1))
	srv := startOPA(b, nil, "--bundle", writeBundle(b, b.TempDir(), out))
	ctx := context.Background()
	remote, err := NewRemote(ctx, RemoteOptions{URL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	acts := loadActions()
	// Warm-up actions the load does not ask: connections opened, the
	// first evaluations done.
	var warm []string
	for i := range 4 * loadSessions {
		warm = append(warm, fmt.Sprintf("exec.path.warm%d", i))
	}
	var rWall, eWall time.Duration
	var rLat, eLat []time.Duration
	for b.Loop() {
		// A fresh embedded engine each round: nothing of the last one's
		// cache is left.
		b.StopTimer()
		embedded, err := FromOutput(ctx, out)
		if err != nil {
			b.Fatal(err)
		}
		load(b, remote, warm)
		load(b, embedded, warm)
		b.StartTimer()
		w, l := load(b, remote, acts)
		rWall, rLat = rWall+w, append(rLat, l...)
		w, l = load(b, embedded, acts)
		eWall, eLat = eWall+w, append(eLat, l...)
	}
	b.ReportMetric(float64(len(rLat))/rWall.Seconds(), "remote-decisions/s")
	b.ReportMetric(rounds.P99Millis(rLat), "remote-p99-ms")
	b.ReportMetric(float64(len(eLat))/eWall.Seconds(), "embedded-decisions/s")
	b.ReportMetric(rounds.P99Millis(eLat), "embedded-p99-ms")
}
