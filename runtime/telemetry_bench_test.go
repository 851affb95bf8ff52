package runtime

import (
	"context"
	"net"
	"testing"

	"github.com/chockhq/chock/internal/jaegertest"
	"github.com/chockhq/chock/internal/rounds"
	"github.com/chockhq/chock/runtime/telemetry"
)

// BenchmarkTelemetry is #29's target: a session of 10,000 refused calls
// with export on, against a running collector (a real Jaeger) and against
// one that is down (a closed port), each against the same calls with
// export off, in interleaved rounds of one process.
func BenchmarkTelemetry(b *testing.B) {
	j := jaegertest.Start(b)
	down := closedPort(b)
	start := func(endpoint string) *telemetry.Exporter {
		b.Helper()
		env := map[string]string{"OTEL_METRICS_EXPORTER": "none"}
		e, err := telemetry.Start(context.Background(), telemetry.Options{Endpoint: endpoint, Getenv: func(k string) string { return env[k] }})
		if err != nil || e == nil {
			b.Fatalf("telemetry.Start(%s): %v", endpoint, err)
		}
		return e
	}
	up, dead := start(j.OTLP), start(down)
	defer telemetry.Off()
	defer up.Shutdown(context.Background())
	defer dead.Shutdown(context.Background())
	s := benchSession(b, `.{ .policy = .{ .deny = .{ "exec.path.curl" } } }`)
	ctx := context.Background()
	const n = 10000
	refuse := func(int) {
		if _, err := s.Run(ctx, &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"curl", "http://127.0.0.1:1/"}}}); err == nil {
			b.Fatal("curl ran")
		}
	}
	with := func(e *telemetry.Exporter) func(int) {
		return func(i int) {
			if i == 0 {
				e.Install()
			}
			refuse(i)
		}
	}
	off := func(i int) {
		if i == 0 {
			telemetry.Off()
		}
		refuse(i)
	}
	b.Run("collector=up", func(b *testing.B) {
		rounds.Calls(b, n, with(up), off).Report(b, "on/off", "on-ns/call", "off-ns/call")
	})
	// What a call that does work pays: a sandboxed exec of /bin/true
	// (about 4 ms), exporting to the running collector, against the same
	// with export off.
	b.Run("collector=up/exec", func(b *testing.B) {
		ex := benchSession(b, `.{ .policy = .{ .allow = .{ "exec.path.true" } } }`)
		run := func(int) {
			if _, err := ex.Run(ctx, &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"true"}}}); err != nil {
				b.Fatal(err)
			}
		}
		on := func(i int) {
			if i == 0 {
				up.Install()
			}
			run(i)
		}
		offExec := func(i int) {
			if i == 0 {
				telemetry.Off()
			}
			run(i)
		}
		rounds.Calls(b, 50, on, offExec).Report(b, "on/off", "on-ns/call", "off-ns/call")
	})
	b.Run("collector=down", func(b *testing.B) {
		rounds.Calls(b, n, with(dead), off).Report(b, "on/off", "on-ns/call", "off-ns/call")
		b.ReportMetric(float64(dead.Dropped()), "dropped")
	})
}

// closedPort is the URL of a loopback port nothing listens on.
func closedPort(b *testing.B) string {
	b.Helper()
	l, err := netListen()
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
