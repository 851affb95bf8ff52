package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/sessionlog"
	"github.com/chockhq/chock/runtime/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The session's side of telemetry: the spans a session, a call and a
// decision are, made from the same facts the session log records, each
// string passed through the session's redaction. With export off (no
// collector named) every span is OpenTelemetry's no-op one.

// startSpan opens the session's invoke_agent span.
func (s *Session) startSpan(ctx context.Context) {
	attrs := []attribute.KeyValue{attribute.String("chock.policy.revision", s.opts.Engine.Revision()), telemetry.Sandboxed.Bool(!s.opts.NoSandbox)}
	if s.opts.Client != "" {
		attrs = append(attrs, telemetry.Client.String(s.opts.Client))
	}
	// A session outlives the request that opened it: its span starts a
	// trace of its own unless ctx carries one to continue (chock run
	// under a TRACEPARENT, say).
	_, s.span = telemetry.StartSession(ctx, s.ID, attrs...)
}

// endSpan closes the session's span with the reason it ended.
func (s *Session) endSpan(reason string) {
	s.span.SetAttributes(attribute.String("chock.end.reason", s.redact.String(reason)), attribute.Int64("chock.calls", s.seq.Load()))
	s.span.End()
}

// startCall opens the call's execute_tool span.
func (s *Session) startCall(ctx context.Context, c *Call) context.Context {
	if !telemetry.Tracing() {
		c.span = s.span // the no-op one
		return ctx
	}
	name, typ := c.Tool, "function"
	if c.MCP != nil {
		name, typ = c.MCP.Tool, "extension"
	}
	attrs := []attribute.KeyValue{telemetry.ToolCallID.String(c.ID), telemetry.ToolType.String(typ),
		telemetry.CallTool.String(c.Tool), telemetry.ConversationID.String(s.ID), telemetry.Sandboxed.Bool(!s.opts.NoSandbox)}
	if c.MCP != nil {
		attrs = append(attrs, telemetry.MCPServer.String(s.redact.String(c.MCP.Server)))
	}
	if telemetry.CaptureArguments() {
		attrs = append(attrs, telemetry.ToolArguments.String(s.redact.String(callArguments(c))))
	}
	ctx, c.span = telemetry.StartTool(ctx, s.span, s.redact.String(name), attrs...)
	return ctx
}

// callArguments are a call's arguments as JSON, for the opt-in attribute.
func callArguments(c *Call) string {
	var v any
	switch {
	case c.Exec != nil:
		v = map[string]any{"argv": c.Exec.Argv, "dir": c.Exec.Dir}
	case c.Fetch != nil:
		v = map[string]any{"url": c.Fetch.URL}
	case c.MCP != nil:
		return string(c.MCP.Arguments)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// endCall closes the call's span with its outcome.
func (s *Session) endCall(ctx context.Context, c *Call, start time.Time, res *Result, err error) {
	sp := c.span
	if sp == nil {
		return
	}
	outcome := "done"
	defer func() { telemetry.RecordCall(ctx, c.Tool, outcome, time.Since(start).Seconds()) }()
	if !sp.IsRecording() {
		outcome = outcomeOf(err)
		return
	}
	// One SetAttributes, its slice sized once: a call's span costs little.
	attrs := make([]attribute.KeyValue, 0, 5)
	fail := func(typ, status string) {
		attrs = append(attrs, telemetry.ErrorType.String(typ))
		sp.SetStatus(codes.Error, status)
	}
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		outcome = "refused"
		fail("chock.refused", "refused")
	case errors.Is(err, context.DeadlineExceeded):
		outcome = "error"
		fail("chock.timeout", "timed out")
	case err != nil:
		outcome = "error"
		fail("chock.error", "error")
	case res != nil:
		if c.Exec != nil && !res.Background {
			attrs = append(attrs, telemetry.ExitCode.Int(res.ExitCode))
		}
		if res.TimedOut {
			attrs = append(attrs, telemetry.CallTimeout.Bool(true))
			fail("chock.timeout", "timed out")
		} else if res.IsError || (c.Exec != nil && !res.Background && res.ExitCode != 0) {
			fail("tool_error", "tool error")
		}
	}
	attrs = append(attrs, telemetry.Outcome.String(outcome), telemetry.Action.String(s.redact.String(c.Action)))
	sp.SetAttributes(attrs...)
	sp.End()
}

// outcomeOf is a call's outcome as the session log's tool.result says.
func outcomeOf(err error) string {
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		return "refused"
	case err != nil:
		return "error"
	}
	return "done"
}

// guardrail records decision d as an apply_guardrail span under ctx's
// span; allowed is what it let happen and answer an ask's answer.
func (s *Session) guardrail(ctx context.Context, d *eval.Decision, parent string, allowed bool, answer string) {
	telemetry.RecordDecision(ctx, d, telemetry.Verdict{Parent: parent, Allowed: allowed, Answer: answer, Redact: s.redact.String})
}

// spanEvent records a log event of a call on the call's span too, with
// those of its fields that name no argument or output.
func (s *Session) spanEvent(c *Call, kind string, fields []sessionlog.Field) {
	if c == nil || c.span == nil || !c.span.IsRecording() {
		return
	}
	c.span.AddEvent(kind, trace.WithAttributes(s.eventAttrs(fields)...))
}

// sessionEvent records an event of the whole session (a policy held,
// the tools offered) on the session's span too.
func (s *Session) sessionEvent(kind string, fields []sessionlog.Field) {
	if s.span == nil || !s.span.IsRecording() {
		return
	}
	s.span.AddEvent(kind, trace.WithAttributes(s.eventAttrs(fields)...))
}

// eventAttrs are the attributes of those of fields eventKeys names.
func (s *Session) eventAttrs(fields []sessionlog.Field) []attribute.KeyValue {
	var attrs []attribute.KeyValue
	for _, f := range fields {
		key, ok := eventKeys[f.Key]
		if !ok {
			continue
		}
		switch v := f.Value.(type) {
		case string:
			attrs = append(attrs, key.String(s.redact.String(v)))
		case int:
			attrs = append(attrs, key.Int(v))
		case int64:
			attrs = append(attrs, key.Int64(v))
		case uint16:
			attrs = append(attrs, key.Int(int(v)))
		case bool:
			attrs = append(attrs, key.Bool(v))
		case []string:
			attrs = append(attrs, key.Int(len(v)))
		}
	}
	return attrs
}

// eventKeys are the session log fields an event on a span carries, and
// their attribute keys: names and decisions, never argv, output or paths
// the agent chose.
var eventKeys = map[string]attribute.Key{
	"parent": telemetry.Parent, "action": telemetry.Action, "decision": telemetry.Decision, "layer": telemetry.Layer,
	"rule": telemetry.Rule, "outcome": telemetry.Outcome, "program": telemetry.Program,
	"policy": telemetry.Revision, "widenings": telemetry.Widenings,
	"path": telemetry.Path, "host": telemetry.Host, "port": telemetry.Port, "via": telemetry.Via, "sent": telemetry.Sent, "received": telemetry.Received,
}
