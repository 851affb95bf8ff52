package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/chockhq/chock/eval"
	"io"
	"strings"
	"time"

	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/runtime"
	"github.com/chockhq/chock/runtime/credstore"
	"github.com/chockhq/chock/runtime/driver"
	"github.com/chockhq/chock/runtime/mcpconn"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// sessionFlags are the flags of a command that opens a session.
type sessionFlags struct {
	policyFlags
	callFlags
	ask string
}

// add adds the policy flags, --ask, the MCP budgets and the sandbox's.
func (f *sessionFlags) add(fs *pflag.FlagSet) {
	f.policyFlags.add(fs)
	f.opa.add(fs)
	fs.StringVar(&f.ask, "ask", "", "answer ask decisions by `HOW`: prompt (on a terminal) or deny; default prompt on a terminal, deny otherwise")
	f.callFlags.add(fs)
}

// callFlags are the flags of what a session's calls may take: the MCP
// budgets and the sandbox. chock run and chock mcp serve share them.
type callFlags struct {
	discoverTimeout time.Duration
	callTimeout     time.Duration
	noSandbox       bool
	writable        []string
	otel            otelFlags
}

func (f *callFlags) add(fs *pflag.FlagSet) {
	fs.DurationVar(&f.discoverTimeout, "mcp-discover-timeout", mcpconn.DiscoverTimeout, "the `DURATION` an MCP server has to start and list its tools")
	fs.DurationVar(&f.callTimeout, "mcp-call-timeout", mcpconn.CallTimeout, "the `DURATION` one MCP tool call has")
	fs.BoolVar(&f.noSandbox, "no-sandbox", false, "run exec calls without a sandbox (no namespaces, no Landlock; nested programs unchecked); each session's log records it")
	fs.StringArrayVar(&f.writable, "writable", nil, "let exec calls write `DIR` too (repeatable); besides it only the working directory and the temporary folders are writable inside a call")
	f.otel.add(fs)
}

// check says what is wrong with the flags, a usage error.
func (f *callFlags) check() error {
	if f.discoverTimeout <= 0 || f.callTimeout <= 0 {
		return failedf(exitUsage, "--mcp-discover-timeout and --mcp-call-timeout must be positive")
	}
	return nil
}

// options are the options of a session under policy p, its asker left to
// the caller: the credential store the policy names (the config's, or the
// one a bundle recorded when it was compiled), the budgets and the
// sandbox. The warning that --no-sandbox gives goes to w.
func (f *callFlags) options(p *load.Policy, protect []string, w io.Writer) (runtime.Options, error) {
	storeKind := p.Engine.Meta().Credentials
	if p.Config != nil {
		storeKind = p.Config.Credentials.Store.Value
	}
	store, err := credstore.Open(storeKind, credstore.Options{})
	if err != nil {
		return runtime.Options{}, failed(exitFailed, err)
	}
	if f.noSandbox {
		fmt.Fprintln(w, "chock: --no-sandbox: exec calls run without a sandbox, and the programs they start are not checked")
	}
	return runtime.Options{Engine: p.Engine, Config: p.Config, Store: store,
		MCP: runtime.MCPOptions{DiscoverTimeout: f.discoverTimeout, CallTimeout: f.callTimeout}, NoSandbox: f.noSandbox,
		Writable: f.writable, Protect: protect}, nil
}

// open loads the policy and opens a session under it.
func (f *sessionFlags) open(ctx context.Context, std stdio) (*runtime.Session, *load.Policy, error) {
	if err := f.check(); err != nil {
		return nil, nil, err
	}
	// The PATH's programs are scanned while the policy loads.
	pre := runtime.StartPrescan(nil)
	p, err := f.load(ctx, std)
	if err != nil {
		return nil, nil, err
	}
	var asker runtime.Asker = runtime.DenyAsker{}
	_, tty := isTerminal(std.in)
	switch f.ask {
	case "prompt":
		if !tty {
			return nil, nil, failedf(exitUsage, "--ask prompt needs a terminal on standard input")
		}
		asker = &runtime.TerminalAsker{In: std.in, Out: std.err, Sources: p.Sources}
	case "deny":
	case "":
		if tty {
			asker = &runtime.TerminalAsker{In: std.in, Out: std.err, Sources: p.Sources}
		}
	default:
		return nil, nil, failedf(exitUsage, "unknown --ask %q (want prompt or deny)", f.ask)
	}
	o, err := f.options(p, f.files(), std.err)
	if err != nil {
		return nil, nil, err
	}
	o.Asker, o.Prescan = asker, pre
	s, err := runtime.New(ctx, o)
	if err != nil {
		return nil, nil, failed(exitFailed, err)
	}
	std.aborts.add(s.Abort)
	return s, p, nil
}

// newRunCmd is `chock run --script FILE`.
func newRunCmd(std stdio) *cobra.Command {
	var p runParams
	c := &cobra.Command{
		Use:   "run [--config FILE] [--org FILE]... [--bundle FILE]... [--opa-config FILE | --opa-url URL] [--ask prompt|deny] [--json] [--exit-code] --script FILE",
		Short: "a session driven by a script of tool calls",
		Long: `run opens a session under the policy and runs the JSONL script of tool
calls FILE: {"tool":"exec","argv":[...]}, {"tool":"fetch_url","url":"..."}
or {"tool":"mcp","server":"S","name":"TOOL","arguments":{...}}.

The configured MCP servers start first (a line on stderr for each, started
or left out and why); every call passes audit, time limit, policy, secrets
and redaction before the action; results go to stdout, redacted, control
characters shown as \xNN. The session log goes under $CHOCK_STATE_DIR
(default ~/.local/state/chock).`,
		Args: noArgs,
		RunE: paramsRunE(&p, runScript, std),
	}
	p.sf.add(c.Flags())
	c.Flags().StringVar(&p.script, "script", "", "run the tool calls in the JSONL `FILE`: {\"tool\":\"exec\",\"argv\":[...]}, {\"tool\":\"fetch_url\",\"url\":\"...\"} or {\"tool\":\"mcp\",\"server\":\"S\",\"name\":\"TOOL\",\"arguments\":{...}}")
	c.Flags().BoolVar(&p.asJSON, "json", false, "print each result as one line of JSON")
	c.Flags().BoolVar(&p.exitCode, "exit-code", false, "exit 1 if any call was refused or failed: an error, a program exiting non-zero or reaching its time limit, an MCP tool reporting an error")
	c.RegisterFlagCompletionFunc("ask", cobra.FixedCompletions([]cobra.Completion{"prompt", "deny"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// runParams are the flags of chock run.
type runParams struct {
	sf               sessionFlags
	script           string
	asJSON, exitCode bool
}

// validate checks that chock run has a script to run.
func (p *runParams) validate([]string) error {
	if p.script == "" {
		return usageError()
	}
	return nil
}

// runScript is chock run once its flags are valid: a session under the
// policy, the script's calls run in it one by one.
func runScript(ctx context.Context, _ []string, p runParams, std stdio) error {
	raw, err := readInput(p.script, std)
	if err != nil {
		return failed(exitUsage, err)
	}
	calls, err := driver.ParseScript(raw)
	if err != nil {
		return failedf(exitFailed, "%s: %w", p.script, err)
	}
	defer p.sf.opa.close()
	ctx, stop, err := p.sf.otel.start(ctx, std.err)
	if err != nil {
		return err
	}
	defer stop()
	s, pol, err := p.sf.open(ctx, std)
	if err != nil {
		return err
	}
	// End is once only: this one stands for a return that did not end the
	// session itself (a panic unwinding to run's recover).
	defer s.End("stopped by an internal error")
	fmt.Fprintf(std.err, "session %s (policy %s), log %s\n", s.ID, short(pol.Engine.Revision()), s.LogPath())
	sts, err := s.StartServers(ctx)
	if err != nil {
		s.End(endReason(ctx, "starting the servers failed"))
		return failed(exitFailed, err)
	}
	for _, st := range sts {
		printServer(std.err, st)
	}
	failedCalls := false
	for i, call := range calls {
		if ctx.Err() != nil {
			fmt.Fprintf(std.err, "chock run: %s; %d of %d calls not run\n", context.Cause(ctx), len(calls)-i, len(calls))
			break
		}
		res, err := s.Run(ctx, call)
		// Everything printed of a call passes the session's redaction:
		// the agent's own argv and URL may hold a value it was shown.
		// The hint (what would permit a refused call) is for the person, on
		// stderr: the results are what an agent reads, and an agent is never
		// told how to widen its own policy.
		var buf, hints bytes.Buffer
		pio := std
		pio.out, pio.err = &buf, &hints
		printResult(pio, i+1, call, res, err, p.asJSON, pol.Sources)
		std.out.Write(s.Redactor().Bytes(buf.Bytes()))
		std.err.Write(s.Redactor().Bytes(hints.Bytes()))
		if err != nil || !succeeded(res) {
			failedCalls = true
		}
	}
	if err := s.End(endReason(ctx, "done")); err != nil {
		return failedf(exitFailed, "closing the session: %w", err)
	}
	if failedCalls && p.exitCode {
		return reported(exitFailed)
	}
	return nil
}

// succeeded says whether a call that ran did what was asked: a program
// that exited 0 within its time, an MCP tool that reported no error.
func succeeded(res *runtime.Result) bool {
	return !res.TimedOut && res.ExitCode == 0 && !res.IsError
}

// endReason is session.end's reason: a signal's, or else ok.
func endReason(ctx context.Context, ok string) string {
	if ctx.Err() != nil {
		return context.Cause(ctx).Error()
	}
	return ok
}

// printServer says what starting one server came to.
func printServer(w io.Writer, st runtime.ServerStatus) {
	if !st.Started {
		fmt.Fprintf(w, "server %s: left out: %s\n", st.Name, safetext.Line(st.Why))
		return
	}
	where := "stdio, no network"
	if st.Network {
		where = "stdio, network allowed"
	}
	if st.Kind == "url" {
		where = st.Host
	}
	var tools []string
	for _, t := range st.Tools {
		tools = append(tools, safetext.Line(t.Name)+" ("+t.Decision.String()+")")
	}
	fmt.Fprintf(w, "server %s: started (%s), %d tools: %s\n", st.Name, where, len(st.Tools), strings.Join(tools, ", "))
}

func short(rev string) string { return eval.ShortRevision(rev) }

func printResult(std stdio, n int, call *runtime.Call, res *runtime.Result, err error, asJSON bool, src diag.Sources) {
	w, tool := std.out, runtime.ToolNamed(call.Tool)
	var refused *runtime.RefusedError
	if asJSON {
		out := map[string]any{"call": n, "tool": call.Tool, "action": call.Action}
		switch {
		case errors.As(err, &refused):
			out["status"], out["reason"] = "refused", refused.Reason
			if x := refused.Explanation; x != nil {
				agent := *x
				agent.Hint = nil
				out["explanation"] = &agent
				writeHint(std.err, n, x)
			}
		case err != nil:
			out["status"], out["error"] = "error", err.Error()
		default:
			out["status"], out["result"] = "done", res
		}
		writeJSON(std, out, false)
		return
	}
	what := tool.Summary(call)
	act := call.Action
	if act == "" {
		act = "no action"
	}
	fmt.Fprintf(w, "[%d] %s %s  (%s)\n", n, call.Tool, safetext.Line(what), safetext.Line(act))
	switch {
	case errors.As(err, &refused):
		fmt.Fprintf(w, "    REFUSED: %s\n", safetext.Line(refused.Reason))
		if x := refused.Explanation; x != nil {
			var b bytes.Buffer
			x.WriteTextWith(&b, src, eval.TextOptions{})
			for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
				fmt.Fprintf(w, "    | %s\n", safetext.Line(l))
			}
			writeHint(std.err, n, x)
		}
	case err != nil:
		fmt.Fprintf(w, "    ERROR: %s\n", safetext.Line(err.Error()))
	case res.Background:
		fmt.Fprintf(w, "    started in the background, pid %d (given no secrets)\n", res.PID)
	default:
		status, blocks := tool.Shows(res)
		if status != "" {
			fmt.Fprintf(w, "    %s\n", status)
		}
		for _, b := range blocks {
			writeIndented(w, b.Label, b.Text)
		}
		if res.Truncated {
			fmt.Fprintln(w, "    (output truncated at 1 MiB)")
		}
	}
}

// writeHint writes what would permit refused call n, for the person, on
// stderr.
func writeHint(w io.Writer, n int, x *eval.Explanation) {
	if x.Hint == nil || x.Hint.Text == "" {
		return
	}
	var b bytes.Buffer
	x.Hint.WriteText(&b)
	for _, l := range strings.Split(strings.Trim(b.String(), "\n"), "\n") {
		fmt.Fprintf(w, "chock run: [%d] %s\n", n, safetext.Line(strings.TrimSpace(l)))
	}
}

func writeIndented(w io.Writer, label, text string) {
	if text == "" {
		return
	}
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(w, "    %s| %s\n", label, safetext.Line(l))
	}
}
