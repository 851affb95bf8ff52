package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSoakMCP is make soak, not part of make test: SOAK_CALLS proxied
// tools/calls (the helper server's echo, each with a 10 s budget) through
// a session, each followed by a direct go-sdk call to a helper of its own,
// as the interleaved benchmark runs them, where one call in about 20,000
// was once seen to hang until its 60 s budget. It counts the calls that
// fail and those slower than a second, prints the slowest of each kind
// and the percentiles, and dumps every goroutine when a call fails. It
// fails if any call does.
func TestSoakMCP(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SOAK_CALLS"))
	if n <= 0 {
		t.Skip("make soak runs it (SOAK_CALLS=100000)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`.{
    .policy = .{ .allow = .{ "mcp.helper.tool.echo", "mcp.helper.network" } },
    .mcp_servers = .{ .{ .name = "helper", .command = .{ "/bin/sh", "-c", "%s= exec \"$0\" -test.run='^$'", %q } } },
}`, mcptest.ServeEnv, exe)
	e, c := testEngine(t, policy)
	s, err := New(context.Background(), Options{Engine: e, Config: c, LogDir: t.TempDir(), TempDir: t.TempDir(), BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if sts, err := s.StartServers(context.Background()); err != nil || !sts[0].Started {
		t.Fatalf("%+v %v", sts, err)
	}
	cmd := exec.Command("/bin/sh", "-c", mcptest.ServeEnv+`= exec "$0" -test.run='^$'`, exe)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	client := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	const budget = 10 * time.Second
	args := json.RawMessage(`{"message":"hello"}`)
	type side struct {
		name      string
		took      []time.Duration
		failed    []string
		overOneS  int
		slowest   time.Duration
		slowestAt int
	}
	proxied, direct := &side{name: "proxied"}, &side{name: "direct"}
	record := func(sd *side, i int, d time.Duration, err error) {
		sd.took = append(sd.took, d)
		if d > time.Second {
			sd.overOneS++
		}
		if d > sd.slowest {
			sd.slowest, sd.slowestAt = d, i
		}
		if err != nil {
			sd.failed = append(sd.failed, fmt.Sprintf("call %d after %v: %v", i, d, err))
			var dump strings.Builder
			pprof.Lookup("goroutine").WriteTo(&dump, 1)
			t.Logf("%s call %d failed after %v: %v\ngoroutines:\n%s", sd.name, i, d, err, dump.String())
		}
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		t0 := time.Now()
		res, err := s.Run(context.Background(), &Call{Tool: "mcp", Timeout: budget, MCP: &MCPRequest{Server: "helper", Tool: "echo", Arguments: args}})
		if err == nil && res.Content != "echo: hello" {
			err = fmt.Errorf("answered %q", res.Content)
		}
		record(proxied, i, time.Since(t0), err)
		t0 = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		dres, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}})
		cancel()
		if err == nil && len(dres.Content) != 1 {
			err = fmt.Errorf("answered %+v", dres)
		}
		record(direct, i, time.Since(t0), err)
		if (i+1)%20000 == 0 {
			t.Logf("%d calls each in %v", i+1, time.Since(start).Round(time.Second))
		}
	}
	for _, sd := range []*side{proxied, direct} {
		sorted := slices.Clone(sd.took)
		slices.Sort(sorted)
		q := func(p float64) time.Duration { return sorted[int(p*float64(len(sorted)-1))] }
		fmt.Printf("soak %s: %d calls, %d failed, %d over 1 s; median %v, p99 %v, p99.99 %v, slowest %v (call %d)\n",
			sd.name, len(sd.took), len(sd.failed), sd.overOneS, q(0.5), q(0.99), q(0.9999), sorted[len(sorted)-1], sd.slowestAt)
		for _, f := range sd.failed {
			t.Errorf("%s: %s", sd.name, f)
		}
	}
	fmt.Printf("soak: %d proxied and %d direct calls in %v\n", n, n, time.Since(start).Round(time.Second))
}
