package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/runtime"
	"github.com/chockhq/chock/runtime/mcpconn"
	"github.com/chockhq/chock/runtime/telemetry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
)

// Bounds on what an upstream server declares, as it is offered again.
const (
	maxTitle       = 256
	maxDescription = 4 << 10
	maxSchemaText  = 4 << 10  // one string in an input schema
	maxSchema      = 64 << 10 // an input schema, as JSON
	maxSchemaDepth = 32
)

func ptr[T any](v T) *T { return &v }

// ownTool is one of chock's own tools as a model is offered it: its input
// schema inferred from its argument struct (runtime.Tools).
func ownTool(t *runtime.Tool) *mcp.Tool {
	title := strings.TrimSuffix(t.Title, " (under chock's policy)")
	a := &mcp.ToolAnnotations{Title: title, ReadOnlyHint: t.ReadOnly, OpenWorldHint: ptr(true)}
	if t.Destructive {
		a.DestructiveHint = ptr(true)
	}
	return &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.Schema, Annotations: a}
}

// reserved is a server's tool as it is offered under name: its title,
// description and input schema the server's own, redacted (a server
// given a secret could put it there), stripped of control and invisible
// characters and bounded; its annotations passed on.
func reserved(name string, t mcpconn.Tool, redact func(string) string) *mcp.Tool {
	clean := func(s string, limit int) string { return safetext.Strip(redact(s), limit) }
	out := &mcp.Tool{
		Name:        name,
		Title:       clean(t.Title, maxTitle),
		Description: clean(t.Description, maxDescription),
		InputSchema: schema(t.InputSchema, func(s string) string { return clean(s, maxSchemaText) }),
	}
	if a := t.Annotations; a != nil {
		out.Annotations = &mcp.ToolAnnotations{
			Title:           clean(a.Title, maxTitle),
			ReadOnlyHint:    a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
	}
	return out
}

// schema is an input schema as it is offered again: an object schema,
// every key and string in it cleaned, at most maxSchemaDepth deep and
// maxSchema bytes; anything else is the empty object schema, which takes
// any arguments (the server still checks them).
func schema(raw json.RawMessage, clean func(string) string) any {
	empty := map[string]any{"type": "object"}
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return empty
	}
	m, ok := v.(map[string]any)
	if !ok {
		return empty
	}
	switch m["type"] {
	case "object":
	case nil:
		m["type"] = "object"
	default:
		return empty
	}
	out, ok := cleanJSON(m, clean, 0)
	if !ok {
		return empty
	}
	b, err := json.Marshal(out)
	if err != nil || len(b) > maxSchema {
		return empty
	}
	return json.RawMessage(b)
}

func cleanJSON(v any, clean func(string) string, depth int) (any, bool) {
	if depth > maxSchemaDepth {
		return nil, false
	}
	switch x := v.(type) {
	case string:
		return clean(x), true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, ok := cleanJSON(e, clean, depth+1)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, ok := cleanJSON(e, clean, depth+1)
			if !ok {
				return nil, false
			}
			out[clean(k)] = c
		}
		return out, true
	}
	return v, true
}

// handleOwn is the handler of one of chock's own tools.
func (c *conn) handleOwn(t *runtime.Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		call, err := t.Call(req.Params.Arguments)
		if err != nil {
			return errorResult(t.Name + ": " + err.Error()), nil
		}
		return c.run(ctx, req, call), nil
	}
}

func (c *conn) handleUpstream(ctx context.Context, req *mcp.CallToolRequest, u upstream) (*mcp.CallToolResult, error) {
	args := req.Params.Arguments
	if a := bytes.TrimSpace(args); len(a) > 0 && a[0] != '{' && string(a) != "null" {
		return errorResult("the arguments of " + req.Params.Name + " are one JSON object"), nil
	}
	return c.run(ctx, req, &runtime.Call{Tool: runtime.MCPTool.Name, MCP: &runtime.MCPRequest{Server: u.server, Tool: u.tool, Arguments: args}}), nil
}

// run brokers one call as a script line is brokered, after putting the
// questions it would ask to a client that can answer them.
func (c *conn) run(ctx context.Context, req *mcp.CallToolRequest, call *runtime.Call) *mcp.CallToolResult {
	ans, res := c.answers(ctx, req, call)
	if res != nil {
		return res // the client answers in a round of its own (2026-07-28)
	}
	if req != nil && req.Params != nil {
		// The client's trace, from params._meta (the MCP conventions),
		// continues in the call's spans.
		attrs := []attribute.KeyValue{telemetry.MCPMethod.String("tools/call")}
		if req.Session != nil && req.Session.ID() != "" {
			attrs = append(attrs, telemetry.MCPSession.String(req.Session.ID()))
		}
		ctx = telemetry.Extract(ctx, req.Params.Meta, attrs...)
	}
	out, err := c.sess.Run(withAnswers(ctx, ans), call)
	return c.result(call, out, err)
}

// errorResult is a tool result that reports an error to the model.
func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// result is what a brokered call came to, as a tool result: a refusal or
// an error as text the model reads (never a JSON-RPC error), otherwise
// the call's redacted output.
func (c *conn) result(call *runtime.Call, res *runtime.Result, err error) *mcp.CallToolResult {
	var refused *runtime.RefusedError
	switch {
	case errors.As(err, &refused):
		// The refusal quotes the action, which an agent's URL or argv[0]
		// made: it passes the session's redaction like everything else.
		return errorResult(c.sess.Redactor().String(c.refusal(refused)))
	case err != nil:
		return errorResult(c.sess.Redactor().String("chock: the call failed: " + safetext.Strip(err.Error(), 0)))
	}
	var b strings.Builder
	isError := false
	switch {
	case call.MCP != nil:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError}
	case res.Background:
		fmt.Fprintf(&b, "started in the background, pid %d (given no secrets)", res.PID)
	case call.Fetch != nil:
		fmt.Fprintf(&b, "status %d\n", res.Status)
		b.WriteString(res.Body)
		isError = res.Status >= 400
	default:
		fmt.Fprintf(&b, "exit %d", res.ExitCode)
		if res.TimedOut {
			b.WriteString(" (the time limit was reached)")
		}
		b.WriteString("\n")
		if res.Stdout != "" {
			b.WriteString("stdout:\n" + res.Stdout)
			if !strings.HasSuffix(res.Stdout, "\n") {
				b.WriteString("\n")
			}
		}
		if res.Stderr != "" {
			b.WriteString("stderr:\n" + res.Stderr)
		}
		if len(res.Network) > 0 {
			if res.Stderr != "" && !strings.HasSuffix(res.Stderr, "\n") {
				b.WriteString("\n")
			}
			b.WriteString("network:\n" + strings.Join(res.Network, "\n") + "\n")
		}
		isError = res.ExitCode != 0 || res.TimedOut
	}
	if res.Truncated {
		b.WriteString("\n(output cut at 1 MiB)")
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, IsError: isError}
}

// refusal is a refused call as the model reads it: the action, the
// decision and the rule that decided it with its position, why the rule
// says it is there and the reason the call was refused, worked out
// against the policy as it is now. It has no hint: a model is never told
// how to change the policy it runs under (the session log and chock
// explain tell the person).
func (c *conn) refusal(r *runtime.RefusedError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "refused by chock: %s\n", r.Action)
	x := r.Explanation
	said := ""
	if x != nil && x.Decision != nil {
		x = eval.Explain(x.Decision, c.g.view.Load().cfg)
		d := x.Decision
		said = eval.Describe(d)
		fmt.Fprintf(&b, "decision: %s is %s, by %s\n", d.Action, d.Decision, decider(d))
		if l := d.Decider(); l != nil && l.Rule != nil && l.Rule.Why != "" {
			fmt.Fprintf(&b, "why: %s\n", safetext.Strip(l.Rule.Why, 0))
		}
	}
	if r.Reason != said {
		fmt.Fprintf(&b, "reason: %s\n", safetext.Strip(r.Reason, 0))
	}
	if x != nil && x.StartNote != "" {
		fmt.Fprintf(&b, "note: %s\n", x.StartNote)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// decider names the rule that decided d with its file:line:col, or the
// layer's default (with where it is written, when it is).
func decider(d *eval.Decision) string {
	l := d.Decider()
	if l == nil {
		return "no layer"
	}
	who := l.Spelling()
	switch {
	case l.Rule != nil:
		return fmt.Sprintf("the %s rule %s (%s) at %s", who, eval.QuoteRule(l.Rule), l.Rule.Decision, l.Rule.Span)
	case l.DefaultSpan != nil:
		return fmt.Sprintf("the %s default (%s) at %s", who, l.Decision, l.DefaultSpan)
	}
	return fmt.Sprintf("the %s default (%s, not written)", who, l.Decision)
}

// budget is how long a person has to answer an elicitation.
const budget = 10 * time.Minute
