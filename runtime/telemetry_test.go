package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chockhq/chock/runtime/telemetry"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// recordSpans installs an in-memory tracer provider as the global one for
// the test.
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	telemetry.SetRecording(true, false)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		telemetry.SetRecording(false, false)
		tp.Shutdown(context.Background())
	})
	return rec
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

// TestSpansOfASession runs an allowed call (given a secret, running a
// nested program), a denied one and an asked one answered no, and reads
// the spans: their names, nesting and attributes, and no value anywhere
// in them, with argument capture on.
func TestSpansOfASession(t *testing.T) {
	rec := recordSpans(t)
	t.Setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
	f := newFixture(t, testPolicy, values, nil)
	tok := values["GITHUB_TOKEN"]
	if _, err := f.exec(t, 0, "sh", "-c", "cat /dev/null "+tok+" || true"); err != nil {
		t.Fatal(err)
	}
	res, err := f.exec(t, 0, "sh", "-c", "echo $TRACEPARENT")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.exec(t, 0, "curl", "http://127.0.0.1:1/"); err == nil {
		t.Fatal("curl ran")
	}
	if _, err := f.exec(t, 0, "ls"); err == nil {
		t.Fatal("ls ran unasked")
	}
	f.s.Close()

	spans := rec.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	var session sdktrace.ReadOnlySpan
	var lines []string
	for _, s := range spans {
		a := attrs(s.Attributes())
		for k, v := range a {
			assertNoForms(t, "span "+s.Name()+" attribute "+k, v)
		}
		for _, ev := range s.Events() {
			for k, v := range attrs(ev.Attributes) {
				assertNoForms(t, "event "+ev.Name+" attribute "+k, v)
			}
		}
		parent := "-"
		if p, ok := byID[s.Parent().SpanID()]; ok {
			parent = p.Name()
		}
		switch s.Name() {
		case "invoke_agent chock":
			session = s
			lines = append(lines, fmt.Sprintf("%s <%s> conversation=%v", s.Name(), parent, a["gen_ai.conversation.id"] == f.s.ID))
		case "execute_tool exec":
			for _, ev := range s.Events() {
				e := attrs(ev.Attributes)
				lines = append(lines, fmt.Sprintf("event %s of %s: %s %s %s", ev.Name, e["chock.parent"], e["chock.action"], e["chock.decision"], e["chock.outcome"]))
			}
			lines = append(lines, fmt.Sprintf("%s <%s> id=%s action=%s outcome=%s error=%s", s.Name(), parent, a["gen_ai.tool.call.id"], a["chock.action"], a["chock.outcome"], a["error.type"]))
			if !strings.Contains(a["gen_ai.tool.call.arguments"], "argv") {
				t.Errorf("no arguments captured: %v", a)
			}
		case "apply_guardrail chock":
			lines = append(lines, fmt.Sprintf("%s <%s> %s %s=%s/%s layer=%s rule=%s target=%s reason=%s answer=%s span=%v policy=%v", s.Name(), parent, a["gen_ai.security.target.id"],
				a["chock.action"], a["chock.decision"], a["gen_ai.security.decision.type"], a["chock.layer"], a["chock.rule"], a["gen_ai.security.target.type"],
				a["gen_ai.security.decision.reason"], a["chock.ask.answer"], a["chock.rule.span"] != "", a["gen_ai.security.policy.id"] == f.s.opts.Engine.Revision()))
		}
	}
	if session == nil {
		t.Fatal("no session span")
	}
	got := strings.Join(lines, "\n")
	want := `apply_guardrail chock <execute_tool exec> c1 exec.path.sh=allow/allow layer=project rule=exec.path.sh target=tool_call reason= answer= span=true policy=true
apply_guardrail chock <execute_tool exec> c1 secret.use.GITHUB_TOKEN=allow/allow layer=project rule=secret.use.GITHUB_TOKEN target=tool_call reason= answer= span=true policy=true
apply_guardrail chock <execute_tool exec> c1 secret.use.GCP_KEY=allow/allow layer=project rule=secret.use.GCP_KEY target=tool_call reason= answer= span=true policy=true
apply_guardrail chock <execute_tool exec> c1 secret.use.BG_TOKEN=allow/allow layer=project rule=secret.use.BG_TOKEN target=tool_call reason= answer= span=true policy=true
event exec.nested of c1: exec.path.cat allow run
execute_tool exec <invoke_agent chock> id=c1 action=exec.path.sh outcome=done error=
apply_guardrail chock <execute_tool exec> c2 exec.path.sh=allow/allow layer=project rule=exec.path.sh target=tool_call reason= answer= span=true policy=true
apply_guardrail chock <execute_tool exec> c2 secret.use.GITHUB_TOKEN=allow/allow layer=project rule=secret.use.GITHUB_TOKEN target=tool_call reason= answer= span=true policy=true
apply_guardrail chock <execute_tool exec> c2 secret.use.GCP_KEY=allow/allow layer=project rule=secret.use.GCP_KEY target=tool_call reason= answer= span=true policy=true
apply_guardrail chock <execute_tool exec> c2 secret.use.BG_TOKEN=allow/allow layer=project rule=secret.use.BG_TOKEN target=tool_call reason= answer= span=true policy=true
execute_tool exec <invoke_agent chock> id=c2 action=exec.path.sh outcome=done error=
apply_guardrail chock <execute_tool exec> c3 exec.path.curl=deny/deny layer=project rule=exec.path.curl target=tool_call reason=rule answer= span=true policy=true
execute_tool exec <invoke_agent chock> id=c3 action=exec.path.curl outcome=refused error=chock.refused
apply_guardrail chock <execute_tool exec> c4 exec.path.ls=ask/deny layer=project rule=exec.path.ls target=tool_call reason=ask-no answer=no span=true policy=true
execute_tool exec <invoke_agent chock> id=c4 action=exec.path.ls outcome=refused error=chock.refused
invoke_agent chock <-> conversation=true`
	if got != want {
		t.Errorf("spans:\n%s\nwant:\n%s", got, want)
	}
	// The program was told its call's span, the one that ran it.
	tp := strings.TrimSpace(res.Stdout)
	var c2 sdktrace.ReadOnlySpan
	for _, s := range spans {
		if attrs(s.Attributes())["gen_ai.tool.call.id"] == "c2" && s.Name() == "execute_tool exec" {
			c2 = s
		}
	}
	want2 := fmt.Sprintf("00-%s-%s-01", c2.SpanContext().TraceID(), c2.SpanContext().SpanID())
	if tp != want2 {
		t.Errorf("TRACEPARENT in the call = %q, want %q", tp, want2)
	}
}
