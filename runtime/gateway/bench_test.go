package gateway

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/chockhq/chock/internal/mcptest"
	"github.com/chockhq/chock/internal/rounds"
	"github.com/chockhq/chock/runtime"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// interleave runs a and b in rounds, five calls of each a round (the
// order alternating from round to round), timing each side, and reports
// the median per-call times and the median of the rounds' ratios: the two
// share the machine's state at every moment (its load, its caches), which
// two benchmarks run one after the other do not.
func interleave(b *testing.B, nameA, nameB string, a, bb func()) {
	r := rounds.Calls(b, 5, func(int) { a() }, func(int) { bb() })
	b.ReportMetric(r.A, nameA+"-ns/call")
	b.ReportMetric(r.B, nameB+"-ns/call")
	b.ReportMetric(r.Ratio, "ratio")
	b.ReportMetric(float64(r.N), "rounds")
}

// BenchmarkGatewayExec: a tools/call of exec /bin/true through the
// gateway (a go-sdk client, JSON-RPC over an in-memory pipe, the gateway's
// handler, the session's chain) beside the same call through
// runtime.Session in process, interleaved.
func BenchmarkGatewayExec(b *testing.B) {
	policy := `.{ .policy = .{ .allow = .{"exec.path.true"} } }`
	f := newFixture(b, policy, Options{})
	cs := f.connect(b, "2025-11-25", nil)
	s, err := runtime.New(context.Background(), runtime.Options{Engine: f.pol.Engine, Config: f.pol.Config, LogDir: b.TempDir(), TempDir: b.TempDir(),
		BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"/bin/true"}}}
	interleave(b, "gateway", "session",
		func() {
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				b.Fatal(res, err)
			}
		},
		func() {
			if _, err := s.Run(ctx, &runtime.Call{Tool: "exec", Exec: &runtime.ExecRequest{Argv: []string{"/bin/true"}}}); err != nil {
				b.Fatal(err)
			}
		})
}

// BenchmarkGatewayUpstream: a server's tool (the stdio helper's echo, an
// answer at once) called through the gateway, re-served as helper__echo,
// beside the same tool called directly by a go-sdk client on a server of
// its own, interleaved. The gateway is one more MCP hop, so against a
// tool that answers at once the ratio is about two hops to one.
func BenchmarkGatewayUpstream(b *testing.B) {
	benchUpstream(b, "echo", map[string]any{"message": "hello"})
}

// BenchmarkGatewayUpstreamSlow is BenchmarkGatewayUpstream for a tool that
// takes 2 ms to answer (the helper's sleep), nearer a tool that does work.
func BenchmarkGatewayUpstreamSlow(b *testing.B) {
	benchUpstream(b, "sleep", map[string]any{"ms": 2})
}

func benchUpstream(b *testing.B, tool string, args map[string]any) {
	policy := `.{ .policy = .{ .allow = .{ "mcp.helper.tool.*", "mcp.helper.network" } }, .mcp_servers = .{ ` + helperServer(b, "sleep") + ` } }`
	f := newFixture(b, policy, Options{})
	cs := f.connect(b, "2025-11-25", nil)
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", mcptest.ServeEnv+`=sleep exec "$0" -test.run='^$'`, exe)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	ctx := context.Background()
	via := &mcp.CallToolParams{Name: "helper__" + tool, Arguments: args}
	own := &mcp.CallToolParams{Name: tool, Arguments: args}
	interleave(b, "reserved", "direct",
		func() {
			res, err := cs.CallTool(ctx, via)
			if err != nil || res.IsError || len(res.Content) != 1 {
				b.Fatal(res, err)
			}
		},
		func() {
			res, err := direct.CallTool(ctx, own)
			if err != nil || len(res.Content) != 1 {
				b.Fatal(res, err)
			}
		})
}

// BenchmarkGatewayEverything is BenchmarkGatewayUpstream with the real
// server-everything (node) as the server: its echo re-served beside the
// same echo called directly, interleaved.
func BenchmarkGatewayEverything(b *testing.B) {
	node, script := mcptest.Everything(b)
	policy := `.{ .policy = .{ .allow = .{ "mcp.everything.tool.echo", "mcp.everything.network" } }, .mcp_servers = .{ .{ .name = "everything", .command = .{ ` +
		strconv.Quote(node) + `, ` + strconv.Quote(script) + `, "stdio" } } } }`
	f := newFixture(b, policy, Options{})
	cs := f.connect(b, "2025-11-25", nil)
	cmd := exec.Command(node, script, "stdio")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	ctx := context.Background()
	via := &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "hello"}}
	own := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}}
	interleave(b, "reserved", "direct",
		func() {
			res, err := cs.CallTool(ctx, via)
			if err != nil || res.IsError {
				b.Fatal(res, err)
			}
		},
		func() {
			res, err := direct.CallTool(ctx, own)
			if err != nil || res.IsError {
				b.Fatal(res, err)
			}
		})
}

// bareProxy is the floor any go-sdk gateway has (#31): a go-sdk server,
// over the same OS pipes chock mcp serve is spoken to over, that offers
// upstream's tools and forwards every tools/call to upstream through its
// go-sdk client, nothing else (no policy, no log, no redaction).
func bareProxy(b *testing.B, upstream *mcp.ClientSession) *mcp.ClientSession {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	tools, err := upstream.ListTools(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	for _, t := range tools.Tools {
		srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return upstream.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	st, ct := pipes(b)
	go srv.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// benchBare interleaves a tool re-served by the gateway (via, on cs) with
// the same tool through bareProxy in front of a server of its own (own,
// on direct's server): what chock adds over any go-sdk gateway's two hops.
func benchBare(b *testing.B, cs, direct *mcp.ClientSession, via, own *mcp.CallToolParams) {
	bare := bareProxy(b, direct)
	ctx := context.Background()
	interleave(b, "reserved", "bare",
		func() {
			res, err := cs.CallTool(ctx, via)
			if err != nil || res.IsError {
				b.Fatal(res, err)
			}
		},
		func() {
			res, err := bare.CallTool(ctx, own)
			if err != nil || res.IsError {
				b.Fatal(res, err)
			}
		})
}

// BenchmarkGatewayBare: the helper's echo and server-everything's echo
// re-served by the gateway against the same call through bareProxy.
func BenchmarkGatewayBare(b *testing.B) {
	b.Run("helper", func(b *testing.B) {
		policy := `.{ .policy = .{ .allow = .{ "mcp.helper.tool.*", "mcp.helper.network" } }, .mcp_servers = .{ ` + helperServer(b, "sleep") + ` } }`
		f := newFixture(b, policy, Options{})
		cs := f.connect(b, "2025-11-25", nil)
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", "-c", mcptest.ServeEnv+`=sleep exec "$0" -test.run='^$'`, exe)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		direct := connectCommand(b, cmd)
		args := map[string]any{"message": "hello"}
		benchBare(b, cs, direct, &mcp.CallToolParams{Name: "helper__echo", Arguments: args}, &mcp.CallToolParams{Name: "echo", Arguments: args})
	})
	b.Run("everything", func(b *testing.B) {
		node, script := mcptest.Everything(b)
		policy := `.{ .policy = .{ .allow = .{ "mcp.everything.tool.echo", "mcp.everything.network" } }, .mcp_servers = .{ .{ .name = "everything", .command = .{ ` +
			strconv.Quote(node) + `, ` + strconv.Quote(script) + `, "stdio" } } } }`
		f := newFixture(b, policy, Options{})
		cs := f.connect(b, "2025-11-25", nil)
		cmd := exec.Command(node, script, "stdio")
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		direct := connectCommand(b, cmd)
		args := map[string]any{"message": "hello"}
		benchBare(b, cs, direct, &mcp.CallToolParams{Name: "everything__echo", Arguments: args}, &mcp.CallToolParams{Name: "echo", Arguments: args})
	})
}

// connectCommand is a go-sdk client of the server cmd starts.
func connectCommand(b *testing.B, cmd *exec.Cmd) *mcp.ClientSession {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}
