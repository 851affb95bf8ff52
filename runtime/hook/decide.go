package hook

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
)

// Verdict is what a tool call comes to under the policy: the strictest
// decision over everything it would do, and why, naming the deciding
// rule with its file:line:col (never the edit that would permit it).
type Verdict struct {
	Decision config.Decision
	// Actions are the actions decided, in order.
	Actions []string
	// Reason is the deciding action and rule, or what chock could not
	// read, in one line.
	Reason string
}

// Decider decides one action at loop phase; args, for a program's
// call, are its arguments (nil for every other action).
type Decider func(ctx context.Context, action string, args []string) (*eval.Decision, error)

// Call is one tool call of a client, as the hook event gives it.
type Call struct {
	Client string // claude-code, codex or gemini
	Tool   string
	// Input is the tool's arguments.
	Input map[string]any
	// Cwd is the folder a relative path of the call is in (the event's
	// cwd); Project is the policy's project folder, and Home the person's
	// home: a path is decided under every name it has in fs actions
	// (absolute, ~/…, relative to the project).
	Cwd, Project, Home string
}

// strictness orders decisions, most permissive first.
func stricter(a, b config.Decision) bool {
	rank := map[config.Decision]int{config.Allow: 0, config.Ask: 1, config.Deny: 2}
	return rank[a] > rank[b]
}

// verdictOf folds one decided action into v.
func (v *Verdict) add(d *eval.Decision) {
	v.Actions = append(v.Actions, d.Action)
	if len(v.Actions) == 1 || stricter(d.Decision, v.Decision) {
		v.Decision = d.Decision
		v.Reason = reason(d)
	}
}

// ask folds something chock cannot decide into v: it is asked.
func (v *Verdict) ask(why string) {
	if len(v.Actions) == 0 && v.Reason == "" || stricter(config.Ask, v.Decision) {
		v.Decision = config.Ask
		v.Reason = "chock cannot decide it from the text: " + why
	}
}

// reason words a decision for the client and the model: the action, the
// decision, the deciding rule with its position and its why.
func reason(d *eval.Decision) string {
	s := fmt.Sprintf("chock: %s is %s", d.Action, eval.Describe(d))
	if l := d.Decider(); l != nil && l.Rule != nil && l.Rule.Why != "" {
		s += " (why: " + l.Rule.Why + ")"
	}
	return s
}

// Decide decides call under the policy decide asks.
func Decide(ctx context.Context, decide Decider, c Call) (Verdict, error) {
	var v Verdict
	one := func(act string, args []string) error {
		d, err := decide(ctx, act, args)
		if err != nil {
			return err
		}
		v.add(d)
		return nil
	}
	switch kind, field := toolKind(c.Client, c.Tool); kind {
	case shellTool:
		text, ok := commandText(c.Input[field])
		if !ok {
			v.ask(fmt.Sprintf("%s without a command text chock can read", c.Tool))
			return v, nil
		}
		sh := ParseShell(text)
		for _, p := range sh.Programs {
			act, err := action.Exec(p.Name)
			if err != nil {
				v.ask(err.Error())
				continue
			}
			if err := one(act, p.Args); err != nil {
				return v, err
			}
		}
		for _, w := range sh.Writes {
			// A redirection writes its file: fs.write of it, under each name.
			if err := c.files(ctx, decide, &v, "write", w); err != nil {
				return v, err
			}
		}
		for _, u := range sh.Unknown {
			v.ask(u)
		}
		if len(sh.Programs) == 0 && len(sh.Unknown) == 0 && len(sh.Writes) == 0 {
			v.Decision, v.Reason = config.Allow, "chock: the command runs no program"
		}
	case fetchTool:
		raw, _ := c.Input[field].(string)
		if _, err := url.Parse(raw); err != nil || raw == "" {
			v.ask("a fetch without a URL chock can read")
			return v, nil
		}
		act, err := action.Fetch(raw)
		if err != nil {
			v.ask(err.Error())
			return v, nil
		}
		if err := one(act, nil); err != nil {
			return v, err
		}
	case readTool, writeTool:
		op := "read"
		if kind == writeTool {
			op = "write"
		}
		paths := toolPaths(c.Tool, field, c.Input)
		if len(paths) == 0 {
			v.ask(fmt.Sprintf("%s without a path chock can read", c.Tool))
			return v, nil
		}
		for _, p := range paths {
			if err := c.files(ctx, decide, &v, op, p); err != nil {
				return v, err
			}
		}
	case mcpTool:
		server, tool := splitMCP(c.Tool)
		act, err := action.MCPTool(server, tool)
		if err != nil {
			v.ask(err.Error())
			return v, nil
		}
		if err := one(act, nil); err != nil {
			return v, err
		}
	default:
		// A tool chock has no meaning for (the client's file tools among
		// them, until files are actions): a rule naming it decides, and
		// otherwise it is asked.
		act, err := action.ClientTool.Build(c.Client, c.Tool)
		if err != nil {
			v.ask(err.Error())
			return v, nil
		}
		d, err := decide(ctx, act, nil)
		if err != nil {
			return v, err
		}
		if l := d.Decider(); l != nil && l.Rule != nil {
			v.add(d)
			return v, nil
		}
		v.Actions = append(v.Actions, act)
		v.Decision = config.Ask
		v.Reason = fmt.Sprintf("chock: no rule decides %s (a tool of the client's own that chock does not read), so it is asked", act)
	}
	return v, nil
}

type kind int

const (
	otherTool kind = iota
	shellTool
	fetchTool
	mcpTool
	// readTool and writeTool read or write the files their field names
	// (a path, a list of paths, or a patch naming them).
	readTool
	writeTool
)

// tools are the clients' own tools chock reads, and the input field that
// holds what it reads.
var tools = map[string]map[string]struct {
	kind  kind
	field string
}{
	"claude-code": {"Bash": {shellTool, "command"}, "WebFetch": {fetchTool, "url"},
		"Read": {readTool, "file_path"}, "Write": {writeTool, "file_path"}, "Edit": {writeTool, "file_path"},
		"MultiEdit": {writeTool, "file_path"}, "NotebookEdit": {writeTool, "notebook_path"}},
	"codex": {"shell": {shellTool, "command"}, "exec_command": {shellTool, "cmd"}, "local_shell": {shellTool, "command"}, "Bash": {shellTool, "command"},
		"apply_patch": {writeTool, "input"}},
	"gemini": {"run_shell_command": {shellTool, "command"}, "web_fetch": {fetchTool, "url"},
		"read_file": {readTool, "absolute_path"}, "read_many_files": {readTool, "paths"}, "write_file": {writeTool, "file_path"}, "replace": {writeTool, "file_path"}},
}

func toolKind(client, tool string) (kind, string) {
	if t, ok := tools[client][tool]; ok {
		return t.kind, t.field
	}
	if strings.HasPrefix(tool, "mcp__") && strings.Count(tool, "__") >= 2 {
		return mcpTool, ""
	}
	return otherTool, ""
}

// splitMCP reads mcp__SERVER__TOOL.
func splitMCP(name string) (server, tool string) {
	rest := strings.TrimPrefix(name, "mcp__")
	i := strings.Index(rest, "__")
	return rest[:i], rest[i+2:]
}

// commandText is a shell tool's command: a string, or an argv list (Codex)
// written as a shell line.
func commandText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, x != ""
	case []any:
		var words []string
		for _, w := range x {
			s, ok := w.(string)
			if !ok {
				return "", false
			}
			words = append(words, Quote(s))
		}
		return strings.Join(words, " "), len(words) > 0
	}
	return "", false
}

// Quote quotes one argv word for a shell line.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
