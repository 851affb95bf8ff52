package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/netaddr"
	"github.com/chockhq/chock/runtime"
	"github.com/chockhq/chock/runtime/gateway"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
)

// tokenEnv names the bearer token chock mcp serve --http wants, when it
// is set; otherwise a token is made and printed once.
const tokenEnv = "CHOCK_GATEWAY_TOKEN"

// newMCPServeCmd is `chock mcp serve`: the MCP gateway a real agent client
// connects to.
func newMCPServeCmd(std stdio) *cobra.Command {
	var p mcpServeParams
	c := &cobra.Command{
		Use:   "serve [--config FILE] [--org FILE]... [--bundle FILE]... [--opa-config FILE | --opa-url URL] [--http ADDR] [--ask elicit|prompt|deny]",
		Short: "serve MCP to an agent client, every tool call under policy",
		Long: `serve is the MCP server an agent client (Claude Code, Codex, Cursor,
Gemini CLI, the MCP Inspector) connects to. Each connection is one agent
session, as chock run opens one: the configured MCP servers start, every
call passes audit, time limit, policy, secrets and redaction (an exec call
runs in the same per-call sandbox; --no-sandbox runs it without one), and
the session log goes under $CHOCK_STATE_DIR.

It offers exec (argv, dir, stdin, timeout, background), fetch_url (url) and
each tool of each started server whose mcp.S.tool.T is not deny, named
S__T, with the server's description, input schema and annotations. A
refusal is a tool result naming the action, the decision, the rule with
its file:line:col and its why, never how to change the policy (chock
explain tells the person). An ask goes to the client as an elicitation
when it declared one; with --ask prompt otherwise to chock's terminal;
else it is refused (--ask deny refuses every ask). When chock.zon or an
org file changes, still lints clean and widens nothing (chock diff's
engine compares it with the running policy), the policy is swapped and
the client told its tools changed; an edit that widens is held (with
--ask prompt, the person may accept it at chock's terminal), and one that
does not lint keeps the running policy; both say why.

The transport is stdio, unless --http 127.0.0.1:PORT serves Streamable
HTTP at /mcp on a loopback address (any other is refused), each request
carrying Authorization: Bearer TOKEN: $CHOCK_GATEWAY_TOKEN, or a token made
and printed once on stderr.`,
		Args: noArgs,
		RunE: paramsRunE(&p, runMCPServe, std),
	}
	p.pf.add(c.Flags())
	p.pf.opa.add(c.Flags())
	c.Flags().StringVar(&p.addr, "http", "", "serve Streamable HTTP at http://`ADDR`/mcp instead of stdio; ADDR is 127.0.0.1:PORT or [::1]:PORT (port 0 picks one)")
	c.Flags().StringVar(&p.ask, "ask", "elicit", "put an ask the client cannot be asked `HOW`: elicit (refused), prompt (at chock's terminal) or deny (every ask refused)")
	p.cf.add(c.Flags())
	c.RegisterFlagCompletionFunc("ask", cobra.FixedCompletions([]cobra.Completion{"elicit", "prompt", "deny"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// mcpServeParams are the flags of chock mcp serve.
type mcpServeParams struct {
	pf        policyFlags
	cf        callFlags
	addr, ask string
	// mode and listen are --ask and --http as validate read them.
	mode   gateway.Ask
	listen string
}

// validate checks the flags of chock mcp serve and reads --ask and
// --http.
func (p *mcpServeParams) validate([]string) error {
	mode, ok := gateway.ParseAsk(p.ask)
	if !ok {
		return failedf(exitUsage, "unknown --ask %q (want elicit, prompt or deny)", p.ask)
	}
	p.mode = mode
	if p.addr != "" {
		ap, err := netaddr.LoopbackListen(p.addr)
		if err != nil {
			return failedf(exitUsage, "--http %w", err)
		}
		p.listen = ap.String()
	}
	return p.cf.check()
}

// runMCPServe is chock mcp serve once its flags are valid: the gateway,
// serving stdio or HTTP until ctx ends.
func runMCPServe(ctx context.Context, _ []string, p mcpServeParams, std stdio) error {
	var prompter *runtime.TerminalAsker
	if p.mode == gateway.AskPrompt {
		tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return failedf(exitUsage, "--ask prompt asks at the controlling terminal, and there is none: %v", err)
		}
		defer tty.Close()
		prompter = &runtime.TerminalAsker{In: tty, Out: tty}
	}
	// A policy OPA's bundle plugin swaps in reaches every connection.
	var swapTo atomic.Pointer[gateway.Gateway]
	p.pf.opa.onSwap = func(string) {
		if g := swapTo.Load(); g != nil {
			g.Swapped(ctx, nil, bundleSources(g.Engine().Meta()))
		}
	}
	defer p.pf.opa.close()
	ctx, stop, err := p.cf.otel.start(ctx, std.err)
	if err != nil {
		return err
	}
	defer stop()
	pol, err := p.pf.load(ctx, std)
	if err != nil {
		return err
	}
	o, err := p.cf.options(pol, p.pf.files(), std.err)
	if err != nil {
		return err
	}
	g, err := gateway.New(gateway.Options{
		Engine: pol.Engine, Config: pol.Config, Sources: pol.Sources,
		NewSession: func(ctx context.Context, asker runtime.Asker) (*runtime.Session, error) {
			o := o
			o.Asker = asker
			return runtime.New(ctx, o)
		},
		Ask: p.mode, Prompter: prompter, Log: std.err, Version: moduleVersion(),
	})
	if err != nil {
		return failed(exitFailed, err)
	}
	swapTo.Store(g)
	std.aborts.add(g.Abort)
	gd := newGuard(pol.Config, pol.Orgs, prompter)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if files := p.pf.watched(); len(files) > 0 && !p.pf.opa.given() {
		// The folders the policy's files are in, as they are now: an
		// edit is read only while each is the same folder (one a call
		// moved away and replaced is not the user's).
		start := folderIDs(p.pf.files())
		go func() {
			reload := func() {
				if now := folderIDs(p.pf.files()); !maps.Equal(now, start) {
					why := "a folder of the policy's files is not the one chock mcp serve started with (moved or replaced), so the files now there are not read"
					fmt.Fprintf(std.err, "chock mcp serve: the policy's files changed, and %s; the running policy stays\n", why)
					g.Kept(why)
					return
				}
				p.pf.reload(watchCtx, g, gd, std)
			}
			if err := gateway.Watch(watchCtx, files, reload, nil); err != nil {
				fmt.Fprintf(std.err, "chock mcp serve: %v; edits of the policy are not followed\n", err)
			}
		}()
	}
	if p.listen == "" {
		if _, tty := isTerminal(std.in); tty {
			fmt.Fprintln(std.err, "chock mcp serve: reading MCP from standard input, a terminal; an agent client starts this command itself (chock connect writes its configuration), or serve --http")
		}
		err := g.ServeStdio(ctx, &mcp.IOTransport{Reader: io.NopCloser(std.in), Writer: nopWriteCloser{std.raw}})
		if err != nil && ctx.Err() == nil {
			return failed(exitFailed, err)
		}
		return nil
	}
	return serveHTTP(ctx, g, p.listen, std)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// serveHTTP serves the gateway on a loopback address until ctx ends.
func serveHTTP(ctx context.Context, g *gateway.Gateway, listen string, std stdio) error {
	token := os.Getenv(tokenEnv)
	made := token == ""
	if made {
		token = gateway.NewToken()
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return failed(exitFailed, err)
	}
	fmt.Fprintf(std.err, "chock mcp serve: listening on http://%s/mcp\n", ln.Addr())
	if made {
		fmt.Fprintf(std.err, "chock mcp serve: token %s (each request carries Authorization: Bearer TOKEN; set %s to choose it)\n", token, tokenEnv)
	} else {
		fmt.Fprintf(std.err, "chock mcp serve: token from $%s\n", tokenEnv)
	}
	srv := &http.Server{Handler: g.Handler(token), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		g.Close("the server stopped: " + err.Error())
		return failed(exitFailed, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	srv.Close()
	if err := g.Close(context.Cause(ctx).Error()); err != nil {
		return failedf(exitFailed, "closing the sessions: %w", err)
	}
	return nil
}

// moduleVersion is chock's module version, as chock version prints it.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// watched are the files the policy is read from, which serve follows:
// --config and every --org, or the --bundle; standard input is not.
func (p *policyFlags) watched() []string {
	files := append([]string{p.config}, p.orgs...)
	if len(p.bundles) > 0 {
		files = p.bundles
	}
	var out []string
	for _, f := range files {
		if f != "-" {
			out = append(out, f)
		}
	}
	if len(out) < len(files) {
		return nil // a policy read in part from standard input cannot be read again
	}
	return out
}

// folderIDs are the device and inode of the folder of each file.
func folderIDs(files []string) map[string][2]uint64 {
	out := map[string][2]uint64{}
	for _, f := range files {
		dir := filepath.Dir(f)
		var st syscall.Stat_t
		if syscall.Stat(dir, &st) == nil {
			out[dir] = [2]uint64{uint64(st.Dev), st.Ino}
		}
	}
	return out
}

// reload reads the policy's files again and swaps it in when it still
// lints clean (or, for a bundle, verifies and prepares) and the guard
// admits it (it widens nothing, or the person accepts it at the
// terminal); otherwise the running policy stays, and why goes to stderr
// and every session's log.
func (p *policyFlags) reload(ctx context.Context, g *gateway.Gateway, gd *guard, std stdio) {
	kept := func(why string) {
		fmt.Fprintf(std.err, "chock mcp serve: the policy's files changed, and %s; the running policy stays\n", why)
		g.Kept(why)
	}
	// requireManaged keeps a policy without the managed ceilings (or the
	// orgs its project expects) out, as loading does.
	requireManaged := func(pol *load.Policy) bool {
		managed, err := load.Managed(load.ManagedDir)
		var need []string
		if err == nil {
			need, err = load.OrgNames(managed, compile.ReadOptions{})
		}
		if err == nil {
			err = load.RequireOrgs(pol, need)
		}
		if err != nil {
			kept(err.Error())
			return false
		}
		return true
	}
	// admit holds an edit that widens (guard): the running policy stays.
	admit := func(cfg *config.Config, orgs []*config.Org) bool {
		err := gd.admit(ctx, cfg, orgs)
		var held *heldError
		if errors.As(err, &held) {
			fmt.Fprintf(std.err, "chock mcp serve: the policy's files changed, and %s; the running policy stays until chock mcp serve restarts (or, with --ask prompt, you accept it at the terminal)\n", held.Error())
			g.Held(held.widenings)
			return false
		}
		return err == nil
	}
	ro, err := p.keys.readOptions()
	if err != nil {
		kept(err.Error())
		return
	}
	if len(p.bundles) > 0 {
		srcs, err := p.readBundles(std)
		if err != nil {
			kept(err.Error())
			return
		}
		pol, err := load.FromBundles(ctx, srcs, ro)
		if err != nil {
			kept(err.Error())
			return
		}
		if pol.Engine.Revision() == g.Revision() || !requireManaged(pol) || !admit(nil, nil) {
			return
		}
		if err := g.Adopt(ctx, pol.Engine, nil, bundleSources(pol.Engine.Meta())); err != nil {
			kept(err.Error())
			return
		}
		fmt.Fprintf(std.err, "chock mcp serve: policy %s swapped in from %s\n", short(g.Revision()), strings.Join(sourceNames(srcs), ", "))
		return
	}
	read := func(names []string) ([]load.Source, error) {
		var out []load.Source
		for _, n := range names {
			b, err := readInput(n, std)
			if err != nil {
				return nil, err
			}
			out = append(out, load.Source{Name: displayName(n), Data: b})
		}
		return out, nil
	}
	configs, err := read([]string{p.config})
	if err != nil {
		kept(err.Error())
		return
	}
	orgs, err := read(p.orgs)
	if err != nil {
		kept(err.Error())
		return
	}
	managed, err := load.Managed(load.ManagedDir)
	if err != nil {
		kept(err.Error())
		return
	}
	pol, ds, err := load.FromSources(ctx, load.Input{Configs: configs, Orgs: append(managed, orgs...), Read: ro})
	if err != nil {
		kept(lintWhy(err, ds))
		return
	}
	if pol.Engine.Revision() == g.Revision() {
		return // the same policy (a save with no change)
	}
	if !requireManaged(pol) || !admit(pol.Config, pol.Orgs) {
		return
	}
	b, err := pol.Output.Bundle(nil)
	if err == nil {
		err = g.Swap(ctx, b, pol.Config, pol.Sources)
	}
	if err != nil {
		kept(err.Error())
		return
	}
	fmt.Fprintf(std.err, "chock mcp serve: policy %s swapped in from %s\n", short(g.Revision()), strings.Join(sourceNames(configs, orgs), ", "))
}

// lintWhy says in one line why a policy did not load: its first errors,
// each at its position.
func lintWhy(err error, ds diag.List) string {
	errs := load.Errors(ds)
	if len(errs) == 0 {
		return err.Error()
	}
	var parts []string
	for i, d := range errs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(errs)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%s: %s", d.Span, d.Message))
	}
	what := "it does not decode"
	if errors.Is(err, load.ErrLint) {
		what = "it has lint errors"
	}
	return what + ": " + strings.Join(parts, "; ")
}

func sourceNames(lists ...[]load.Source) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			out = append(out, s.Name)
		}
	}
	return out
}
