package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/hook"
	"github.com/chockhq/chock/runtime/sessionlog"
	"github.com/chockhq/chock/runtime/telemetry"
	"github.com/spf13/cobra"
)

// hookParams are the flags of chock hook.
type hookParams struct {
	pf      policyFlags
	otel    otelFlags
	sandbox bool
}

// newHookCmd is `chock hook CLIENT`: a client's pre-tool hook.
func newHookCmd(std stdio) *cobra.Command {
	var p hookParams
	c := &cobra.Command{
		Use:   "hook claude-code|codex|gemini [--config FILE] [--org FILE]... [--bundle FILE]...",
		Short: "decide a client's own tool call, as its pre-tool hook",
		Long: `hook reads a client's pre-tool hook event on standard input (Claude
Code's and Codex's PreToolUse, Gemini CLI's BeforeTool), decides the tool
call under the policy and answers in the client's own format, with the
deciding rule and its file:line:col as the reason (never how to change the
policy). A shell command (Claude Code's Bash, Codex's shell, Gemini CLI's
run_shell_command) is read as bash reads it: every program it would run,
anywhere in it (lists, pipelines, subshells, $(...), backticks, process
substitution, sh -c with a literal script, and what env, timeout, nice,
nohup, time, command, exec, xargs, find -exec, sudo, doas, stdbuf,
setsid, flock and watch run), is decided as exec.path.NAME, and the
strictest decision wins. What the text cannot tell (a command name from
a variable or a substitution, eval, source, a function or alias defined
in it, a shell reading its input) is asked. A redirection to a file and
the file tools (Claude Code's Read, Write, Edit, MultiEdit and
NotebookEdit, Codex's apply_patch, Gemini CLI's read_file,
read_many_files, write_file and replace) are fs.read.PATH or
fs.write.PATH under every name the path has (absolute, ~/..., relative to
the project's folder, and where a symlink leads), so chock's file defaults
hold; a write outside the project's folder that no rule of the policy
allows is asked. A fetch tool is net.fetch.HOST; mcp__S__T is
mcp.S.tool.T; any other tool is client.CLIENT.tool.NAME, decided by a
rule naming it and otherwise asked. Codex takes no ask from a hook and Gemini CLI's hook cannot ask, so
for them an ask is refused, saying what asked.

It fails closed: an event it cannot read, a policy it cannot load, any
error or panic is a deny in the client's format and exit 2, which every
client reads as a block. It never reads a terminal. Each decision goes to
the session log of that client session (hook-CLIENT-SESSION.jsonl).`,
		Args:      exactArgs(1),
		ValidArgs: hook.Clients,
		RunE:      paramsRunE(&p, runHook, std),
	}
	p.pf.add(c.Flags())
	p.otel.add(c.Flags())
	c.Flags().BoolVar(&p.sandbox, "sandbox", false, "answer an allowed shell command by rewriting it to run under chock exec, so the kernel enforces what the text could not show (claude-code and gemini)")
	return c
}

func (p *hookParams) validate(args []string) error {
	if !slices.Contains(hook.Clients, args[0]) {
		return failedf(exitUsage, "unknown client %q (want %s)", args[0], strings.Join(hook.Clients, ", "))
	}
	if p.sandbox && !slices.Contains(hook.SandboxClients, args[0]) {
		return failedf(exitUsage, "--sandbox rewrites a tool's input, which %s's hook cannot (it works for %s)", args[0], strings.Join(hook.SandboxClients, " and "))
	}
	return nil
}

// eventActions are the actions deciding call asks about: hook.Decide run
// with every action allowed, so that each action a stricter decision
// might leave unasked is asked too (a superset of what the real run
// asks).
func eventActions(ctx context.Context, call hook.Call) ([]string, error) {
	only := []string{}
	seen := map[string]bool{}
	record := func(_ context.Context, a string, _ []string) (*eval.Decision, error) {
		if !seen[a] {
			seen[a] = true
			only = append(only, a)
		}
		return &eval.Decision{Action: a, Phase: config.Loop, Decision: config.Allow,
			Layers: []eval.Layer{{Layer: "project", Name: "project", Decision: config.Allow, Default: true}}}, nil
	}
	if _, err := hook.Decide(ctx, record, call); err != nil {
		return nil, err
	}
	return only, nil
}

// hookDecide is hook.Decide; a test makes it panic.
var hookDecide = hook.Decide

// runHook answers one hook event; whatever goes wrong is a deny.
func runHook(ctx context.Context, args []string, p hookParams, std stdio) (err error) {
	// A hook lives for one event, and a client waits on it for each tool
	// call: the collector runs a quarter as often (a large policy's load
	// spent a sixth of its time in it).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	client := args[0]
	answer := func(a hook.Answer) error {
		std.raw.Write(a.Stdout)
		std.err.Write(a.Stderr)
		return reported(a.Code)
	}
	defer func() {
		if r := recover(); r != nil {
			err = answer(hook.Fail(client, fmt.Errorf("chock failed inside (%v)", r)))
		}
	}()
	ev, err := hook.ReadEvent(client, std.in)
	if err != nil {
		return answer(hook.Fail(client, err))
	}
	cwd := ev.Cwd
	if !filepath.IsAbs(cwd) {
		// The client runs its hook in the session's folder.
		cwd, _ = os.Getwd()
	}
	call := hook.Call{Client: client, Tool: ev.ToolName, Input: ev.ToolInput, Cwd: cwd, Project: cwd, Home: os.Getenv("HOME")}
	if p.pf.config != "" && p.pf.config != "-" && !p.pf.bundleGiven() {
		// Relative fs paths are the project's: the folder of its chock.zon.
		if abs, err := filepath.Abs(p.pf.config); err == nil {
			call.Project = filepath.Dir(abs)
		}
	}
	// The actions the event asks about, found first: the policy is
	// compiled for those alone, so a hook's cost does not grow with the
	// policy's other rules.
	only, err := eventActions(ctx, call)
	if err != nil {
		return answer(hook.Fail(client, err))
	}
	p.pf.only = only
	quiet := std
	var lintOut strings.Builder
	quiet.err = &lintOut
	pol, err := p.pf.load(ctx, quiet)
	if err != nil {
		why := err.Error()
		if lintOut.Len() > 0 {
			why = strings.TrimSpace(lintOut.String())
		}
		return answer(hook.Fail(client, errors.New("no policy: "+why)))
	}
	// Telemetry never decides: a setting it cannot follow is said on
	// stderr and the hook goes on without it.
	var telemetryOut strings.Builder
	// The client waits for the hook's exit on every tool call: a slow
	// collector costs it at most a second.
	p.otel.maxWait = time.Second
	tctx, stop, terr := p.otel.start(ctx, &telemetryOut)
	if terr == nil {
		ctx = tctx
		defer stop()
	}
	ctx, span := telemetry.StartHook(ctx, client, ev.SessionID, ev.ToolName)
	defer span.End()
	decide := func(ctx context.Context, a string, args []string) (*eval.Decision, error) {
		d, err := pol.Engine.DecideArgs(ctx, a, args, config.Loop)
		if err == nil {
			telemetry.RecordDecision(ctx, d, telemetry.Verdict{Allowed: d.Decision == config.Allow, Hook: hook.PutsAsks(client)})
		}
		return d, err
	}
	v, err := hookDecide(ctx, decide, call)
	if err != nil {
		return answer(hook.Fail(client, err))
	}
	span.SetAttributes(telemetry.Decision.String(v.Decision.String()))
	if err := logHook(client, ev, v, pol.Engine.Revision()); err != nil {
		return answer(hook.Fail(client, fmt.Errorf("the session log: %w", err)))
	}
	var update map[string]any
	if p.sandbox {
		prefix, err := p.execPrefix()
		if err != nil {
			return answer(hook.Fail(client, err))
		}
		update = hook.Sandboxed(client, ev, prefix)
	}
	return answer(hook.Respond(client, v, update))
}

// execPrefix is chock exec with this hook's policy flags, paths made
// absolute (the client runs it in its own working directory).
func (p *hookParams) execPrefix() ([]string, error) {
	out := []string{selfCommand(), "exec"}
	abs := func(flag, name string) error {
		full, err := filepath.Abs(name)
		if err != nil {
			return err
		}
		out = append(out, flag, full)
		return nil
	}
	if len(p.pf.bundles) == 0 {
		if err := abs("--config", p.pf.config); err != nil {
			return nil, err
		}
	}
	for _, o := range p.pf.orgs {
		if err := abs("--org", o); err != nil {
			return nil, err
		}
	}
	for _, b := range p.pf.bundles {
		if err := abs("--bundle", b); err != nil {
			return nil, err
		}
	}
	return append(out, "--"), nil
}

// logHook appends the decision to the log of the client's session.
func logHook(client string, ev *hook.Event, v hook.Verdict, revision string) error {
	dir, err := sessionlog.DefaultDir()
	if err != nil {
		return err
	}
	// The client's session id names the log: as it is when it is a plain
	// name, by its digest otherwise (it is the client's text, not ours).
	sid := ev.SessionID
	if sid == "" || len(sid) > 128 || strings.Trim(sid, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		sum := sha256.Sum256([]byte(sid))
		sid = hex.EncodeToString(sum[:8])
	}
	id := "hook-" + client + "-" + sid
	l, err := sessionlog.Append(dir, id, nil)
	if err != nil {
		return err
	}
	err = l.Event("hook.decision", true, sessionlog.F("client", client), sessionlog.F("tool", ev.ToolName),
		sessionlog.F("actions", v.Actions), sessionlog.F("decision", v.Decision.String()), sessionlog.F("reason", v.Reason),
		sessionlog.F("policy", revision))
	return errors.Join(err, l.Close())
}
