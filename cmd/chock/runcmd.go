package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/runtime"
	"github.com/chockhq/chock/runtime/credstore"
	"github.com/chockhq/chock/runtime/driver"
	"github.com/chockhq/chock/runtime/mcpconn"
	"github.com/chockhq/chock/runtime/sessionlog"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// storeFor opens the credential store a chock.zon names; a missing file
// means the default store.
func storeFor(configFile string, io stdio) (credstore.Store, bool) {
	kind := config.StoreFile
	if src, err := os.ReadFile(configFile); err == nil {
		c, ds := config.Load(configFile, src)
		if ds.HasErrors() {
			diag.WriteText(io.err, ds, diag.Sources{configFile: src})
			return nil, false
		}
		kind = c.Credentials.Store.Value
	} else if !errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
		return nil, false
	}
	st, err := credstore.Open(kind, credstore.Options{})
	if err != nil {
		fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
		return nil, false
	}
	return st, true
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) (int, bool) {
	f, ok := r.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	return fd, term.IsTerminal(fd)
}

// runLogin implements `chock login --tool-secret NAME`: the value comes
// from standard input (without echo on a terminal); no option takes it.
func runLogin(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("login", io)
	name := fs.String("tool-secret", "", "the secret's name, as chock.zon's secrets block gives it")
	cfg := fs.String("config", "chock.zon", "the chock.zon whose .credentials.store to use")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: chock login --tool-secret NAME [--config FILE]   (the value is read from standard input)")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *name == "" || fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
	st, ok := storeFor(*cfg, io)
	if !ok {
		return exitFailed
	}
	var value []byte
	if fd, tty := isTerminal(io.in); tty {
		fmt.Fprintf(io.err, "value of %s: ", *name)
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(io.err)
		if err != nil {
			fmt.Fprintf(io.err, "chock login: reading the value: %v\n", err)
			return exitFailed
		}
		value = b
	} else {
		b, err := readLimited(io.in, 1<<20)
		if err != nil {
			fmt.Fprintf(io.err, "chock login: reading the value: %v\n", err)
			return exitFailed
		}
		value = bytes.TrimRight(b, "\r\n")
	}
	if len(value) < action.MinSecretLen {
		fmt.Fprintf(io.err, "chock login: the value of %s is shorter than %d bytes, too short to redact; nothing stored\n", *name, action.MinSecretLen)
		return exitFailed
	}
	if err := io.aborts.critical(func() error { return st.Set(ctx, *name, string(value)) }); err != nil {
		fmt.Fprintf(io.err, "chock login: %s\n", oneLine(err.Error()))
		return exitFailed
	}
	fmt.Fprintf(io.err, "stored %s in the %s store\n", *name, st.Name())
	return exitOK
}

// readLimited reads at most limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("more than %d bytes", limit)
	}
	return b, nil
}

// runLogout implements `chock logout --tool-secret NAME`.
func runLogout(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("logout", io)
	name := fs.String("tool-secret", "", "the secret's name")
	cfg := fs.String("config", "chock.zon", "the chock.zon whose .credentials.store to use")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *name == "" || fs.NArg() != 0 {
		fmt.Fprintln(io.err, "usage: chock logout --tool-secret NAME [--config FILE]")
		return exitUsage
	}
	st, ok := storeFor(*cfg, io)
	if !ok {
		return exitFailed
	}
	if err := io.aborts.critical(func() error { return st.Delete(ctx, *name) }); err != nil {
		fmt.Fprintf(io.err, "chock logout: %s\n", oneLine(err.Error()))
		return exitFailed
	}
	fmt.Fprintf(io.err, "removed %s from the %s store\n", *name, st.Name())
	return exitOK
}

// runSessions implements `chock sessions list` and `chock sessions show ID [--json]`.
func runSessions(ctx context.Context, args []string, io stdio) int {
	usage := "usage: chock sessions list | chock sessions show ID [--json]"
	if len(args) == 0 {
		fmt.Fprintln(io.err, usage)
		return exitUsage
	}
	dir, err := sessionlog.DefaultDir()
	if err != nil {
		fmt.Fprintf(io.err, "chock sessions: %v\n", err)
		return exitFailed
	}
	switch args[0] {
	case "list":
		infos, err := sessionlog.List(dir)
		if err != nil {
			fmt.Fprintf(io.err, "chock sessions: %v\n", err)
			return exitFailed
		}
		for _, in := range infos {
			state := "open"
			if in.Ended {
				state = "ended"
			}
			rev := in.Revision
			if len(rev) > 16 {
				rev = rev[:16]
			}
			fmt.Fprintf(io.out, "%s  %s  policy %s  %d events  %s\n", in.ID, in.Start.Format(time.RFC3339), rev, in.Events, state)
		}
		return exitOK
	case "show":
		fs := newFlags("sessions show", io)
		asJSON := fs.Bool("json", false, "print the events as the log holds them, one JSON object a line")
		if code, ok := parseFlags(fs, args[1:]); !ok {
			return code
		}
		if fs.NArg() != 1 {
			fmt.Fprintln(io.err, usage)
			return exitUsage
		}
		if *asJSON {
			lines, err := sessionlog.ReadLines(dir, fs.Arg(0))
			if err != nil {
				fmt.Fprintf(io.err, "chock sessions: %v\n", err)
				return exitFailed
			}
			for _, l := range lines {
				io.raw.Write(safetext.JSON(append([]byte(l), '\n')))
			}
			return exitOK
		}
		evs, err := sessionlog.Read(dir, fs.Arg(0))
		if err != nil {
			fmt.Fprintf(io.err, "chock sessions: %v\n", err)
			return exitFailed
		}
		for _, ev := range evs {
			fmt.Fprintln(io.out, eventLine(ev))
		}
		return exitOK
	}
	fmt.Fprintln(io.err, usage)
	return exitUsage
}

// eventLine renders an event on one line: time, kind, then key=value.
func eventLine(ev sessionlog.Event) string {
	var b strings.Builder
	if t, ok := ev["time"].(string); ok {
		b.WriteString(t)
		b.WriteString("  ")
	}
	kind, _ := ev["kind"].(string)
	b.WriteString(kind)
	keys := make([]string, 0, len(ev))
	for k := range ev {
		if k != "kind" && k != "time" {
			keys = append(keys, k)
		}
	}
	sortStrings(keys)
	for _, k := range keys {
		v := ev[k]
		var s string
		switch x := v.(type) {
		case string:
			s = x
			if strings.ContainsAny(s, " \n\t\"") || s == "" {
				q, _ := json.Marshal(s)
				s = string(q)
			}
		default:
			q, _ := json.Marshal(x)
			s = string(q)
		}
		fmt.Fprintf(&b, " %s=%s", k, s)
	}
	return b.String()
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// sessionFlags are the flags of a command that opens a session.
type sessionFlags struct {
	policyFlags
	ask             string
	discoverTimeout time.Duration
	callTimeout     time.Duration
}

func (f *sessionFlags) add(fs *pflag.FlagSet) {
	f.policyFlags.add(fs)
	fs.StringVar(&f.ask, "ask", "", "how ask decisions are answered: prompt (on a terminal) or deny; default prompt on a terminal, deny otherwise")
	fs.DurationVar(&f.discoverTimeout, "mcp-discover-timeout", mcpconn.DiscoverTimeout, "the time an MCP server has to start and list its tools")
	fs.DurationVar(&f.callTimeout, "mcp-call-timeout", mcpconn.CallTimeout, "the time one MCP tool call has")
}

// open loads the policy and opens a session under it.
func (f *sessionFlags) open(ctx context.Context, name string, io stdio) (*runtime.Session, *load.Policy, int, bool) {
	p, code, ok := f.load(ctx, io)
	if !ok {
		return nil, nil, code, false
	}
	var asker runtime.Asker = runtime.DenyAsker{}
	_, tty := isTerminal(io.in)
	switch f.ask {
	case "prompt":
		if !tty {
			fmt.Fprintf(io.err, "chock %s: --ask prompt needs a terminal on standard input\n", name)
			return nil, nil, exitUsage, false
		}
		asker = &runtime.TerminalAsker{In: io.in, Out: io.err, Sources: p.Sources}
	case "deny":
	case "":
		if tty {
			asker = &runtime.TerminalAsker{In: io.in, Out: io.err, Sources: p.Sources}
		}
	default:
		fmt.Fprintf(io.err, "chock %s: unknown --ask %q (want prompt or deny)\n", name, f.ask)
		return nil, nil, exitUsage, false
	}
	if f.discoverTimeout <= 0 || f.callTimeout <= 0 {
		fmt.Fprintf(io.err, "chock %s: --mcp-discover-timeout and --mcp-call-timeout must be positive\n", name)
		return nil, nil, exitUsage, false
	}
	// The store the policy names: the config's, or the one a bundle
	// recorded when it was compiled.
	storeKind := config.StoreFile
	if p.Config != nil {
		storeKind = p.Config.Credentials.Store.Value
	} else {
		storeKind = p.Engine.Meta().Credentials
	}
	store, err := credstore.Open(storeKind, credstore.Options{})
	if err != nil {
		fmt.Fprintf(io.err, "chock %s: %s\n", name, oneLine(err.Error()))
		return nil, nil, exitFailed, false
	}
	s, err := runtime.New(ctx, runtime.Options{Engine: p.Engine, Config: p.Config, Store: store, Asker: asker,
		MCP: runtime.MCPOptions{DiscoverTimeout: f.discoverTimeout, CallTimeout: f.callTimeout}})
	if err != nil {
		fmt.Fprintf(io.err, "chock %s: %s\n", name, oneLine(err.Error()))
		return nil, nil, exitFailed, false
	}
	io.aborts.add(s.Abort)
	return s, p, exitOK, true
}

// runRun implements `chock run --script FILE`.
func runRun(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("run", io)
	var sf sessionFlags
	sf.add(fs)
	script := fs.String("script", "", "a JSONL file of tool calls: {\"tool\":\"exec\",\"argv\":[...]}, {\"tool\":\"fetch_url\",\"url\":\"...\"} or {\"tool\":\"mcp\",\"server\":\"S\",\"name\":\"TOOL\",\"arguments\":{...}}")
	asJSON := fs.Bool("json", false, "print each result as one line of JSON")
	exitCode := fs.Bool("exit-code", false, "exit 1 if any call was refused or failed: an error, a program exiting non-zero or reaching its time limit, an MCP tool reporting an error")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: chock run [--config FILE] [--org FILE]... [--bundle FILE] [--ask prompt|deny] [--json] --script FILE")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *script == "" || fs.NArg() != 0 {
		fs.Usage()
		return exitUsage
	}
	raw, err := readInput(*script, io)
	if err != nil {
		fmt.Fprintf(io.err, "chock run: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	calls, err := driver.ParseScript(raw)
	if err != nil {
		fmt.Fprintf(io.err, "chock run: %s: %s\n", *script, oneLine(err.Error()))
		return exitFailed
	}
	s, p, code, ok := sf.open(ctx, "run", io)
	if !ok {
		return code
	}
	// End is once only: this one stands for a return that did not end the
	// session itself (a panic unwinding to run's recover).
	defer s.End("stopped by an internal error")
	fmt.Fprintf(io.err, "session %s (policy %s), log %s\n", s.ID, short(p.Engine.Revision()), s.LogPath())
	sts, err := s.StartServers(ctx)
	if err != nil {
		fmt.Fprintf(io.err, "chock run: %s\n", oneLine(err.Error()))
		s.End(endReason(ctx, "starting the servers failed"))
		return exitFailed
	}
	for _, st := range sts {
		printServer(io.err, st)
	}
	failed := false
	for i, sc := range calls {
		if ctx.Err() != nil {
			fmt.Fprintf(io.err, "chock run: %s; %d of %d calls not run\n", context.Cause(ctx), len(calls)-i, len(calls))
			break
		}
		call := sc.Call()
		res, err := s.Run(ctx, call)
		printResult(io, i+1, sc, call, res, err, *asJSON, p.Sources)
		if err != nil || !succeeded(res) {
			failed = true
		}
	}
	if err := s.End(endReason(ctx, "done")); err != nil {
		fmt.Fprintf(io.err, "chock run: closing the session: %v\n", err)
		return exitFailed
	}
	if failed && *exitCode {
		return exitFailed
	}
	return exitOK
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

func short(rev string) string {
	if len(rev) > 16 {
		return rev[:16]
	}
	return rev
}

func printResult(io stdio, n int, sc driver.ToolCall, call *runtime.Call, res *runtime.Result, err error, asJSON bool, src diag.Sources) {
	w := io.out
	var refused *runtime.RefusedError
	if asJSON {
		out := map[string]any{"call": n, "tool": sc.Tool, "action": call.Action}
		switch {
		case errors.As(err, &refused):
			out["status"], out["reason"] = "refused", refused.Reason
			if refused.Explanation != nil {
				out["explanation"] = refused.Explanation
			}
		case err != nil:
			out["status"], out["error"] = "error", err.Error()
		default:
			out["status"], out["result"] = "done", res
		}
		writeJSON(io, out, false)
		return
	}
	what := sc.Summary()
	act := call.Action
	if act == "" {
		act = "no action"
	}
	fmt.Fprintf(w, "[%d] %s %s  (%s)\n", n, sc.Tool, safetext.Line(what), safetext.Line(act))
	switch {
	case errors.As(err, &refused):
		fmt.Fprintf(w, "    REFUSED: %s\n", safetext.Line(refused.Reason))
		if refused.Explanation != nil {
			var b bytes.Buffer
			refused.Explanation.WriteText(&b, src)
			for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
				fmt.Fprintf(w, "    | %s\n", safetext.Line(l))
			}
		}
	case err != nil:
		fmt.Fprintf(w, "    ERROR: %s\n", safetext.Line(err.Error()))
	case res.Background:
		fmt.Fprintf(w, "    started in the background, pid %d (given no secrets)\n", res.PID)
	default:
		if sc.Tool == "mcp" {
			if res.IsError {
				fmt.Fprintln(w, "    the tool reported an error")
			}
			writeIndented(w, "content", res.Content)
		} else if sc.Tool == "fetch_url" {
			fmt.Fprintf(w, "    status %d\n", res.Status)
			writeIndented(w, "body", res.Body)
		} else {
			fmt.Fprintf(w, "    exit %d", res.ExitCode)
			if res.TimedOut {
				fmt.Fprint(w, " (time limit reached)")
			}
			fmt.Fprintln(w)
			writeIndented(w, "stdout", res.Stdout)
			writeIndented(w, "stderr", res.Stderr)
		}
		if res.Truncated {
			fmt.Fprintln(w, "    (output truncated at 1 MiB)")
		}
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
