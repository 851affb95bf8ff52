package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/chockhq/chock/compile/config"
)

// Clients are the clients chock hook answers, in the order its help names
// them.
var Clients = []string{"claude-code", "codex", "gemini"}

// MaxEvent bounds the event a client writes on standard input.
const MaxEvent = 8 << 20

// Event is a client's pre-tool hook event: Claude Code's and Codex's
// PreToolUse, Gemini CLI's BeforeTool.
type Event struct {
	SessionID string         `json:"session_id"`
	EventName string         `json:"hook_event_name"`
	Cwd       string         `json:"cwd"`
	ToolName  string         `json:"tool_name"`
	ToolInput map[string]any `json:"tool_input"`
}

// preTool is each client's name for the event before a tool runs.
var preTool = map[string]string{"claude-code": "PreToolUse", "codex": "PreToolUse", "gemini": "BeforeTool"}

// ReadEvent reads client's event from r: one JSON object of the client's
// pre-tool event, with a tool name.
func ReadEvent(client string, r io.Reader) (*Event, error) {
	want, ok := preTool[client]
	if !ok {
		return nil, fmt.Errorf("unknown client %q (want %s)", client, strings.Join(Clients, ", "))
	}
	raw, err := io.ReadAll(io.LimitReader(r, MaxEvent+1))
	if err != nil {
		return nil, fmt.Errorf("reading the event: %w", err)
	}
	if len(raw) > MaxEvent {
		return nil, fmt.Errorf("the event is larger than %d bytes", MaxEvent)
	}
	var ev Event
	d := json.NewDecoder(bytes.NewReader(raw))
	if err := d.Decode(&ev); err != nil {
		return nil, fmt.Errorf("the event is not JSON chock can read: %w", err)
	}
	if d.More() {
		return nil, errors.New("the event is more than one JSON object")
	}
	switch {
	case ev.EventName != "" && ev.EventName != want:
		return nil, fmt.Errorf("the event is %q; chock hook %s answers %s", ev.EventName, client, want)
	case ev.ToolName == "":
		return nil, errors.New("the event names no tool")
	}
	return &ev, nil
}

// Answer is the client's answer to a verdict: what to write on stdout
// and on stderr, and the exit code. Codex takes no ask and no allow
// without an updated input from a hook, so it is answered deny or nothing;
// Gemini CLI's hook answers allow or deny, so an ask is a deny there
// (nobody can be asked from a hook), naming what asked.
type Answer struct {
	Stdout, Stderr []byte
	Code           int
}

// Respond is client's answer to v; update, when not nil, is the tool
// input an allowed call runs with instead (chock hook --sandbox).
func Respond(client string, v Verdict, update map[string]any) Answer {
	d, why := v.Decision, v.Reason
	switch client {
	case "claude-code":
		out := map[string]any{"hookEventName": "PreToolUse", "permissionDecision": d.String(), "permissionDecisionReason": why}
		if update != nil && d == config.Allow {
			out["updatedInput"] = update
		}
		return jsonAnswer(map[string]any{"hookSpecificOutput": out}, 0)
	case "codex":
		if d == config.Allow {
			return Answer{}
		}
		if d == config.Ask {
			why = "chock would ask, and Codex takes no ask from a hook, so it is refused: " + why
		}
		return jsonAnswer(map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": why,
		}}, 0)
	case "gemini":
		if d == config.Allow {
			out := map[string]any{"decision": "allow", "reason": why}
			if update != nil {
				out["hookSpecificOutput"] = map[string]any{"tool_input": update}
			}
			return jsonAnswer(out, 0)
		}
		if d == config.Ask {
			why = "chock would ask, and nobody can be asked from a hook, so it is refused: " + why
		}
		return jsonAnswer(map[string]any{"decision": "deny", "reason": why}, 0)
	}
	return Fail(client, errors.New("unknown client"))
}

// Fail is the answer to a hook that cannot decide (unreadable input, no
// policy, a panic): a deny in the client's format, with exit 2, which
// every client reads as a block, and the reason on stderr.
func Fail(client string, err error) Answer {
	why := "chock could not decide this call, so it is refused: " + err.Error()
	var out map[string]any
	switch client {
	case "gemini":
		out = map[string]any{"decision": "deny", "reason": why}
	default:
		out = map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": why,
		}}
	}
	a := jsonAnswer(out, 2)
	a.Stderr = []byte(why + "\n")
	return a
}

func jsonAnswer(v any, code int) Answer {
	b, _ := json.Marshal(v)
	return Answer{Stdout: append(b, '\n'), Code: code}
}

// SandboxClients are the clients whose hook can rewrite a tool's input,
// so that chock hook --sandbox can run an allowed shell command under
// chock exec: Claude Code (updatedInput) and Gemini CLI (tool_input, merged
// over the model's). Codex's hook input for its shell tools is an argv the
// hook would have to rebuild, which chock does not do: there --sandbox is
// refused.
var SandboxClients = []string{"claude-code", "gemini"}

// Sandboxed is the input of ev's shell tool with its command run under
// prefix (chock exec … --) by bash -c, or nil when ev is not a shell
// tool chock reads.
func Sandboxed(client string, ev *Event, prefix []string) map[string]any {
	kind, field := toolKind(client, ev.ToolName)
	text, ok := commandText(ev.ToolInput[field])
	if kind != shellTool || !ok {
		return nil
	}
	out := make(map[string]any, len(ev.ToolInput))
	for k, v := range ev.ToolInput {
		out[k] = v
	}
	words := make([]string, 0, len(prefix)+3)
	for _, w := range prefix {
		words = append(words, Quote(w))
	}
	words = append(words, "bash", "-c", Quote(text))
	out[field] = strings.Join(words, " ")
	return out
}

// PutsAsks says whether client's hook can hand an ask to the person (Claude
// Code's permissionDecision ask); for the others Respond refuses an ask.
func PutsAsks(client string) bool { return client == "claude-code" }
