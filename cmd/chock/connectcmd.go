package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/clientconf"
	"github.com/chockhq/chock/internal/safefile"
	"github.com/chockhq/chock/internal/udiff"
	"github.com/chockhq/chock/runtime/hook"
	"github.com/spf13/cobra"
)

// connectParams are the flags of chock connect.
type connectParams struct {
	configFile string
	orgs       []string
	dryRun     bool
	hooks      bool
}

// newConnectCmd is `chock connect CLIENT`: it writes an agent client's MCP
// configuration to start chock mcp serve.
func newConnectCmd(std stdio) *cobra.Command {
	var p connectParams
	c := &cobra.Command{
		Use:   "connect claude-code|codex|cursor|gemini [--dry-run] [--hooks] [--config FILE] [--org FILE]...",
		Short: "write an agent client's MCP configuration to start chock mcp serve",
		Long: `connect writes the MCP configuration of an agent client so that it starts
chock mcp serve with this project's policy (--config, default ./chock.zon,
and the --org ceilings), merged with what the file holds: every other
server and setting is kept, and the file as it was is kept beside it
first (FILE.chock.bak). A gateway governs only what passes through it, so
where the client's file can say so, the client's own shell and web-fetch
tools are turned off in it, and the agent's reach goes through chock's
exec and fetch_url, and where it can say so its own edit tools are kept
off the policy's files. A file the project commits (.mcp.json,
.gemini/settings.json, .cursor/mcp.json) names the policy's files relative
to the project's folder; Codex's user-wide file by absolute path. It
prints what changed; --dry-run prints it, and the exact content as a
unified diff against each file as it is, and writes nothing.

  claude-code  .mcp.json (the server) and .claude/settings.json
               (permissions.deny Bash, WebFetch, WebSearch, and Edit and
               Write of chock.zon, the org files, .mcp.json and
               .claude/**; permissions.allow mcp__chock; the server
               approved)
  codex        ~/.codex/config.toml ($CODEX_HOME): [mcp_servers.chock]
               with env_vars and default_tools_approval_mode =
               "approve", [features] shell_tool = false and web_search =
               "disabled"
  cursor       .cursor/mcp.json (its own tools are set elsewhere)
  gemini       .gemini/settings.json: the server, trusted, with the
               variables it needs, and tools.exclude run_shell_command,
               web_fetch and google_web_search

With --hooks, it writes chock hook as the client's pre-tool hook instead
and keeps the client's own tools on: Claude Code's PreToolUse (with
onFailure "block" and a 30 s timeout) and the Edit/Write denies of the
policy's files in .claude/settings.json; Gemini CLI's BeforeTool in
.gemini/settings.json.

Where a client's file cannot keep its own edit tools off the policy
(Codex, Gemini CLI, Cursor), the output says so: chock mcp serve holding
any edit of the policy that widens it is what still holds.`,
		Args:      exactArgs(1),
		ValidArgs: clientconf.Clients,
		RunE:      paramsRunE(&p, runConnect, std),
	}
	addConfigFlag(c.Flags(), &p.configFile)
	c.Flags().StringArrayVar(&p.orgs, "org", nil, "start the gateway with the org ceiling in `FILE` too; repeatable")
	c.Flags().BoolVar(&p.dryRun, "dry-run", false, "print what would change, and write nothing")
	c.Flags().BoolVar(&p.hooks, "hooks", false, "write chock hook as the client's pre-tool hook instead, the client's own tools kept on (claude-code and gemini)")
	return c
}

// validate checks the argument of chock connect, the client.
func (p *connectParams) validate(args []string) error {
	if !slices.Contains(clientconf.Clients, args[0]) {
		return failedf(exitUsage, "unknown client %q (want %s)", args[0], strings.Join(clientconf.Clients, ", "))
	}
	return nil
}

// runConnect is chock connect once its flags are valid: the client's
// files planned, and written unless --dry-run.
func runConnect(_ context.Context, args []string, p connectParams, std stdio) error {
	client := args[0]
	project, err := os.Getwd()
	if err != nil {
		return failed(exitFailed, err)
	}
	abs := func(name string) (string, error) {
		if name == "-" {
			return "", errors.New("a client starts chock mcp serve itself, so the policy must be a file, not standard input")
		}
		full, err := filepath.Abs(name)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(full); err != nil {
			return "", fmt.Errorf("%s: %w; the client's chock mcp serve reads it", displayName(name), err)
		}
		return full, nil
	}
	cfgPath, err := abs(p.configFile)
	if err != nil {
		return failed(exitUsage, err)
	}
	// A file the project commits names the policy's files relative to the
	// project's folder (where the client starts the server); Codex's
	// user-wide file by absolute path.
	inProject := func(full string) string {
		if rel, err := filepath.Rel(project, full); err == nil && filepath.IsLocal(rel) {
			return filepath.ToSlash(rel)
		}
		return full
	}
	entry := clientconf.Entry{Name: "chock", Command: selfCommand(),
		Args:        []string{"mcp", "serve", "--config", inProject(cfgPath)},
		UserArgs:    []string{"mcp", "serve", "--config", cfgPath},
		PolicyFiles: []string{inProject(cfgPath)}}
	for _, o := range p.orgs {
		full, err := abs(o)
		if err != nil {
			return failed(exitUsage, err)
		}
		entry.Args = append(entry.Args, "--org", inProject(full))
		entry.UserArgs = append(entry.UserArgs, "--org", full)
		entry.PolicyFiles = append(entry.PolicyFiles, inProject(full))
	}
	entry.Env = neededEnv(cfgPath)
	codexHome := os.Getenv("CODEX_HOME")
	if codexHome == "" {
		home, err := os.UserHomeDir()
		if err != nil && client == "codex" {
			return failed(exitFailed, err)
		}
		codexHome = filepath.Join(home, ".codex")
	}
	places := clientconf.Places{Project: project, CodexHome: codexHome}
	var edits []clientconf.Edit
	if p.hooks {
		// The hook runs in the project's folder, as the client does.
		// The hook runs in whatever folder the agent is in: Claude Code's
		// names the policy from $CLAUDE_PROJECT_DIR, which it sets for
		// hooks; Gemini CLI's by absolute path. Every word is quoted.
		line := []string{hook.Quote(selfCommand()), "hook", client}
		for i := 2; i+1 < len(entry.UserArgs); i += 2 {
			flag, full := entry.UserArgs[i], entry.UserArgs[i+1]
			arg := hook.Quote(full)
			if rel := inProject(full); client == "claude-code" && rel != full {
				arg = `"$CLAUDE_PROJECT_DIR"/` + hook.Quote(rel)
			}
			line = append(line, flag, arg)
		}
		edits, err = clientconf.PlanHooks(client, clientconf.Hook{Command: strings.Join(line, " "), PolicyFiles: entry.PolicyFiles}, places, readIfThere)
		if err != nil {
			return failed(exitUsage, err)
		}
	} else {
		edits, err = clientconf.Plan(client, entry, places, readIfThere)
	}
	if err != nil {
		return failed(exitFailed, err)
	}
	for _, ed := range edits {
		shown := shownPath(project, ed.Path)
		if !ed.Changed() {
			fmt.Fprintf(std.out, "%s: already connected, nothing to change\n", shown)
			continue
		}
		backup := ""
		if ed.Old != nil {
			backup = backupName(ed.Path)
		}
		if !p.dryRun {
			if err := writeEdit(ed, backup); err != nil {
				return failed(exitFailed, err)
			}
		}
		verb := "created"
		if ed.Old != nil {
			verb = "changed"
		}
		if p.dryRun {
			verb = "would be " + verb
		}
		fmt.Fprintf(std.out, "%s: %s\n", shown, verb)
		for _, ch := range ed.Changes {
			fmt.Fprintf(std.out, "  %s\n", ch)
		}
		if backup != "" {
			kept := "kept as"
			if p.dryRun {
				kept = "would be kept as"
			}
			fmt.Fprintf(std.out, "  the file as it was %s %s\n", kept, shownPath(project, backup))
		}
		for _, n := range ed.Notes {
			fmt.Fprintf(std.out, "  note: %s\n", n)
		}
		if p.dryRun {
			// The exact content it would write, as a change to the file.
			std.out.Write(udiff.Unified(shown, shown, ed.Old, ed.New))
		}
	}
	if p.dryRun {
		fmt.Fprintln(std.out, "--dry-run: nothing was written")
	}
	return nil
}

// selfCommand is how a client is to start this chock: as it was started,
// a bare name found on PATH staying a bare name (the client finds it on
// its own PATH, and a newer chock there is the one it starts), a path
// made absolute.
func selfCommand() string {
	argv0 := os.Args[0]
	if !strings.Contains(argv0, "/") {
		return argv0
	}
	if p, err := filepath.Abs(argv0); err == nil {
		return p
	}
	return argv0
}

// neededEnv are the variables chock mcp serve needs from a client that
// passes a server only some of its environment: the state and config
// folders when they are set here, the variables of an env store's
// secrets, and the session bus a keyring is reached through.
func neededEnv(cfgPath string) []string {
	var out []string
	for _, v := range []string{"CHOCK_STATE_DIR", "CHOCK_CONFIG_DIR"} {
		if _, ok := os.LookupEnv(v); ok {
			out = append(out, v)
		}
	}
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return out
	}
	cfg, _ := config.Load(displayName(cfgPath), raw)
	if cfg == nil {
		return out
	}
	switch cfg.Credentials.Store.Value {
	case config.StoreEnv:
		for _, s := range cfg.Secrets {
			if !slices.Contains(out, s.Name.Value) {
				out = append(out, s.Name.Value)
			}
		}
	case config.StoreKeyring:
		out = append(out, "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")
	}
	return out
}

// readIfThere reads a file, nil when it is not there.
func readIfThere(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil && b == nil {
		b = []byte{}
	}
	return b, err
}

// backupName is where a file is kept before it is changed: FILE.chock.bak,
// or the first of FILE.chock.bak.2, .3, ... not taken (an earlier backup
// is never replaced: it may hold the file before chock ever touched it).
func backupName(name string) string {
	p := name + ".chock.bak"
	for i := 2; ; i++ {
		if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			return p
		}
		p = fmt.Sprintf("%s.chock.bak.%d", name, i)
	}
}

// writeEdit keeps the old file as backup (its mode kept), then writes the
// new one through safefile: a symlink is written through, and nothing
// partial is ever left.
func writeEdit(ed clientconf.Edit, backup string) error {
	perm := fs.FileMode(0o644)
	if ed.Old != nil {
		if _, fi, err := safefile.Resolve(ed.Path); err == nil && fi != nil {
			perm = fi.Mode().Perm()
		}
		if err := safefile.Write(backup, ed.Old, perm); err != nil {
			return fmt.Errorf("keeping %s: %w; nothing written", ed.Path, err)
		}
	} else if err := os.MkdirAll(filepath.Dir(ed.Path), 0o755); err != nil {
		return err
	}
	return safefile.Write(ed.Path, ed.New, perm)
}

// shownPath is name relative to the project when it is under it.
func shownPath(project, name string) string {
	if rel, err := filepath.Rel(project, name); err == nil && filepath.IsLocal(rel) {
		return displayName(rel)
	}
	return displayName(name)
}
