package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/mcptest"
	"github.com/chockhq/chock/internal/waitfor"
	"github.com/chockhq/chock/runtime/sessionlog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The secret values of the gateway tests: no result, log line or stderr
// line may ever hold one.
const (
	gwToken     = "gw-LEAKCHECK-exec-token-31337"
	gwHelperKey = "gw-LEAKCHECK-server-key-27182"
)

// gwPolicy is the policy of the gateway tests: echo and sh allowed (sh
// given GW_TOKEN), true asked, cat denied; the helper server (this test
// binary as a stdio MCP server, given HELPER_KEY) has echo and env
// allowed and net denied.
func gwPolicy(t *testing.T, extra string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`.{
    .policy = .{
        .allow = .{ "exec.path.echo", "exec.path.sh", "secret.use.GW_TOKEN", "secret.use.HELPER_KEY", "mcp.helper.tool.echo", "mcp.helper.tool.env"%s },
        .ask = .{ "exec.path.true" },
        .deny = .{ "exec.path.cat", "mcp.helper.tool.net" },
    },
    .programs = .{ .{ .name = "sh", .calls = .{ "exec.path.echo" } } },
    .secrets = .{
        .{ .name = "GW_TOKEN", .to = "exec.path.sh" },
        .{ .name = "HELPER_KEY", .to = "mcp.helper.*" },
    },
    .mcp_servers = .{
        .{ .name = "helper", .command = .{ "/bin/sh", "-c", "%s= exec \"$0\" -test.run='^$'", %q } },
    },
    .credentials = .{ .store = .env },
}
`, extra, mcptest.ServeEnv, exe)
}

// lockedBuffer is a gateway's stderr, read while it is written.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// stderrWritten is notified after each write to any lockedBuffer.
var stderrWritten waitfor.Signal

func (l *lockedBuffer) Write(p []byte) (int, error) {
	defer stderrWritten.Notify()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// gateway is one chock mcp serve under test, in a project folder of its
// own: over stdio each connection starts its own process (as a client
// does); over HTTP one process serves every connection.
type gatewayRun struct {
	t      *testing.T
	dir    string
	state  string
	http   bool
	url    string
	token  string
	cmd    *exec.Cmd
	stderr *lockedBuffer
	read   chan struct{} // closed once stderr is read to its end
	// stdio's processes' stderr, one buffer each.
	mu      sync.Mutex
	stderrs []*lockedBuffer
}

func startGateway(t *testing.T, policy string, overHTTP bool, args ...string) *gatewayRun {
	t.Helper()
	return startGatewayWith(t, policy, overHTTP, nil, args...)
}

// startGatewayWith is startGateway, with setup run on an HTTP gateway's
// command before it starts.
func startGatewayWith(t *testing.T, policy string, overHTTP bool, setup func(*exec.Cmd), args ...string) *gatewayRun {
	t.Helper()
	root := t.TempDir()
	g := &gatewayRun{t: t, dir: filepath.Join(root, "project"), state: filepath.Join(root, "state"), http: overHTTP}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	g.write(policy)
	if !overHTTP {
		return g
	}
	g.token = "test-token-0123456789"
	g.cmd = g.command(append([]string{"--http", "127.0.0.1:0"}, args...)...)
	g.cmd.Env = append(g.cmd.Env, tokenEnv+"="+g.token)
	g.stderr = &lockedBuffer{}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	g.cmd.Stderr = pw
	if setup != nil {
		setup(g.cmd)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	t.Cleanup(func() { g.stop() })
	lines := bufio.NewScanner(pr)
	listening := regexp.MustCompile(`listening on (http://\S+/mcp)`)
	for lines.Scan() {
		fmt.Fprintln(g.stderr, lines.Text())
		if m := listening.FindStringSubmatch(lines.Text()); m != nil {
			g.url = m[1]
			break
		}
	}
	if g.url == "" {
		t.Fatalf("the gateway did not say where it listens:\n%s", g.stderr)
	}
	g.read = make(chan struct{})
	go func() {
		defer close(g.read)
		defer pr.Close()
		for lines.Scan() {
			fmt.Fprintln(g.stderr, lines.Text())
		}
	}()
	return g
}

// command is chock mcp serve in the project folder, this test binary
// running as chock.
func (g *gatewayRun) command(args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		g.t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"mcp", "serve", "--config", "chock.zon"}, args...)...)
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), asChockEnv+"=1", "CHOCK_STATE_DIR="+g.state, "GW_TOKEN="+gwToken, "HELPER_KEY="+gwHelperKey)
	return cmd
}

// write replaces the project's chock.zon, as an editor saves: a new file
// renamed over the old.
func (g *gatewayRun) write(policy string) {
	tmp := filepath.Join(g.dir, ".chock.zon.tmp")
	if err := os.WriteFile(tmp, []byte(policy), 0o644); err != nil {
		g.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(g.dir, "chock.zon")); err != nil {
		g.t.Fatal(err)
	}
}

// stop ends an HTTP gateway as a person would, with SIGTERM.
func (g *gatewayRun) stop() {
	if g.cmd == nil || g.cmd.Process == nil || g.cmd.ProcessState != nil {
		return
	}
	g.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- g.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		g.cmd.Process.Kill()
		<-done
	}
	<-g.read
}

// allStderr is everything the gateway processes wrote on stderr.
func (g *gatewayRun) allStderr() string {
	if g.http {
		return g.stderr.String()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	for _, s := range g.stderrs {
		b.WriteString(s.String())
	}
	return b.String()
}

// bearer adds the gateway's token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens a client session speaking proto, with opts.
func (g *gatewayRun) connect(proto string, opts *mcp.ClientOptions) *mcp.ClientSession {
	g.t.Helper()
	var t mcp.Transport
	if g.http {
		t = &mcp.StreamableClientTransport{Endpoint: g.url, HTTPClient: &http.Client{Transport: bearer{g.token, http.DefaultTransport}}}
	} else {
		cmd := g.command()
		buf := &lockedBuffer{}
		cmd.Stderr = buf
		g.mu.Lock()
		g.stderrs = append(g.stderrs, buf)
		g.mu.Unlock()
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}
	}
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	if opts.Capabilities == nil {
		opts.Capabilities = &mcp.ClientCapabilities{}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1.2.3"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		g.t.Fatalf("connecting (%s): %v\n%s", proto, err, g.allStderr())
	}
	g.t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// call calls a tool and returns its text and whether it is an error
// result; a JSON-RPC error fails the test (a refusal is never one).
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a JSON-RPC error: %v", name, err)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	text := strings.Join(parts, "\n")
	for _, v := range []string{gwToken, gwHelperKey} {
		if strings.Contains(text, v) {
			t.Fatalf("%s: a secret value in the result: %q", name, text)
		}
	}
	return text, res.IsError
}

func argv(a ...string) map[string]any { return map[string]any{"argv": a} }

func wantContains(t *testing.T, what, text string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(text, s) {
			t.Errorf("%s: want %q in\n%s", what, s, text)
		}
	}
}

// TestMCPServe drives chock mcp serve with the go-sdk's client over stdio
// and Streamable HTTP, in 2025-11-25 and 2026-07-28: the tool list, an
// allowed call, a denied call (and a denied tool called by name), an ask
// answered yes and no through elicitation, an ask with no way to ask, a
// secret masked in a program's and a server's result, and the policy
// swapped on edit with list_changed (and kept on a broken edit).
func TestMCPServe(t *testing.T) {
	for _, overHTTP := range []bool{false, true} {
		for _, proto := range []string{"2025-11-25", "2026-07-28"} {
			name := "stdio/" + proto
			if overHTTP {
				name = "http/" + proto
			}
			t.Run(name, func(t *testing.T) { testMCPServe(t, overHTTP, proto) })
		}
	}
}

func testMCPServe(t *testing.T, overHTTP bool, proto string) {
	g := startGateway(t, gwPolicy(t, ""), overHTTP)

	// A client that can be asked, and says what the test tells it to.
	var (
		mu       sync.Mutex
		answer   bool
		asked    []string
		changed  = make(chan struct{}, 16)
		elicitOK = &mcp.ClientOptions{
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				if answer {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}, nil
				}
				return &mcp.ElicitResult{Action: "decline"}, nil
			},
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		}
	)
	cs := g.connect(proto, elicitOK)

	// list: chock's own tools and the helper's allowed ones; net is denied.
	got := toolNames(t, cs)
	want := []string{"exec", "fetch_url", "helper__echo", "helper__env"}
	if !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}

	// An allowed call, and an upstream tool re-served.
	if text, isErr := call(t, cs, "exec", argv("echo", "hello", "gateway")); isErr || text != "exit 0\nstdout:\nhello gateway\n" {
		t.Errorf("exec echo = %q (error %v)", text, isErr)
	}
	if text, isErr := call(t, cs, "helper__echo", map[string]any{"message": "hi"}); isErr || text != "echo: hi" {
		t.Errorf("helper__echo = %q (error %v)", text, isErr)
	}

	// A denied call: a tool result naming the action, the decision and the
	// rule with its position, and no edit that would widen the policy.
	text, isErr := call(t, cs, "exec", argv("cat", "/etc/hostname"))
	if !isErr {
		t.Errorf("exec cat was not refused: %q", text)
	}
	wantContains(t, "exec cat", text, "refused by chock: exec.path.cat", "exec.path.cat is deny", `the project rule "exec.path.cat" (deny) at chock.zon:5:`)
	if strings.Contains(text, "hint") || strings.Contains(text, ".policy.allow") || strings.Contains(text, "to allow") {
		t.Errorf("the refusal tells the model how to widen its policy: %q", text)
	}
	// A denied tool is not listed, and calling it by name is refused the same way.
	text, isErr = call(t, cs, "helper__net", nil)
	if !isErr {
		t.Errorf("helper__net was not refused: %q", text)
	}
	wantContains(t, "helper__net", text, "refused by chock: mcp.helper.tool.net", `the project rule "mcp.helper.tool.net" (deny) at chock.zon:5:`)

	// A secret masked in a program's result and in a server's.
	if text, isErr := call(t, cs, "exec", argv("sh", "-c", "echo token=$GW_TOKEN")); isErr || text != "exit 0\nstdout:\ntoken=[secret:GW_TOKEN]\n" {
		t.Errorf("exec sh = %q (error %v)", text, isErr)
	}
	text, _ = call(t, cs, "helper__env", nil)
	wantContains(t, "helper__env", text, "HELPER_KEY=[secret:HELPER_KEY]")

	// An ask put through elicitation: yes runs the call, no refuses it.
	mu.Lock()
	answer = true
	mu.Unlock()
	if text, isErr := call(t, cs, "exec", argv("true")); isErr || text != "exit 0\n" {
		t.Errorf("exec true, answered yes = %q (error %v)", text, isErr)
	}
	mu.Lock()
	answer = false
	mu.Unlock()
	text, isErr = call(t, cs, "exec", argv("true"))
	if !isErr {
		t.Errorf("exec true, answered no, was not refused: %q", text)
	}
	wantContains(t, "exec true, answered no", text, "refused by chock: exec.path.true", "exec.path.true is ask", "the answer was no")
	mu.Lock()
	if len(asked) != 2 {
		t.Errorf("the client was asked %d times, want 2 (one a call): %q", len(asked), asked)
	} else {
		wantContains(t, "the question", asked[0], "the policy asks before exec.path.true", "chock.zon:4:", "Allow exec.path.true this once?")
	}
	mu.Unlock()

	// An ask with no way to ask: a client that declared no elicitation.
	plain := g.connect(proto, nil)
	text, isErr = call(t, plain, "exec", argv("true"))
	if !isErr {
		t.Errorf("exec true, no way to ask, was not refused: %q", text)
	}
	wantContains(t, "exec true, no way to ask", text, "exec.path.true is ask", "the client declared no elicitation")

	// The policy follows its file. A broken edit keeps it.
	g.write(gwPolicy(t, `, "exec.path.cat" ,,`))
	waitFor(t, func() bool { return strings.Contains(g.allStderr(), "the running policy stays") }, g.allStderr)
	if _, isErr := call(t, cs, "exec", argv("echo", "still")); isErr {
		t.Errorf("echo refused after a broken edit")
	}
	// An edit that widens is held: the file may be written by what the
	// session runs, so a widening is never swapped in on its own.
	g.write(gwPolicy(t, `, "exec.path.ls"`))
	waitFor(t, func() bool { return strings.Contains(g.allStderr(), "widens what the agent may do") }, g.allStderr)
	wantContains(t, "stderr", g.allStderr(), "exec.path.ls", "the running policy stays until chock mcp serve restarts")
	if text, isErr := call(t, cs, "exec", argv("ls")); !isErr || !strings.Contains(text, "refused by chock: exec.path.ls") {
		t.Errorf("ls after the held edit = %q", text)
	}
	// An edit that only narrows swaps the policy: echo now denied, the
	// helper's echo no longer offered; the client is told.
	for len(changed) > 0 {
		<-changed
	}
	edited := strings.Replace(gwPolicy(t, ""), `.deny = .{ "exec.path.cat"`, `.deny = .{ "exec.path.cat", "exec.path.echo", "mcp.helper.tool.echo"`, 1)
	edited = strings.Replace(edited, `"exec.path.echo", "exec.path.sh"`, `"exec.path.sh"`, 1)
	edited = strings.Replace(edited, `, "mcp.helper.tool.echo", "mcp.helper.tool.env"`, `, "mcp.helper.tool.env"`, 1)
	g.write(edited)
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatalf("no notifications/tools/list_changed after the edit:\n%s", g.allStderr())
	}
	got = toolNames(t, cs)
	if want := []string{"exec", "fetch_url", "helper__env"}; !slices.Equal(got, want) {
		t.Errorf("tools after the edit = %v, want %v", got, want)
	}
	text, isErr = call(t, cs, "exec", argv("echo", "now?"))
	if !isErr {
		t.Errorf("echo was not refused after the edit: %q", text)
	}
	wantContains(t, "echo after the edit", text, `the project rule "exec.path.echo" (deny)`)

	// The session log: the client, its protocol, every call.
	cs.Close()
	plain.Close()
	g.stop()
	for _, v := range []string{gwToken, gwHelperKey, "DATA RACE", "panic"} {
		if strings.Contains(g.allStderr(), v) {
			t.Errorf("%q on stderr:\n%s", v, g.allStderr())
		}
	}
	if overHTTP {
		if code := g.cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
			t.Errorf("the gateway exited %d after SIGTERM, want %d", code, 128+int(syscall.SIGTERM))
		}
	}
	logs := sessionLogs(t, g.state)
	var connected, calls, swapped, held int
	for id, evs := range logs {
		if last := evs[len(evs)-1]; last["kind"] != "session.end" {
			t.Errorf("session %s did not end: its last event is %v", id, last)
		} else {
			t.Logf("session %s: %v", id, last["reason"])
		}
		for _, ev := range evs {
			switch ev["kind"] {
			case "client.connected":
				if ev["client"] == "gateway-test" && ev["client_version"] == "1.2.3" && ev["protocol"] == proto {
					connected++
				}
			case "tool.call":
				calls++
			case "policy.held":
				held++
			case "policy.swapped":
				swapped++
			}
		}
	}
	// Over HTTP, every 2026-07-28 request is served by one sessionless
	// session, where the two clients (named alike) are one.
	wantConnected := 2
	if overHTTP && proto >= "2026-07-28" {
		wantConnected = 1
	}
	if connected != wantConnected || calls < 10 || swapped < 1 || held < 1 {
		t.Errorf("the logs have %d client.connected (want %d, for %s), %d tool.call (want 10 or more), %d policy.swapped, %d policy.held", connected, wantConnected, proto, calls, swapped, held)
	}
	t.Logf("stderr:\n%s", g.allStderr())
}

// waitFor waits, within a generous bound, for ok to hold, checking it
// after each write to a gateway's stderr (what ok reads).
func waitFor(t *testing.T, ok func() bool, what func() string) {
	t.Helper()
	if !stderrWritten.Within(30*time.Second, ok) {
		t.Fatalf("timed out waiting; so far:\n%s", what())
	}
}

// sessionLogs reads every session log under state, failing on a secret
// value in any of them.
func sessionLogs(t *testing.T, state string) map[string][]sessionlog.Event {
	t.Helper()
	dir := filepath.Join(state, "sessions")
	infos, err := sessionlog.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]sessionlog.Event{}
	for _, in := range infos {
		raw, err := os.ReadFile(filepath.Join(dir, in.ID+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{gwToken, gwHelperKey} {
			if strings.Contains(string(raw), v) {
				t.Fatalf("a secret value in session log %s", in.ID)
			}
		}
		evs, err := sessionlog.Read(dir, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		out[in.ID] = evs
	}
	return out
}

// TestMCPServeHTTPGuards: over HTTP a request without the token is 401, a
// Host that is not this machine 403, and --http refuses an address that
// is not loopback.
func TestMCPServeHTTPGuards(t *testing.T) {
	g := startGateway(t, `.{ .policy = .{ .allow = .{"exec.path.echo"} } }`, true)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(token, host string) int {
		req, _ := http.NewRequest(http.MethodPost, g.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("", ""); got != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", got)
	}
	if got := post("wrong", ""); got != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", got)
	}
	if got := post(g.token, "evil.example:80"); got != http.StatusForbidden {
		t.Errorf("a foreign Host: %d, want 403", got)
	}
	if got := post(g.token, ""); got != http.StatusOK {
		t.Errorf("the token: %d, want 200", got)
	}
}

// TestMCPServeEverything: server-everything's tools re-served, with their
// descriptions, schemas and annotations, a denied one neither listed nor
// callable, over stdio and HTTP.
func TestMCPServeEverything(t *testing.T) {
	mcptest.Everything(t)
	for _, overHTTP := range []bool{false, true} {
		name := "stdio"
		if overHTTP {
			name = "http"
		}
		t.Run(name, func(t *testing.T) { testMCPServeEverything(t, overHTTP) })
	}
}

func testMCPServeEverything(t *testing.T, overHTTP bool) {
	node, script := mcptest.Everything(t)
	policy := fmt.Sprintf(`.{
    .policy = .{
        .allow = .{ "mcp.everything.network", "mcp.everything.tool.echo", "mcp.everything.tool.get-sum" },
        .deny = .{ "mcp.everything.tool.get-env" },
    },
    .mcp_servers = .{ .{ .name = "everything", .command = .{ %q, %q, "stdio" } } },
}
`, node, script)
	g := startGateway(t, policy, overHTTP)
	cs := g.connect("2025-11-25", nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		tools[tl.Name] = tl
	}
	echo := tools["everything__echo"]
	if echo == nil || tools["everything__get-sum"] == nil || tools["everything__get-env"] != nil || len(tools) != 4 {
		t.Fatalf("tools = %v", slices.Sorted(maps.Keys(tools)))
	}
	if echo.Description != "Echoes back the input string" || echo.Annotations == nil || !echo.Annotations.ReadOnlyHint {
		t.Errorf("echo re-served as %+v (annotations %+v)", echo, echo.Annotations)
	}
	schema, _ := json.Marshal(echo.InputSchema)
	if !strings.Contains(string(schema), `"message"`) {
		t.Errorf("echo's schema = %s", schema)
	}
	if text, isErr := call(t, cs, "everything__echo", map[string]any{"message": "through chock"}); isErr || text != "Echo: through chock" {
		t.Errorf("echo = %q (error %v)", text, isErr)
	}
	if text, isErr := call(t, cs, "everything__get-sum", map[string]any{"a": 2, "b": 3}); isErr || !strings.Contains(text, "5") {
		t.Errorf("get-sum = %q (error %v)", text, isErr)
	}
	text, isErr := call(t, cs, "everything__get-env", nil)
	if !isErr || !strings.Contains(text, "refused by chock: mcp.everything.tool.get-env") {
		t.Errorf("get-env by name = %q (error %v)", text, isErr)
	}
}

// TestMCPServeBundleSwap: a gateway started on a compiled bundle follows
// the bundle file, but a bundle cannot be shown to only narrow, so a new
// one is held (policy.held), and the running policy stays.
func TestMCPServeBundleSwap(t *testing.T) {
	g := startGateway(t, `.{ .policy = .{ .allow = .{ "exec.path.echo" } } }`, false)
	compileTo := func(policy, out string) {
		t.Helper()
		src := filepath.Join(g.dir, "src.zon")
		if err := os.WriteFile(src, []byte(policy), 0o644); err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		if code := run(context.Background(), []string{"compile", "-o", out, src}, stdio{in: strings.NewReader(""), out: io.Discard, err: &stderr}); code != 0 {
			t.Fatalf("compile: %d %s", code, stderr.String())
		}
	}
	bundle := filepath.Join(g.dir, "bundle.tar.gz")
	compileTo(`.{ .policy = .{ .allow = .{ "exec.path.echo" } } }`, bundle)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "mcp", "serve", "--bundle", "bundle.tar.gz")
	cmd.Dir = g.dir
	cmd.Env = append(os.Environ(), asChockEnv+"=1", "CHOCK_STATE_DIR="+g.state)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	changed := make(chan struct{}, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "bundle-test", Version: "1"}, &mcp.ClientOptions{
		Capabilities:           &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if text, isErr := call(t, cs, "exec", argv("echo", "one")); isErr {
		t.Fatalf("echo = %q", text)
	}
	// A bundle written in place of the old one (compile -o replaces it whole).
	compileTo(`.{ .policy = .{ .allow = .{ "exec.path.echo", "exec.path.curl" } } }`, bundle)
	waitFor(t, func() bool { return strings.Contains(stderr.String(), "held as a widening") }, stderr.String)
	if text, isErr := call(t, cs, "exec", argv("curl", "--version")); !isErr || !strings.Contains(text, "refused by chock: exec.path.curl") {
		t.Errorf("curl after the held edit = %q", text)
	}
	select {
	case <-changed:
		t.Error("the client was told its tools changed")
	default:
	}
	wantContains(t, "stderr", stderr.String(), "the running policy stays")
}
