package telemetry

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The span names, by the conventions: the operation, then what it is on.
const (
	SessionSpan   = "invoke_agent chock"
	ToolSpan      = "execute_tool " // + the tool's name
	GuardrailSpan = "apply_guardrail chock"
	MCPCallSpan   = "tools/call " // + the tool's name
	NestedEvent   = "exec.nested"
	HeldEvent     = "policy.held"
)

// tracer is chock's tracer of the provider installed now.
func tracer() trace.Tracer { return inst().tracer }

// CaptureArguments says whether the GenAI conventions' opt-in variable
// asks for content (a call's arguments) to be recorded.
func CaptureArguments() bool {
	return strings.EqualFold(os.Getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), "true")
}

// StartSession opens a session's span: invoke_agent chock.
func StartSession(ctx context.Context, id string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs = append([]attribute.KeyValue{OperationName.String("invoke_agent"), AgentName.String("chock"), ConversationID.String(id), SessionID.String(id)}, attrs...)
	return tracer().Start(ctx, SessionSpan, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// StartTool opens a call's span, execute_tool {tool}: a child of the
// trace an MCP request carried (Extract), linked to the session's span,
// or else a child of the session's span.
func StartTool(ctx context.Context, session trace.Span, tool string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(append([]attribute.KeyValue{OperationName.String("execute_tool"), ToolName.String(tool)}, attrs...)...)}
	if r, ok := ctx.Value(requestKey{}).(request); ok {
		opts = append(opts, trace.WithAttributes(r.attrs...))
	}
	if r, ok := ctx.Value(requestKey{}).(request); ok && r.sc.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, r.sc)
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: session.SpanContext()}))
	} else {
		ctx = trace.ContextWithSpan(ctx, session)
	}
	return tracer().Start(ctx, ToolSpan+tool, opts...)
}

// requestKey is the context key of the MCP request a call came in: the
// trace context it carried and the MCP attributes of the call's span.
type requestKey struct{}

type request struct {
	sc    trace.SpanContext
	attrs []attribute.KeyValue
}

// Verdict is what became of a decision: the call it belongs to ("" at
// start), what it let happen (an ask: the answer), the ask's answer, and
// the redaction every string passes.
type Verdict struct {
	Parent  string
	Allowed bool
	Answer  string
	Redact  func(string) string
	// Hook says chock hook made it: an ask there is the client's to put,
	// so its decision type is warn (the client asks the person), not a
	// refusal chock made.
	Hook bool
}

// RecordDecision records d as a finished apply_guardrail span under ctx's
// span, and counts it in chock.decisions.
func RecordDecision(ctx context.Context, d *eval.Decision, o Verdict) {
	if !tracing.Load() && !metering.Load() {
		return
	}
	redact := o.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	typ, target := "deny", "tool_call"
	switch {
	case o.Allowed:
		typ = "allow"
	case o.Hook && d.Decision == config.Ask && !d.Unavailable:
		typ = "warn"
	}
	if d.Phase == config.Start {
		target = "tool_definition"
	}
	layer, rule, where := "project", "default", ""
	switch l := d.Decider(); {
	case l != nil:
		layer = l.Spelling()
		if l.Rule != nil {
			rule = redact(l.Rule.Pattern)
		}
		if w := l.Where(); w != nil {
			where = spanText(w)
		}
	case d.Unavailable:
		layer, rule = "none", "none"
	}
	ns := namespaceOf(d.Action)
	attrs := []attribute.KeyValue{OperationName.String("apply_guardrail"), GuardianName.String("chock"),
		DecisionType.String(typ), TargetType.String(target), Action.String(redact(d.Action)), Phase.String(d.Phase.String()),
		Decision.String(d.Decision.String()), Layer.String(layer), Rule.String(rule), Namespace.String(ns)}
	if where != "" {
		attrs = append(attrs, RuleSpan.String(where))
	}
	if d.Revision != "" {
		attrs = append(attrs, PolicyID.String(d.Revision))
	}
	if o.Parent != "" {
		attrs = append(attrs, TargetID.String(o.Parent))
	}
	if o.Answer != "" {
		attrs = append(attrs, AskAnswer.String(o.Answer))
	}
	if !o.Allowed {
		attrs = append(attrs, DecisionReason.String(reason(d, o.Answer)))
	}
	if tracing.Load() {
		_, sp := tracer().Start(ctx, GuardrailSpan, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
		sp.End()
	}
	if metering.Load() {
		inst().decisions.Add(ctx, 1, metric.WithAttributes(DecisionType.String(typ), Decision.String(d.Decision.String()), Layer.String(layer), Namespace.String(ns)))
	}
}

// reason is a refusal's low-cardinality class.
func reason(d *eval.Decision, answer string) string {
	switch {
	case d.Unavailable:
		return "unavailable"
	case answer == "no":
		return "ask-no"
	case d.Decision == config.Ask:
		return "ask-unasked"
	case d.CappedBy != nil:
		return "ceiling"
	case d.Decider() != nil && d.Decider().Rule != nil:
		return "rule"
	}
	return "default"
}

// NamespaceOf is the form of the namespace act is in, or "" (kept as
// namespaceOf keeps it).
func NamespaceOf(act string) string { return namespaceOf(act) }

// namespaceOf is the form of the namespace act is in, or "". The answers
// are kept (up to maxKept actions: an agent names as many as it likes).
func namespaceOf(act string) string {
	if v, ok := nsKept.Load(act); ok {
		return v.(string)
	}
	form := ""
	if a, err := action.ParseAction(act); err == nil {
		if ns := action.NamespaceOf(a); ns != nil {
			form = ns.Form
		}
	}
	keep(&nsKept, &nsCount, act, form)
	return form
}

// spanText is a rule's file:line:col, kept per span.
func spanText(sp *diag.Span) string {
	if v, ok := spanKept.Load(*sp); ok {
		return v.(string)
	}
	text := sp.String()
	keep(&spanKept, &spanCount, *sp, text)
	return text
}

// maxKept bounds each of the kept answers.
const maxKept = 4096

var (
	nsKept, spanKept   sync.Map
	nsCount, spanCount atomic.Int64
)

func keep(m *sync.Map, n *atomic.Int64, k, v any) {
	if n.Add(1) <= maxKept {
		m.Store(k, v)
	}
}

// StartHook opens the span of a client's tool call chock hook decides:
// execute_tool {tool}, the client's tool, with the client and its session.
func StartHook(ctx context.Context, client, session, tool string) (context.Context, trace.Span) {
	return tracer().Start(ctx, ToolSpan+tool, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(OperationName.String("execute_tool"), ToolName.String(tool), ToolType.String("function"),
			Client.String(client), SessionID.String(session)))
}

// StartMCPCall opens the CLIENT span of a tools/call sent upstream.
func StartMCPCall(ctx context.Context, server, tool, transport string) (context.Context, trace.Span) {
	return tracer().Start(ctx, MCPCallSpan+tool, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(MCPMethod.String("tools/call"), ToolName.String(tool), MCPServer.String(server), NetTransport.String(transport)))
}

// Extract is ctx carrying the MCP request a call came in: the trace its
// params._meta names (traceparent, tracestate), by the MCP conventions,
// which the call's span StartTool opens continues, and the request's MCP
// attributes (mcp.method.name, mcp.session.id), which that span carries
// rather than a second one.
func Extract(ctx context.Context, meta map[string]any, attrs ...attribute.KeyValue) context.Context {
	c := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate", "baggage"} {
		if v, ok := meta[k].(string); ok {
			c[k] = v
		}
	}
	sc := trace.SpanContextFromContext(otel.GetTextMapPropagator().Extract(context.Background(), c))
	return context.WithValue(ctx, requestKey{}, request{sc: sc, attrs: attrs})
}

// Inject is the _meta an upstream request carries to continue ctx's
// trace: nil when ctx has none.
func Inject(ctx context.Context) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, c)
	if len(c) == 0 {
		return nil
	}
	m := make(map[string]any, len(c))
	for k, v := range c {
		m[k] = v
	}
	return m
}

// TraceParent is the TRACEPARENT a program started under ctx's span is
// given, or "".
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// instruments are chock's tracer and metrics of the providers installed
// now, made again when another is installed.
type instruments struct {
	tp        trace.TracerProvider
	mp        metric.MeterProvider
	tracer    trace.Tracer
	decisions metric.Int64Counter
	duration  metric.Float64Histogram
	refused   metric.Int64Counter
	held      metric.Int64Counter
}

var current atomic.Pointer[instruments]

// inst is the instruments of the providers installed now.
func inst() *instruments {
	tp, mp := otel.GetTracerProvider(), otel.GetMeterProvider()
	if i := current.Load(); i != nil && i.tp == tp && i.mp == mp {
		return i
	}
	m := mp.Meter(ScopeName)
	i := &instruments{tp: tp, mp: mp, tracer: tp.Tracer(ScopeName)}
	i.decisions, _ = m.Int64Counter("chock.decisions", metric.WithDescription("Decisions made, by decision type, the policy's answer, layer and namespace."), metric.WithUnit("{decision}"))
	i.duration, _ = m.Float64Histogram("chock.call.duration", metric.WithDescription("How long a call took, refusals included."), metric.WithUnit("s"))
	i.refused, _ = m.Int64Counter("chock.connections.refused", metric.WithDescription("Network connections of calls refused by the policy."), metric.WithUnit("{connection}"))
	i.held, _ = m.Int64Counter("chock.policy.held", metric.WithDescription("Policy edits held because they widen."), metric.WithUnit("{edit}"))
	current.Store(i)
	return i
}

// RecordCall counts a call's duration in chock.call.duration.
func RecordCall(ctx context.Context, tool, outcome string, seconds float64) {
	if !metering.Load() {
		return
	}
	inst().duration.Record(ctx, seconds, metric.WithAttributes(CallTool.String(tool), Outcome.String(outcome)))
}

// RecordRefusedConnection counts a connection the policy refused.
func RecordRefusedConnection(ctx context.Context, namespace string) {
	if !metering.Load() {
		return
	}
	inst().refused.Add(ctx, 1, metric.WithAttributes(Namespace.String(namespace)))
}

// RecordHeld counts a policy edit held because it widens in
// chock.policy.held (each session's span gets a policy.held event of its
// own).
func RecordHeld(ctx context.Context) {
	if !metering.Load() {
		return
	}
	inst().held.Add(ctx, 1)
}

// FromEnvironment is ctx continuing the trace TRACEPARENT (and
// TRACESTATE) name, as a program started under a traced one is told.
func FromEnvironment(ctx context.Context, getenv func(string) string) context.Context {
	tp := getenv("TRACEPARENT")
	if tp == "" {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": tp, "tracestate": getenv("TRACESTATE")})
}
