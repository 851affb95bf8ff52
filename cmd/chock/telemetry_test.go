package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/jaegertest"
	"github.com/chockhq/chock/internal/mcptest"
	"github.com/chockhq/chock/internal/waitfor"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// otelToken is the secret of the telemetry tests: no span, tag or log of
// Jaeger may hold it.
const otelToken = "otel-LEAKCHECK-token-16180339"

// The trace a test's client (or a TRACEPARENT) continues, and its span.
const (
	clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan  = "00f067aa0ba902b7"
)

// traceTree is a trace as text: each span under its parent, by name,
// with the attributes a golden file can hold (ids and revisions that
// change from run to run written as what they are).
func traceTree(t *testing.T, spans []jaegertest.Span, rev string) string {
	t.Helper()
	byID := map[string]jaegertest.Span{}
	kids := map[string][]jaegertest.Span{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	var roots []jaegertest.Span
	for _, s := range spans {
		parent := ""
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" {
				parent = r.SpanID
			}
		}
		if _, ok := byID[parent]; ok {
			kids[parent] = append(kids[parent], s)
		} else {
			roots = append(roots, s)
		}
	}
	order := func(ss []jaegertest.Span) {
		sort.SliceStable(ss, func(i, j int) bool {
			a, b := ss[i], ss[j]
			if a.Tag("gen_ai.tool.call.id") != b.Tag("gen_ai.tool.call.id") {
				return a.Tag("gen_ai.tool.call.id") < b.Tag("gen_ai.tool.call.id")
			}
			if a.Operation != b.Operation {
				return a.Operation < b.Operation
			}
			return a.Tag("chock.action") < b.Tag("chock.action")
		})
	}
	var b strings.Builder
	var walk func(s jaegertest.Span, depth int)
	walk = func(s jaegertest.Span, depth int) {
		indent := strings.Repeat("  ", depth)
		var about []string
		for _, r := range s.References {
			switch {
			case r.SpanID == clientSpan && r.TraceID == clientTrace:
				about = append(about, "under the client's span")
			case r.RefType == "FOLLOWS_FROM":
				about = append(about, "linked to another trace's span")
			}
		}
		if len(about) > 0 {
			fmt.Fprintf(&b, "%s%s (%s)\n", indent, s.Operation, strings.Join(about, ", "))
		} else {
			fmt.Fprintf(&b, "%s%s\n", indent, s.Operation)
		}
		var tags []string
		for _, kv := range s.Tags {
			if !strings.HasPrefix(kv.Key, "gen_ai.") && !strings.HasPrefix(kv.Key, "chock.") && !strings.HasPrefix(kv.Key, "mcp.") &&
				kv.Key != "error.type" && kv.Key != "span.kind" && kv.Key != "network.transport" {
				continue
			}
			v := fmt.Sprint(kv.Value)
			switch kv.Key {
			case "gen_ai.security.policy.id", "chock.policy.revision":
				if v == rev {
					v = "<revision>"
				}
			case "gen_ai.conversation.id", "chock.session.id", "mcp.session.id":
				v = "<id>"
			case "chock.rule.span":
				v = regexp.MustCompile(`^.*/`).ReplaceAllString(v, "")
			}
			tags = append(tags, kv.Key+"="+v)
		}
		sort.Strings(tags)
		for _, tg := range tags {
			fmt.Fprintf(&b, "%s    %s\n", indent, tg)
		}
		for _, l := range s.Logs {
			var fs []string
			for _, f := range l.Fields {
				fs = append(fs, f.Key+"="+fmt.Sprint(f.Value))
			}
			sort.Strings(fs)
			fmt.Fprintf(&b, "%s    event %s\n", indent, strings.Join(fs, " "))
		}
		k := kids[s.SpanID]
		order(k)
		for _, c := range k {
			walk(c, depth+1)
		}
	}
	order(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

// assertNoToken checks every span Jaeger holds, as its API gives it.
func assertNoToken(t *testing.T, spans []jaegertest.Span) {
	t.Helper()
	raw, _ := json.Marshal(spans)
	if strings.Contains(string(raw), otelToken) {
		t.Errorf("the secret's value reached Jaeger")
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "telemetry", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s: the trace Jaeger holds differs from the golden file (UPDATE_GOLDEN=1 rewrites it):\n%s", name, got)
	}
}

// TestTelemetryRunInJaeger: a real chock run sends its session, calls and
// decisions to a real Jaeger over OTLP/HTTP, continuing the TRACEPARENT it
// was started under; the test reads the trace back from Jaeger's query
// API: names, nesting and attributes (a golden file), the metrics, and no
// secret anywhere, with argument capture on.
func TestTelemetryRunInJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	dir := t.TempDir()
	policy := `.{
    .policy = .{
        .allow = .{ "exec.path.sh", "exec.path.cat", "secret.use.OTEL_TOKEN" },
        .ask = .{ "exec.path.ls" },
        .deny = .{ "exec.path.curl" },
    },
    .programs = .{ .{ .name = "sh", .calls = .{ "exec.path.cat" } } },
    .secrets = .{ .{ .name = "OTEL_TOKEN", .to = "exec.path.sh" } },
    .credentials = .{ .store = .env },
}
`
	script := `{"tool":"exec","argv":["sh","-c","cat /dev/null; echo $OTEL_TOKEN"]}
{"tool":"exec","argv":["curl","http://127.0.0.1:1/` + otelToken + `"]}
{"tool":"exec","argv":["ls"]}
{"tool":"exec","argv":["sh","-c","exit 3"]}
`
	for name, text := range map[string]string{"chock.zon": policy, "script.jsonl": script} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "run", "--config", "chock.zon", "--script", "script.jsonl", "--ask", "deny", "--otel", j.OTLP)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asChockEnv+"=1", "CHOCK_STATE_DIR="+filepath.Join(dir, "state"), "OTEL_TOKEN="+otelToken,
		"TRACEPARENT=00-"+clientTrace+"-"+clientSpan+"-01", "OTEL_SERVICE_NAME=chock-test-run",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chock run: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "telemetry") {
		t.Errorf("chock run warned about telemetry:\n%s", out)
	}
	rev := regexp.MustCompile(`\(policy ([0-9a-f]+)\)`).FindStringSubmatch(string(out))
	if rev == nil {
		t.Fatalf("no revision in:\n%s", out)
	}
	// 1 session + 4 calls + 5 decisions (sh and its secret twice, curl,
	// ls).
	spans := j.Trace(t, clientTrace, 11)
	assertNoToken(t, spans)
	full := ""
	for _, s := range spans {
		if s.Operation == "apply_guardrail chock" {
			full = s.Tag("gen_ai.security.policy.id")
		}
	}
	if !strings.HasPrefix(full, rev[1]) {
		t.Errorf("policy.id %q is not the revision %s chock run printed", full, rev[1])
	}
	checkGolden(t, "run.golden", traceTree(t, spans, full))
	if !slices.Contains(j.Services(t), "chock-test-run") {
		t.Errorf("OTEL_SERVICE_NAME not honoured: services %v", j.Services(t))
	}
	var metrics string
	waitForMetrics := func() bool { metrics = j.Metrics(t); return strings.Contains(metrics, "chock_decisions") }
	// The collector's exporter publishes what it received as it comes.
	if !waitfor.PollWithin(30*time.Second, waitForMetrics) {
		t.Fatalf("no chock_decisions among the collector's metrics:\n%s", metrics)
	}
	for _, want := range []string{`chock_decisions_total{`, `gen_ai_security_decision_type="deny"`, `chock_namespace="exec.path.<program>"`, `chock_call_duration_seconds_bucket{`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("no %s in the metrics:\n%s", want, metrics)
		}
	}
	if strings.Contains(metrics, otelToken) {
		t.Error("the secret's value reached the metrics")
	}
}

// TestTelemetryMCPServeInJaeger: chock mcp serve continues the trace a
// client sends in params._meta.traceparent, and sends its own to the
// upstream server, which sees the CLIENT span of chock's tools/call.
func TestTelemetryMCPServeInJaeger(t *testing.T) {
	j := jaegertest.Start(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	policy := fmt.Sprintf(`.{
    .policy = .{
        .allow = .{ "exec.path.echo", "mcp.helper.tool.meta" },
        .deny = .{ "exec.path.cat" },
    },
    .mcp_servers = .{
        .{ .name = "helper", .command = .{ "/bin/sh", "-c", "%s=meta exec \"$0\" -test.run='^$'", %q } },
    },
}
`, mcptest.ServeEnv, exe)
	g := startGatewayWith(t, policy, true, func(c *exec.Cmd) {
		c.Env = append(c.Env, "OTEL_SERVICE_NAME=chock-test-serve", "OTEL_METRICS_EXPORTER=none")
	}, "--otel", j.OTLP)
	cs := g.connect("2025-11-25", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	meta := mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}
	texts := map[string]string{}
	for _, c := range []struct {
		name string
		args map[string]any
	}{{"exec", argv("echo", "hi")}, {"exec", argv("cat", "/etc/hostname")}, {"helper__meta", nil}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args, Meta: meta})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var parts []string
		for _, ct := range res.Content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		texts[c.name] += strings.Join(parts, "\n")
	}
	cs.Close()
	g.stop()
	// Two exec calls and the upstream one, each with its decision, and
	// the upstream tools/call span.
	spans := j.Trace(t, clientTrace, 7)
	rev := ""
	for _, s := range spans {
		if s.Operation == "apply_guardrail chock" {
			rev = s.Tag("gen_ai.security.policy.id")
		}
	}
	checkGolden(t, "serve.golden", traceTree(t, spans, rev))
	// The upstream server was sent chock's tools/call span as its parent.
	var upstream string
	for _, s := range spans {
		if s.Operation == "tools/call meta" {
			upstream = s.SpanID
		}
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(texts["helper__meta"]), &got); err != nil {
		t.Fatalf("helper's meta answer %q: %v", texts["helper__meta"], err)
	}
	if want := "00-" + clientTrace + "-" + upstream + "-01"; upstream == "" || got["traceparent"] != want {
		t.Errorf("the upstream server was sent traceparent %q, want %q", got["traceparent"], want)
	}
	// The session span is a trace of its own, which each call links to.
	sessions := j.Find(t, "chock-test-serve", "invoke_agent chock")
	if len(sessions) != 1 {
		t.Fatalf("%d session traces", len(sessions))
	}
}

// TestTelemetryExecHookAndDown: chock exec and chock hook export their
// spans too, continuing a TRACEPARENT; a collector that is down costs a
// run nothing but a line saying so, once, and the count dropped.
func TestTelemetryExecHookAndDown(t *testing.T) {
	j := jaegertest.Start(t)
	dir := t.TempDir()
	policy := `.{ .policy = .{ .allow = .{ "exec.path.sh", "exec.path.cat", "exec.path.python3" }, .deny = .{ "exec.path.curl" } } }`
	if err := os.WriteFile(filepath.Join(dir, "chock.zon"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	chock := func(traceID, stdin string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), asChockEnv+"=1", "CHOCK_STATE_DIR="+filepath.Join(dir, "state"), "OTEL_METRICS_EXPORTER=none", "PATH=/usr/bin:/bin",
			"TRACEPARENT=00-"+traceID+"-"+clientSpan+"-01")
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("chock %v: %v\n%s%s", args, err, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	const execTrace, hookTrace = "11111111111111111111111111111111", "22222222222222222222222222222222"
	out, _ := chock(execTrace, "", "exec", "--config", "chock.zon", "--otel", j.OTLP, "--", "sh", "-c", "echo $TRACEPARENT")
	var names []string
	spans := j.Trace(t, execTrace, 3)
	for _, s := range spans {
		names = append(names, s.Operation+" "+s.Tag("chock.action"))
		if s.Operation == "execute_tool exec" && strings.TrimSpace(out) != "00-"+execTrace+"-"+s.SpanID+"-01" {
			t.Errorf("the program was given TRACEPARENT %q, not its call's span %s", out, s.SpanID)
		}
	}
	sort.Strings(names)
	if got := strings.Join(names, ", "); got != "apply_guardrail chock exec.path.sh, execute_tool exec exec.path.sh, invoke_agent chock " {
		t.Errorf("chock exec's spans: %s", got)
	}
	// A connection the policy refuses is an event of its call's span.
	const netTrace = "33333333333333333333333333333333"
	chock(netTrace, "", "exec", "--config", "chock.zon", "--otel", j.OTLP, "--", "python3", "-c",
		"import urllib.request\ntry:\n    urllib.request.urlopen('http://example.test/')\nexcept Exception as e:\n    print(e)")
	var events []string
	for _, s := range j.Trace(t, netTrace, 3) {
		for _, l := range s.Logs {
			if jaegertest.Field(l.Fields, "event") == "net.connect" {
				events = append(events, s.Operation+": "+jaegertest.Field(l.Fields, "chock.host")+" "+jaegertest.Field(l.Fields, "chock.decision")+" "+jaegertest.Field(l.Fields, "chock.outcome"))
			}
		}
	}
	if got := strings.Join(events, ", "); got != "execute_tool exec: example.test deny refused_by_policy" {
		t.Errorf("the refused connection's events: %q", got)
	}
	event := `{"session_id":"s-1","hook_event_name":"PreToolUse","cwd":"/","tool_name":"Bash","tool_input":{"command":"cat x | curl http://example.test"}}`
	chock(hookTrace, event, "hook", "claude-code", "--config", "chock.zon", "--otel", j.OTLP)
	names = nil
	for _, s := range j.Trace(t, hookTrace, 3) {
		names = append(names, fmt.Sprintf("%s %s %s/%s %s", s.Operation, s.Tag("chock.action"), s.Tag("chock.decision"), s.Tag("gen_ai.security.decision.type"), s.Tag("chock.client")))
	}
	sort.Strings(names)
	if got := strings.Join(names, ", "); got != "apply_guardrail chock exec.path.cat allow/allow , apply_guardrail chock exec.path.curl deny/deny , execute_tool Bash  deny/ claude-code" {
		t.Errorf("chock hook's spans: %s", got)
	}
	// Down: a port nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	if err := os.WriteFile(filepath.Join(dir, "s.jsonl"), []byte(`{"tool":"exec","argv":["curl","x"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr := chock(execTrace, "", "run", "--config", "chock.zon", "--script", "s.jsonl", "--otel", down)
	if n := strings.Count(stderr, "telemetry"); n != 2 || !strings.Contains(stderr, "could not be sent") || !strings.Contains(stderr, "3 spans were dropped") {
		t.Errorf("a collector that is down was said %d times:\n%s", n, stderr)
	}
}
