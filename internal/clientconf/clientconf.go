// Package clientconf works out the change to an agent client's own
// configuration that makes it start chock mcp serve (chock connect): the
// server entry, merged with what the file holds (every other server and
// setting kept as it is), and, where the client's configuration can say
// it, the client's own shell and web-fetch tools turned off, so the
// agent's reach goes through chock's exec and fetch_url. It reads and
// writes nothing itself: the caller hands it the files' bytes and writes
// what it returns.
package clientconf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Clients are the clients chock connect knows, in the order its help
// names them.
var Clients = []string{"claude-code", "codex", "cursor", "gemini"}

// Entry is the server a client is to start.
type Entry struct {
	Name    string // the server's name in the client ("chock")
	Command string
	// Args are the arguments as a file the project commits spells them:
	// the policy's files relative to the project's folder, where the
	// client starts the server.
	Args []string
	// UserArgs are the arguments as a user-wide file spells them (Codex's):
	// the policy's files by absolute path. Empty means Args.
	UserArgs []string
	// PolicyFiles are the policy's files (chock.zon, the org files) relative
	// to the project's folder: where the client's file can say so, its own
	// edit tools are kept off them.
	PolicyFiles []string
	// Env are the variables chock mcp serve needs from the client's
	// environment (the state and config folders, an env store's secrets),
	// by name: a value is never written. A client that passes its whole
	// environment to a server needs none of them.
	Env []string
}

// Places are where a client's files are: the project folder (Claude
// Code's, Cursor's and Gemini CLI's files are the project's) and Codex's
// home (~/.codex, or $CODEX_HOME).
type Places struct {
	Project   string
	CodexHome string
}

// Edit is the change to one file.
type Edit struct {
	Path string // the file
	Old  []byte // what it holds; nil when it is not there
	New  []byte // what it is to hold
	// Changes say what changed, a line each; none when nothing did.
	Changes []string
	// Notes say what the change could not do in this file.
	Notes []string
}

// Changed says whether the file is to change.
func (e Edit) Changed() bool { return e.Old == nil || !bytes.Equal(e.Old, e.New) }

// Plan works out the edits that connect client to e. read gives a file's
// bytes, nil when it is not there.
func Plan(client string, e Entry, at Places, read func(string) ([]byte, error)) ([]Edit, error) {
	var specs []spec
	switch client {
	case "claude-code":
		specs = []spec{
			{path: filepath.Join(at.Project, ".mcp.json"), edit: func(b []byte) ([]byte, []string, []string, error) {
				return jsonServer(b, "mcpServers", e, stdioEntry(e))
			}},
			{path: filepath.Join(at.Project, ".claude", "settings.json"), edit: claudeSettings(e)},
		}
	case "codex":
		specs = []spec{{path: filepath.Join(at.CodexHome, "config.toml"), edit: codexConfig(e)}}
	case "cursor":
		specs = []spec{{path: filepath.Join(at.Project, ".cursor", "mcp.json"), edit: func(b []byte) ([]byte, []string, []string, error) {
			out, changes, _, err := jsonServer(b, "mcpServers", e, stdioEntry(e))
			notes := []string{"Cursor's own terminal and web tools are not set in this file; turn them off in Cursor's settings (or deny them in its permissions.json) for the agent's reach to go through chock"}
			return out, changes, notes, err
		}}}
	case "gemini":
		specs = []spec{{path: filepath.Join(at.Project, ".gemini", "settings.json"), edit: geminiSettings(e)}}
	default:
		return nil, fmt.Errorf("unknown client %q (want %s)", client, strings.Join(Clients, ", "))
	}
	return apply(specs, read)
}

// apply works out each spec's edit of the file as read gives it.
func apply(specs []spec, read func(string) ([]byte, error)) ([]Edit, error) {
	var out []Edit
	for _, s := range specs {
		old, err := read(s.path)
		if err != nil {
			return nil, err
		}
		nb, changes, notes, err := s.edit(old)
		if err != nil {
			return nil, fmt.Errorf("%s: %v; nothing written", s.path, err)
		}
		ed := Edit{Path: s.path, Old: old, New: nb, Notes: notes}
		if ed.Changed() {
			ed.Changes = changes
		}
		out = append(out, ed)
	}
	return out, nil
}

type spec struct {
	path string
	edit func(old []byte) (out []byte, changes, notes []string, err error)
}

// stdioEntry is the entry as Claude Code's and Cursor's files spell a
// stdio server.
func stdioEntry(e Entry) *object {
	o := &object{vals: map[string]json.RawMessage{}}
	o.set("type", "stdio")
	o.set("command", e.Command)
	o.set("args", e.Args)
	return o
}

// commandLine is the entry's command as a person would type it.
func (e Entry) commandLine() string {
	return strings.Join(append([]string{e.Command}, e.Args...), " ")
}

// jsonServer sets the entry under key (mcpServers) of a JSON file.
func jsonServer(old []byte, key string, e Entry, entry any) ([]byte, []string, []string, error) {
	o, err := parseObject(old)
	if err != nil {
		return nil, nil, nil, err
	}
	changes, err := setServer(o, key, e, entry)
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := o.render()
	return out, changes, nil, err
}

func setServer(o *object, key string, e Entry, entry any) ([]string, error) {
	servers, err := o.child(key)
	if err != nil {
		return nil, err
	}
	_, had := servers.vals[e.Name]
	others := len(servers.keys)
	if had {
		others--
	}
	b, err := json.Marshal(entry)
	if err != nil {
		return nil, err
	}
	if had && jsonEqual(servers.vals[e.Name], b) {
		return nil, nil
	}
	if err := servers.set(e.Name, json.RawMessage(b)); err != nil {
		return nil, err
	}
	if err := o.set(key, servers); err != nil {
		return nil, err
	}
	verb := "added"
	if had {
		verb = "replaced"
	}
	return []string{fmt.Sprintf("server %s %s: %s%s", e.Name, verb, e.commandLine(), kept(others))}, nil
}

func kept(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; the 1 other server kept"
	}
	return fmt.Sprintf("; the %d other servers kept", n)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

// addStrings adds items to the list of strings under key of o.
func addStrings(o *object, key string, items []string) ([]string, error) {
	list, err := o.strings(key)
	if err != nil {
		return nil, err
	}
	merged, added := union(list, items)
	if len(added) == 0 {
		return nil, nil
	}
	return added, o.set(key, merged)
}

// claudeSettings denies Claude Code's own Bash and WebFetch in the
// project's .claude/settings.json and approves the project's chock
// server (Claude Code starts a .mcp.json server only once approved).
func claudeSettings(e Entry) func([]byte) ([]byte, []string, []string, error) {
	return func(old []byte) ([]byte, []string, []string, error) {
		o, err := parseObject(old)
		if err != nil {
			return nil, nil, nil, err
		}
		var changes []string
		files := editRules(append(append([]string(nil), e.PolicyFiles...), ".mcp.json", ".claude/**"))
		for _, g := range []struct {
			key   string
			names []string
			why   string
		}{
			{"deny", []string{"Bash", "WebFetch", "WebSearch"}, "the agent's shell, web fetch and web search go through chock's exec and fetch_url"},
			{"deny", files, "the client's own edit tools cannot change the policy, the server entry or the client's settings (chock mcp serve also holds any edit of the policy that widens it)"},
			{"allow", []string{"mcp__" + e.Name}, "chock decides every call of its tools, so Claude Code does not ask again"},
		} {
			change, err := gains(o, "permissions", g.key, g.names, g.why)
			if err != nil {
				return nil, nil, nil, err
			}
			if change != "" {
				changes = append(changes, change)
			}
		}
		added, err := addStrings(o, "enabledMcpjsonServers", []string{e.Name})
		if err != nil {
			return nil, nil, nil, err
		}
		if len(added) > 0 {
			changes = append(changes, fmt.Sprintf("enabledMcpjsonServers gains %s: the project's server starts without a prompt", e.Name))
		}
		out, err := o.render()
		return out, changes, nil, err
	}
}

// gains adds names to the list key of o's child object parent, writing the
// child back when it gains any, and says what it gained ("" for nothing).
func gains(o *object, parent, key string, names []string, why string) (string, error) {
	child, err := o.child(parent)
	if err != nil {
		return "", err
	}
	added, err := addStrings(child, key, names)
	if err != nil {
		return "", fmt.Errorf("%s: %w", parent, err)
	}
	if len(added) == 0 {
		return "", nil
	}
	if err := o.set(parent, child); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s.%s gains %s: %s", parent, key, strings.Join(added, ", "), why), nil
}

// geminiSettings sets the server in .gemini/settings.json, passing it the
// variables it needs ("$NAME": Gemini CLI keeps secret-looking variables
// from a server unless its entry names them), and excludes Gemini's own
// run_shell_command and web_fetch.
func geminiSettings(e Entry) func([]byte) ([]byte, []string, []string, error) {
	return func(old []byte) ([]byte, []string, []string, error) {
		o, err := parseObject(old)
		if err != nil {
			return nil, nil, nil, err
		}
		entry := &object{vals: map[string]json.RawMessage{}}
		entry.set("command", e.Command)
		entry.set("args", e.Args)
		// chock decides every call of its tools: Gemini CLI need not
		// confirm them again.
		entry.set("trust", true)
		if len(e.Env) > 0 {
			env := &object{vals: map[string]json.RawMessage{}}
			for _, n := range e.Env {
				env.set(n, "$"+n)
			}
			entry.set("env", env)
		}
		changes, err := setServer(o, "mcpServers", e, entry)
		if err != nil {
			return nil, nil, nil, err
		}
		change, err := gains(o, "tools", "exclude", []string{"run_shell_command", "web_fetch", "google_web_search"}, "the agent's shell, web fetch and web search go through chock's exec and fetch_url")
		if err != nil {
			return nil, nil, nil, err
		}
		if change != "" {
			changes = append(changes, change)
		}
		notes := []string{"Gemini CLI's settings have no rule that keeps its own write_file and replace off named files: chock mcp serve holding any edit of the policy that widens it (policy.held) is what still holds"}
		out, err := o.render()
		return out, changes, notes, err
	}
}

// codexConfig sets [mcp_servers.NAME] in Codex's config.toml (env_vars
// names what Codex is to pass on: it passes a server only HOME, LANG,
// PATH and TERM otherwise), and turns off Codex's own shell tool
// ([features] shell_tool) and web search (web_search).
func codexConfig(e Entry) func([]byte) ([]byte, []string, []string, error) {
	return func(old []byte) ([]byte, []string, []string, error) {
		d, err := parseTOML(string(old))
		if err != nil {
			return nil, nil, nil, err
		}
		path := []string{"mcp_servers", e.Name}
		had := false
		others := map[string]bool{}
		for _, t := range d.tables {
			if hasPrefix(t.path, path) {
				had = true
			} else if len(t.path) >= 2 && t.path[0] == "mcp_servers" {
				others[t.path[1]] = true
			}
		}
		args := e.UserArgs
		if len(args) == 0 {
			args = e.Args
		}
		body := []string{
			"command = " + tomlString(e.Command),
			"args = " + tomlList(args),
			// chock decides every call of its tools: Codex asks before
			// every MCP call otherwise.
			`default_tools_approval_mode = "approve"`,
		}
		if len(e.Env) > 0 {
			body = append(body, "env_vars = "+tomlList(e.Env))
		}
		before := d.String()
		if err := d.replaceTable(path, body); err != nil {
			return nil, nil, nil, err
		}
		var changes []string
		if d.String() != before {
			verb := "added"
			if had {
				verb = "replaced"
			}
			user := e
			user.Args = args
			changes = append(changes, fmt.Sprintf("server %s %s: %s%s", e.Name, verb, user.commandLine(), kept(len(others))))
		}
		before = d.String()
		if err := d.setKey([]string{"features", "shell_tool"}, "false"); err != nil {
			return nil, nil, nil, err
		}
		if err := d.setKey([]string{"web_search"}, tomlString("disabled")); err != nil {
			return nil, nil, nil, err
		}
		if d.String() != before {
			changes = append(changes, `Codex's own shell tool and web search turned off (features.shell_tool = false, web_search = "disabled"): the agent's reach goes through chock's exec and fetch_url`)
		}
		notes := []string{"this is Codex's user-wide configuration: every Codex session starts this project's gateway",
			"Codex's configuration has no rule that keeps its own apply_patch off named files: chock mcp serve holding any edit of the policy that widens it (policy.held) is what still holds"}
		return []byte(d.String()), changes, notes, nil
	}
}

// Hook is chock hook as a client is to run it before each of its own tool
// calls: the command line, and the policy's files (relative to the
// project) that the client's own edit tools are kept off where its file
// can say so.
type Hook struct {
	Command     string
	PolicyFiles []string
}

// HookClients are the clients whose hook chock connect --hooks can write.
var HookClients = []string{"claude-code", "gemini"}

// PlanHooks works out the edits that make client run h before each of its
// own tool calls, its tools kept on: Claude Code's PreToolUse hook (with
// onFailure "block", so a hook that cannot start, times out or fails
// blocks the call) in .claude/settings.json, and Gemini CLI's BeforeTool
// hook in .gemini/settings.json.
func PlanHooks(client string, h Hook, at Places, read func(string) ([]byte, error)) ([]Edit, error) {
	var sp spec
	switch client {
	case "claude-code":
		sp = spec{path: filepath.Join(at.Project, ".claude", "settings.json"), edit: func(old []byte) ([]byte, []string, []string, error) {
			o, err := parseObject(old)
			if err != nil {
				return nil, nil, nil, err
			}
			entry := map[string]any{"type": "command", "command": h.Command, "timeout": 30, "onFailure": "block"}
			changes, err := addHook(o, "PreToolUse", "*", entry, h.Command)
			if err != nil {
				return nil, nil, nil, err
			}
			files := editRules(append(append([]string(nil), h.PolicyFiles...), ".claude/**"))
			change, err := gains(o, "permissions", "deny", files, "the client's own edit tools cannot change the policy or the client's settings, hook or not")
			if err != nil {
				return nil, nil, nil, err
			}
			if change != "" {
				changes = append(changes, change)
			}
			out, err := o.render()
			notes := []string{`onFailure "block" needs Claude Code 2.1.295 or later; an older one lets a call through when the hook cannot run`}
			return out, changes, notes, err
		}}
	case "gemini":
		sp = spec{path: filepath.Join(at.Project, ".gemini", "settings.json"), edit: func(old []byte) ([]byte, []string, []string, error) {
			o, err := parseObject(old)
			if err != nil {
				return nil, nil, nil, err
			}
			entry := map[string]any{"type": "command", "command": h.Command, "timeout": 30000}
			changes, err := addHook(o, "BeforeTool", ".*", entry, h.Command)
			out, _ := o.render()
			notes := []string{"Gemini CLI lets a call through when a hook exits with any code but 0 or 2, and chock hook exits with one of those; its settings cannot keep write_file and replace off named files"}
			return out, changes, notes, err
		}}
	default:
		return nil, fmt.Errorf("chock connect --hooks writes the hook of %s; for %s, run chock hook %s from the client's own hook configuration", strings.Join(HookClients, " and "), client, client)
	}
	return apply([]spec{sp}, read)
}

// addHook adds, under hooks.EVENT, a matcher for every tool (matcher, in
// the client's syntax) running entry,
// unless a hook runs command there already.
func addHook(o *object, event, matcher string, entry map[string]any, command string) ([]string, error) {
	hooks, err := o.child("hooks")
	if err != nil {
		return nil, err
	}
	var list []any
	if raw, ok := hooks.vals[event]; ok {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("hooks.%s is not a list chock connect can edit", event)
		}
	}
	for _, m := range list {
		mm, _ := m.(map[string]any)
		hs, _ := mm["hooks"].([]any)
		for _, x := range hs {
			if xm, _ := x.(map[string]any); xm["command"] == command {
				return nil, nil
			}
		}
	}
	list = append(list, map[string]any{"matcher": matcher, "hooks": []any{entry}})
	if err := hooks.set(event, list); err != nil {
		return nil, err
	}
	if err := o.set("hooks", hooks); err != nil {
		return nil, err
	}
	return []string{fmt.Sprintf("hooks.%s gains %s before every tool call: the client's own tools stay on, and chock decides each call", event, command)}, nil
}

// editRules are Claude Code's Edit and Write rules for each file pattern:
// 2.1.328 holds Edit() against both its tools, and Write() is its own.
func editRules(files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, "Edit("+f+")", "Write("+f+")")
	}
	return out
}
