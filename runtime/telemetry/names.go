package telemetry

import "go.opentelemetry.io/otel/attribute"

// The attribute keys chock sets. The OpenTelemetry GenAI conventions'
// (status Development: gen-ai-spans.md, gen-ai-security.md, mcp.md) and
// chock's own, each written once here; Attributes, below, is the table the
// README's attribute table and the Jaeger test's golden file are checked
// against.
const (
	OperationName  = attribute.Key("gen_ai.operation.name")
	AgentName      = attribute.Key("gen_ai.agent.name")
	ConversationID = attribute.Key("gen_ai.conversation.id")
	ToolName       = attribute.Key("gen_ai.tool.name")
	ToolCallID     = attribute.Key("gen_ai.tool.call.id")
	ToolType       = attribute.Key("gen_ai.tool.type")
	ToolArguments  = attribute.Key("gen_ai.tool.call.arguments")
	ErrorType      = attribute.Key("error.type")

	GuardianName   = attribute.Key("gen_ai.guardian.name")
	DecisionType   = attribute.Key("gen_ai.security.decision.type")
	DecisionReason = attribute.Key("gen_ai.security.decision.reason")
	TargetType     = attribute.Key("gen_ai.security.target.type")
	TargetID       = attribute.Key("gen_ai.security.target.id")
	PolicyID       = attribute.Key("gen_ai.security.policy.id")

	MCPMethod    = attribute.Key("mcp.method.name")
	MCPSession   = attribute.Key("mcp.session.id")
	MCPServer    = attribute.Key("chock.mcp.server")
	NetTransport = attribute.Key("network.transport")

	Action      = attribute.Key("chock.action")
	Phase       = attribute.Key("chock.phase")
	Decision    = attribute.Key("chock.decision")
	Layer       = attribute.Key("chock.layer")
	Rule        = attribute.Key("chock.rule")
	RuleSpan    = attribute.Key("chock.rule.span")
	AskAnswer   = attribute.Key("chock.ask.answer")
	Parent      = attribute.Key("chock.parent")
	Outcome     = attribute.Key("chock.outcome")
	ExitCode    = attribute.Key("chock.exit_code")
	Program     = attribute.Key("chock.program")
	Namespace   = attribute.Key("chock.namespace")
	Client      = attribute.Key("chock.client")
	Sandboxed   = attribute.Key("chock.sandboxed")
	SessionID   = attribute.Key("chock.session.id")
	Revision    = attribute.Key("chock.policy.revision")
	Widenings   = attribute.Key("chock.policy.widenings")
	CallTool    = attribute.Key("chock.tool")
	CallTimeout = attribute.Key("chock.timed_out")
	Path        = attribute.Key("chock.path")
	Host        = attribute.Key("chock.host")
	Port        = attribute.Key("chock.port")
	Via         = attribute.Key("chock.via")
	Sent        = attribute.Key("chock.bytes.sent")
	Received    = attribute.Key("chock.bytes.received")
)

// Attr is one row of the attribute table: a key, the spans and events
// that carry it, and what it says.
type Attr struct {
	Key attribute.Key
	On  string
	Doc string
}

// Attributes is every attribute chock exports, in the order the README
// lists them.
var Attributes = []Attr{
	{OperationName, "invoke_agent, execute_tool, apply_guardrail", "the GenAI operation: invoke_agent (a session), execute_tool (a call), apply_guardrail (a decision)"},
	{AgentName, "invoke_agent", "chock"},
	{ConversationID, "invoke_agent, execute_tool", "the session's id (the session log's name)"},
	{SessionID, "invoke_agent, hook", "the session's id, or the client's session id for chock hook"},
	{Client, "invoke_agent, hook", "the agent client a session serves or a hook decides for (claude-code, codex, gemini), when known"},
	{ToolName, "execute_tool, tools/call", "the tool called: exec, fetch_url, or the MCP tool's name"},
	{ToolCallID, "execute_tool", "the call's id in its session (c1, c2, …), as the session log names it"},
	{ToolType, "execute_tool", "function for chock's own tools, extension for a tool of an MCP server"},
	{CallTool, "execute_tool", "chock's tool: exec, fetch_url or mcp"},
	{ToolArguments, "execute_tool", "the call's arguments, redacted, only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"},
	{ErrorType, "execute_tool, tools/call", "why a call failed: chock.refused, chock.timeout, tool_error (an MCP tool's isError or a program's non-zero exit), or chock.error"},
	{Outcome, "execute_tool", "done, refused or error, as the session log's tool.result says"},
	{ExitCode, "execute_tool", "a program's exit code"},
	{CallTimeout, "execute_tool", "true when the call reached its time limit"},
	{Sandboxed, "execute_tool", "false when the call ran without a sandbox (--no-sandbox)"},
	{GuardianName, "apply_guardrail", "chock"},
	{DecisionType, "apply_guardrail", "allow or deny: what the decision let happen (an ask is the answer's, with chock.decision = ask)"},
	{TargetType, "apply_guardrail", "tool_call for a call's decisions, tool_definition for those made when a session starts"},
	{TargetID, "apply_guardrail", "the call the decision belongs to (chock.parent), when there is one"},
	{PolicyID, "apply_guardrail", "the policy revision the decision was made under"},
	{DecisionReason, "apply_guardrail", "a refusal's reason class: rule, default, ceiling, unavailable, ask-no, ask-unasked"},
	{Action, "apply_guardrail, exec.nested", "the action decided (exec.path.git, secret.use.GITHUB_TOKEN, …), redacted"},
	{Phase, "apply_guardrail", "start or loop"},
	{Decision, "apply_guardrail, hook", "the policy's own answer: allow, ask or deny"},
	{AskAnswer, "apply_guardrail", "yes or no, for an ask that was put"},
	{Layer, "apply_guardrail", "the layer whose rule decided: project, an org's name, or none"},
	{Rule, "apply_guardrail", "the deciding rule as chock.zon writes it (.deny = .{ \"exec.path.curl\" }), or default"},
	{RuleSpan, "apply_guardrail", "the rule's file:line:col"},
	{Namespace, "apply_guardrail, chock.decisions", "the action's namespace as the docs write it (exec.path.<program>)"},
	{Parent, "exec.nested", "the call a nested exec belongs to"},
	{Program, "exec.nested", "the file a nested exec ran or was refused"},
	{Path, "exec.nested, fs.refused", "the path a nested exec named, or a protected path the call was refused; redacted"},
	{Host, "net.connect", "the host a connection of the call asked for, redacted"},
	{Port, "net.connect", "its port"},
	{Via, "net.connect", "how it came: http, connect or socks5"},
	{Sent, "net.connect", "bytes the call sent on it"},
	{Received, "net.connect", "bytes it received"},
	{MCPMethod, "tools/call", "the MCP method sent upstream"},
	{MCPSession, "tools/call", "the upstream server's MCP session id, when it gave one"},
	{MCPServer, "tools/call", "the upstream server's name in chock.zon"},
	{NetTransport, "tools/call", "pipe for a local server, tcp for a remote one"},
	{Revision, "policy.held", "the revision of the edit that was held"},
	{Widenings, "policy.held", "how many widenings the held edit had"},
}
