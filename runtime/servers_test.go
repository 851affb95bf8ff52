package runtime

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/chockhq/chock/internal/rounds"
	"github.com/chockhq/chock/runtime/sandbox"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/internal/mcptest"
	"github.com/chockhq/chock/runtime/netguard"
	"github.com/chockhq/chock/runtime/sessionlog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) {
	sandbox.MaybeInit()
	mcptest.MaybeServe()
	maybeServeFence()
	os.Exit(m.Run())
}

// helperCommand is a chock.zon command that runs this test binary as the
// stdio helper server with the extra tools named.
func helperCommand(t *testing.T, extra string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`.{ "/bin/sh", "-c", "%s=%s exec \"$0\" -test.run='^$'", %q }`, mcptest.ServeEnv, extra, exe)
}

func events(t *testing.T, f *fixture, kind string) []sessionlog.Event {
	t.Helper()
	f.s.log.Flush()
	evs, err := sessionlog.Read(f.logDir, f.s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []sessionlog.Event
	for _, ev := range evs {
		if ev["kind"] == kind {
			out = append(out, ev)
		}
	}
	return out
}

func mcpCall(f *fixture, server, tool, args string) (*Result, error) {
	return f.s.Run(context.Background(), &Call{Tool: "mcp", MCP: &MCPRequest{Server: server, Tool: tool, Arguments: json.RawMessage(args)}})
}

func TestLocalServerUnderPolicy(t *testing.T) {
	policy := fmt.Sprintf(`.{
    .policy = .{ .allow = .{ "mcp.helper.tool.echo", "mcp.helper.tool.env", "secret.use.GITHUB_TOKEN" } },
    .secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "mcp.helper.*" } },
    .mcp_servers = .{ .{ .name = "helper", .command = %s } },
}`, helperCommand(t, ""))
	f := newFixture(t, policy, map[string]string{"GITHUB_TOKEN": values["GITHUB_TOKEN"]}, nil)
	sts, err := f.s.StartServers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || !sts[0].Started || sts[0].Network {
		t.Fatalf("status = %+v", sts)
	}
	decisions := map[string]string{}
	for _, tl := range sts[0].Tools {
		decisions[tl.Name] = tl.Decision.String()
	}
	if decisions["echo"] != "allow" || decisions["env"] != "allow" || decisions["net"] != "deny" {
		t.Fatalf("tool decisions = %v", decisions)
	}
	res, err := mcpCall(f, "helper", "echo", `{"message":"hello"}`)
	if err != nil || res.Content != "echo: hello" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	// The server holds its secret in its environment; what it says of it
	// is redacted.
	res, err = mcpCall(f, "helper", "env", `{}`)
	if err != nil || !strings.Contains(res.Content, "GITHUB_TOKEN=[secret:GITHUB_TOKEN]") || !strings.Contains(res.Content, "HOME=") {
		t.Fatalf("env = %+v, %v", res, err)
	}
	// The echo of a value is redacted too.
	res, err = mcpCall(f, "helper", "echo", fmt.Sprintf(`{"message":%q}`, values["GITHUB_TOKEN"]))
	if err != nil || res.Content != "echo: [secret:GITHUB_TOKEN]" {
		t.Fatalf("echo = %+v, %v", res, err)
	}
	// No rule for net: the host rule alone is not a tool rule.
	_, err = mcpCall(f, "helper", "net", `{}`)
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("net: %v", err)
	}
	reqs := events(t, f, "mcp.request")
	if len(reqs) != 5 || reqs[0]["about"] != "discover" || reqs[4]["outcome"] != "refused_by_policy" || reqs[4]["about"] != "net" {
		t.Fatalf("mcp.request events = %v", reqs)
	}
	used := events(t, f, "secret.used")
	if len(used) != 1 || used[0]["action"] != "mcp.helper" || used[0]["variable"] != "GITHUB_TOKEN" || used[0]["bind"] != "env" ||
		used[0]["server"] != "helper" || used[0]["time"] == nil || used[0]["call"] != nil {
		t.Fatalf("secret.used = %v", used)
	}
	started := events(t, f, "server.started")
	if len(started) != 1 || !strings.HasPrefix(started[0]["network"].(string), "none") {
		t.Fatalf("server.started = %v", started)
	}
	// An unknown tool is not a call.
	if _, err := mcpCall(f, "helper", "nope", `{}`); err == nil {
		t.Fatal("an undeclared tool was called")
	}
	assertNoLeak(t, f, res.Content)
	if n := len(events(t, f, "server.stopped")); n != 1 {
		t.Fatalf("server.stopped events = %d", n)
	}
}

func TestServersDropped(t *testing.T) {
	for _, tc := range []struct {
		name, tools, policy, stored, why string
	}{
		{"own tool name", "exec", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `tool named "exec"`},
		{"own tool name in another case", "Fetch_URL", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `tool named "Fetch_URL", which reads as "fetch_url"`},
		{"own tool name in full width", "ｅｘｅｃ", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `tool named "ｅｘｅｃ", which reads as "exec"`},
		{"own tool name in full width capitals", "ＷＲＩＴＥ＿ＦＩＬＥ", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `which reads as "write_file"`},
		{"own tool name with a zero-width space", "exec\u200b", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `tool named "exec\u200b", which holds the invisible character U+200B`},
		{"own tool name in Cyrillic letters", "ехес", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `tool named "ехес", which reads as "exec"`},
		{"own tool name in mixed scripts", "rеad_filе", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `which reads as "read_file"`},
		{"own tool name with a soft hyphen", "ex\u00adec", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `invisible character U+00AD`},
		{"own tool name with a variation selector", "exec\ufe0f", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `invisible character U+FE0F`},
		{"own tool name with a tag character", "exec\U000E0041", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `invisible character U+E0041`},
		{"a Hangul filler", "exec\u3164", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `invisible character U+3164`},
		{"a bidi override", "ls\u202e", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `invisible character U+202E`},
		{"tool name no action can hold", "a*b", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", `cannot be a policy action`},
		{"secret asked", "", `.ask = .{ "secret.use.GITHUB_TOKEN" }`, "GITHUB_TOKEN", "reads as refused"},
		{"secret missing", "", `.allow = .{ "secret.use.GITHUB_TOKEN" }`, "", "chock login --tool-secret GITHUB_TOKEN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy := fmt.Sprintf(`.{
    .policy = .{ %s, .rules = .{ .{ .action = "mcp.helper.tool.*", .decision = .allow } } },
    .secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "mcp.*" } },
    .mcp_servers = .{ .{ .name = "helper", .command = %s } },
}`, tc.policy, helperCommand(t, tc.tools))
			stored := map[string]string{}
			if tc.stored != "" {
				stored[tc.stored] = values[tc.stored]
			}
			f := newFixture(t, policy, stored, answer(true)) // an asker that says yes is never asked at start
			sts, err := f.s.StartServers(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sts[0].Started || !strings.Contains(sts[0].Why, tc.why) {
				t.Fatalf("why = %q, want %q", sts[0].Why, tc.why)
			}
			dropped := events(t, f, "server.dropped")
			if len(dropped) != 1 || dropped[0]["why"] != sts[0].Why {
				t.Fatalf("server.dropped = %v", dropped)
			}
			if _, err := mcpCall(f, "helper", "echo", `{}`); err == nil || !strings.Contains(err.Error(), "left out") {
				t.Fatalf("call to a dropped server: %v", err)
			}
			assertNoLeak(t, f)
		})
	}
}

func TestAtMostEightServers(t *testing.T) {
	var list []string
	for i := range action.MaxServers + 1 {
		list = append(list, fmt.Sprintf(`.{ .name = "s%d", .command = .{"/nonexistent/server"} }`, i))
	}
	f := newFixture(t, `.{ .mcp_servers = .{`+strings.Join(list, ", ")+`} }`, nil, nil)
	sts, err := f.s.StartServers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 9 || !strings.Contains(sts[8].Why, "at most 8 servers") || strings.Contains(sts[7].Why, "at most") {
		t.Fatalf("statuses = %+v", sts)
	}
}

// remoteFixture is a session whose one remote server is a hostile peer on
// loopback, reached under the test name mcp.example.com.
func remoteFixture(t *testing.T, fault mcptest.Fault, policy, secrets string, stored map[string]string) (*fixture, *mcptest.Hostile) {
	t.Helper()
	hs := mcptest.NewHostile(fault)
	srv := httptest.NewTLSServer(hs)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	checker := &netguard.Checker{
		Lookup: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
		// httptest listens on loopback, which the production policy
		// refuses; mcpconn's TestPinnedInNetns runs that policy end to end.
		Policy: func(a netip.Addr) string { return "" },
		TLS:    &tls.Config{RootCAs: pool},
	}
	cfg := fmt.Sprintf(`.{
    .policy = .{ %s },
    .secrets = .{ %s },
    .mcp_servers = .{ .{ .name = "notion", .url = "https://mcp.example.com:%s/mcp" } },
}`, policy, secrets, u.Port())
	f := newFixtureWith(t, cfg, stored, answer(true), func(o *Options) { o.Net = checker })
	return f, hs
}

func TestRemoteHostRuleAloneListsTools(t *testing.T) {
	f, hs := remoteFixture(t, mcptest.Honest, `.allow = .{ "mcp.notion.host.com.example.*", "secret.use.NOTION_TOKEN" }`,
		`.{ .name = "NOTION_TOKEN", .to = "mcp.notion.*", .bind = "header" }`, map[string]string{"NOTION_TOKEN": values["GITHUB_TOKEN"]})
	sts, err := f.s.StartServers(context.Background())
	if err != nil || !sts[0].Started || len(sts[0].Tools) != 1 || sts[0].Tools[0].Decision.String() != "deny" {
		t.Fatalf("status = %+v, %v", sts, err)
	}
	if got := hs.LastHeader().Get("Authorization"); got != "Bearer "+values["GITHUB_TOKEN"] {
		t.Fatalf("Authorization = %q", got)
	}
	if _, err := mcpCall(f, "notion", "echo", `{}`); err == nil {
		t.Fatal("a tool was called without a tool rule")
	}
	reqs := events(t, f, "mcp.request")
	want := `[{"about":"discover","host":"mcp.example.com","outcome":"answered","server":"notion","status":200} {"about":"echo","host":"mcp.example.com","outcome":"refused_by_policy","server":"notion","status":0}]`
	var got []string
	for _, r := range reqs {
		delete(r, "time")
		delete(r, "kind")
		b, _ := json.Marshal(r)
		got = append(got, string(b))
	}
	if "["+strings.Join(got, " ")+"]" != want {
		t.Fatalf("mcp.request = %v\nwant %s", got, want)
	}
	assertNoLeak(t, f)
}

func TestRemoteHostAskedAtStartIsRefused(t *testing.T) {
	f, hs := remoteFixture(t, mcptest.Honest, `.ask = .{ "mcp.notion.host.com.example.*" }`, "", nil)
	sts, err := f.s.StartServers(context.Background())
	if err != nil || sts[0].Started || !strings.Contains(sts[0].Why, "ask") {
		t.Fatalf("status = %+v, %v", sts, err)
	}
	if reqs, _, _ := hs.Snapshot(); len(reqs) != 0 {
		t.Fatalf("the server was reached: %v", reqs)
	}
	reqs := events(t, f, "mcp.request")
	if len(reqs) != 1 || reqs[0]["outcome"] != "refused_by_policy" || reqs[0]["about"] != "discover" {
		t.Fatalf("mcp.request = %v", reqs)
	}
}

func TestRemoteHeaderValueWithLineBreakIsNotSent(t *testing.T) {
	bad := "tok-LEAKCHECK\r\nX-Injected: 1"
	values["BAD_HEADER"] = bad
	defer delete(values, "BAD_HEADER")
	f, hs := remoteFixture(t, mcptest.Honest, `.allow = .{ "mcp.notion.host.com.example.*", "secret.use.KEY", "secret.use.FILEKEY" }`,
		`.{ .name = "KEY", .to = "mcp.notion.*", .bind = "header", .as = "X-Api-Key" }, .{ .name = "FILEKEY", .to = "mcp.notion.*", .bind = "file" }`,
		map[string]string{"KEY": bad, "FILEKEY": values["GCP_KEY"]})
	sts, err := f.s.StartServers(context.Background())
	if err != nil || !sts[0].Started {
		t.Fatalf("status = %+v, %v", sts, err)
	}
	if h := hs.LastHeader(); h.Get("X-Api-Key") != "" || h.Get("X-Injected") != "" {
		t.Fatalf("headers = %v", h)
	}
	skipped := events(t, f, "secret.skipped")
	if len(skipped) != 2 || !strings.Contains(skipped[0]["why"].(string), "cannot carry") || !strings.Contains(skipped[1]["why"].(string), "not given a file") {
		t.Fatalf("secret.skipped = %v", skipped)
	}
	assertNoLeak(t, f)
}

func TestRemoteFailureIsLogged(t *testing.T) {
	f, _ := remoteFixture(t, mcptest.Redirect, `.allow = .{ "mcp.notion.host.com.example.*" }`, "", nil)
	sts, err := f.s.StartServers(context.Background())
	if err != nil || sts[0].Started || !strings.Contains(sts[0].Why, "redirect") {
		t.Fatalf("status = %+v, %v", sts, err)
	}
	reqs := events(t, f, "mcp.request")
	if len(reqs) != 1 || reqs[0]["outcome"] != "redirected" || fmt.Sprint(reqs[0]["status"]) != "307" {
		t.Fatalf("mcp.request = %v", reqs)
	}
}

// BenchmarkMCPCall interleaves, round by round in one process, a
// tools/call round trip to the same local server (this test binary as the
// stdio helper, echo) proxied through a session (policy, audit,
// redaction, the hardened adapter, the log) and direct through a bare
// go-sdk client to a helper of its own, both clients alive throughout,
// and reports the median of the rounds' ratios proxied/direct.
func BenchmarkMCPCall(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"message":"hello"}`)
	policy := fmt.Sprintf(`.{
    .policy = .{ .allow = .{ "mcp.helper.tool.echo", "mcp.helper.network" } },
    .mcp_servers = .{ .{ .name = "helper", .command = .{ "/bin/sh", "-c", "%s= exec \"$0\" -test.run='^$'", %q } } },
}`, mcptest.ServeEnv, exe)
	s := benchSession(b, policy)
	if sts, err := s.StartServers(context.Background()); err != nil || !sts[0].Started {
		b.Fatalf("%+v %v", sts, err)
	}
	cmd := exec.Command("/bin/sh", "-c", mcptest.ServeEnv+`= exec "$0" -test.run='^$'`, exe)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	r := rounds.Calls(b, 20,
		func(int) {
			res, err := s.Run(ctx, &Call{Tool: "mcp", MCP: &MCPRequest{Server: "helper", Tool: "echo", Arguments: args}})
			if err != nil || res.Content != "echo: hello" {
				b.Fatal(res, err)
			}
		},
		func(int) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello"}})
			if err != nil || len(res.Content) != 1 {
				b.Fatal(res, err)
			}
		})
	r.Report(b, "proxied/direct", "proxied-ns/op", "direct-ns/op")
}

// TestLookalikeLeavesOthersAlone: names that only resemble Chock's own in
// part, or are not Latin at all, keep their server.
func TestLookalikeLeavesOthersAlone(t *testing.T) {
	for _, name := range []string{"execute", "exec_sql", "echo", "read_files", "list_file", "fetch", "search", "café", "検索", "get-env", "fetch_urls"} {
		if why := lookalike(name); why != "" {
			t.Errorf("%q: %s", name, why)
		}
	}
}

// TestOneBudgetPerCall: an MCP tool call has the MCP call budget
// (--mcp-call-timeout), not the session's default for programs, and the
// error names the budget that fired.
func TestOneBudgetPerCall(t *testing.T) {
	policy := fmt.Sprintf(`.{
    .policy = .{ .rules = .{ .{ .action = "mcp.helper.tool.*", .decision = .allow } } },
    .mcp_servers = .{ .{ .name = "helper", .command = %s } },
}`, helperCommand(t, "sleep"))
	longer := newFixtureWith(t, policy, nil, nil, func(o *Options) {
		o.CallTimeout = 200 * time.Millisecond
		o.MCP.CallTimeout = 10 * time.Second
	})
	if _, err := longer.s.StartServers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if res, err := mcpCall(longer, "helper", "sleep", `{"ms": 600}`); err != nil || res.Content != "slept" {
		t.Fatalf("a 600 ms call with a 10 s MCP budget: %+v, %v", res, err)
	}
	shorter := newFixtureWith(t, policy, nil, nil, func(o *Options) {
		o.CallTimeout = 10 * time.Second
		o.MCP.CallTimeout = 300 * time.Millisecond
	})
	if _, err := shorter.s.StartServers(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := mcpCall(shorter, "helper", "sleep", `{"ms": 5000}`); err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Fatalf("a 5 s call with a 300 ms MCP budget: %v", err)
	}
	// A time limit the call names is its budget, and is named, shorter
	// or longer than the MCP budget.
	res, err := shorter.s.Run(context.Background(), &Call{Tool: "mcp", Timeout: 150 * time.Millisecond,
		MCP: &MCPRequest{Server: "helper", Tool: "sleep", Arguments: json.RawMessage(`{"ms": 5000}`)}})
	if err == nil || !strings.Contains(err.Error(), "no answer within 150ms") {
		t.Fatalf("a call naming 150 ms: %+v, %v", res, err)
	}
	res, err = shorter.s.Run(context.Background(), &Call{Tool: "mcp", Timeout: 5 * time.Second,
		MCP: &MCPRequest{Server: "helper", Tool: "sleep", Arguments: json.RawMessage(`{"ms": 600}`)}})
	if err != nil || res.Content != "slept" {
		t.Fatalf("a call naming 5 s, with a 300 ms MCP budget: %+v, %v", res, err)
	}
}

// BenchmarkServerStart interleaves, round by round in one process, the
// start of a local MCP server (this test binary as the stdio helper: the
// process, the MCP handshake, the tool list) in the sandbox against the
// same with --no-sandbox (a user, pid and network namespace of its own),
// each in a session of its own, and reports the median of the rounds'
// ratios sandboxed/bare.
func BenchmarkServerStart(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	init := filepath.Join(b.TempDir(), "chock-sandbox")
	if out, err := exec.Command("go", "build", "-o", init, "github.com/chockhq/chock/cmd/chock-sandbox").CombinedOutput(); err != nil {
		b.Fatalf("building chock-sandbox: %v\n%s", err, out)
	}
	e, c := testEngine(b, fmt.Sprintf(`.{
    .policy = .{ .allow = .{ "mcp.helper.tool.echo" } },
    .mcp_servers = .{ .{ .name = "helper", .command = .{ "/bin/sh", "-c", "%s= exec \"$0\" -test.run='^$'", %q } } },
}`, mcptest.ServeEnv, exe))
	start := func(noSandbox bool) func() float64 {
		return func() float64 {
			s, err := New(context.Background(), Options{Engine: e, Config: c, LogDir: b.TempDir(), TempDir: b.TempDir(),
				BaseEnv: []string{"PATH=/usr/bin:/bin"}, SandboxInit: init, NoSandbox: noSandbox})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			t0 := time.Now()
			sts, err := s.StartServers(context.Background())
			took := time.Since(t0)
			if err != nil || len(sts) != 1 || !sts[0].Started {
				b.Fatalf("%+v %v", sts, err)
			}
			return float64(took.Nanoseconds())
		}
	}
	r := rounds.Run(b, 10, start(false), start(true))
	r.Report(b, "sandboxed/bare", "sandboxed-ns/op", "bare-ns/op")
}
