package runtime

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/mcpconn"
	"github.com/chockhq/chock/runtime/sandbox"
	"github.com/chockhq/chock/runtime/sessionlog"
	"go.opentelemetry.io/otel/trace"
)

// Call is one brokered action as it passes the chain.
type Call struct {
	// ID is "c<n>" in the session; nested decisions name it as parent.
	ID     string
	Tool   string // "exec", "fetch_url" or "mcp"
	Action string
	// Timeout bounds the call (0: the session's default).
	Timeout time.Duration
	Exec    *ExecRequest
	Fetch   *FetchRequest
	MCP     *MCPRequest

	// Set by the time limit for the action: the call's one budget.
	budget time.Duration
	// Set by the secrets interceptor for the action to use: the
	// environment added, and file-bound secrets (written inside the
	// sandbox, on a tmpfs at fileDir).
	env     []string
	files   []sandbox.SecretFile
	fileDir string
	// filePlan is the file rules' part of the call's sandbox (files.go).
	filePlan *filePlan
	cleanup  []func()
	// prog is the program an exec call runs, or identity why it runs none.
	prog     *sandbox.Resolved
	identity error
	// nested counts the call's nested execs logged.
	nested atomic.Int32
	// net is the call's network fence (its egress proxy), once started.
	net *callNet
	// span is the call's execute_tool span.
	span trace.Span
}

// Result is what a call produced, redacted.
type Result struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
	Body     string `json:"body,omitempty"`
	// Content is an MCP tool's answer as text: untrusted, redacted.
	Content    string `json:"content,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
	Status     int    `json:"status,omitempty"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	Background bool   `json:"background,omitempty"`
	PID        int    `json:"pid,omitempty"`
	// Network has one line per connection of the call chock refused,
	// naming the rule that refused it (redacted).
	Network []string `json:"network,omitempty"`
}

// Handler runs a call.
type Handler func(ctx context.Context, c *Call) (*Result, error)

// Interceptor runs around a call: it may inspect it, refuse it (return an
// error without calling next), or wrap what next returns.
type Interceptor func(ctx context.Context, c *Call, next Handler) (*Result, error)

// Chain wraps h in the interceptors, the first outermost.
func Chain(h Handler, ics ...Interceptor) Handler {
	for i := len(ics) - 1; i >= 0; i-- {
		ic, next := ics[i], h
		h = func(ctx context.Context, c *Call) (*Result, error) { return ic(ctx, c, next) }
	}
	return h
}

// RefusedError is a call the policy, the asker, or a missing secret
// refused. It carries the explanation of the deciding decision.
type RefusedError struct {
	Action      string
	Reason      string
	Explanation *eval.Explanation
	// stale says the sandbox's file plan was outrun by the file system:
	// planned again, the call may start.
	stale bool
}

func (e *RefusedError) Error() string { return fmt.Sprintf("refused %s: %s", e.Action, e.Reason) }

// Run brokers one call through the chain.
func (s *Session) Run(ctx context.Context, c *Call) (res *Result, err error) {
	c.ID = fmt.Sprintf("c%d", s.seq.Add(1))
	start := time.Now()
	ctx = s.startCall(ctx, c)
	defer func() { s.endCall(ctx, c, start, res, err) }()
	if c.Action == "" {
		a, err := callAction(c)
		if err != nil {
			return nil, err
		}
		c.Action = a
	}
	if c.Exec != nil {
		a, r, identity, err := s.program(c.Exec)
		if err != nil {
			return nil, err
		}
		c.identity = identity
		if identity == nil {
			c.Action, c.prog = a, r
		}
	}
	// The call decides on the policy it started on, to its end.
	ctx = context.WithValue(ctx, pinKey{}, s.opts.Engine.Pinned())
	return s.chain(ctx, c)
}

// holdsSecret says whether an action holds a secret's value in any form
// the session masks: such an action (a tool name a server chose, say) is
// refused without being asked, so it reaches no decision log.
func (s *Session) holdsSecret(act string) bool { return s.redact.String(act) != act }

// pinKey is the context key of the policy a call is pinned to.
type pinKey struct{}

// engine is the engine a decision asks: the policy of the call ctx is
// in, or the session's.
func (s *Session) engine(ctx context.Context) *eval.Engine {
	if e, ok := ctx.Value(pinKey{}).(*eval.Engine); ok {
		return e
	}
	return s.opts.Engine
}

// program is the one place an exec call's program is worked out: the file
// its name means on the session's PATH (a path must be that same file, a
// symlink is decided under its target's name) and the action it is
// decided under. identity says why argv[0] runs no program; err is a name
// that cannot form an action.
func (s *Session) program(r *ExecRequest) (act string, prog *sandbox.Resolved, identity, err error) {
	res, identity := s.programs.Resolve(r.Argv[0], r.Dir)
	if identity != nil {
		return "", nil, identity, nil
	}
	act, err = action.Exec(res.Name)
	if err != nil {
		return "", nil, nil, err
	}
	return act, &res, nil, nil
}

func callAction(c *Call) (string, error) {
	switch {
	case c.Exec != nil:
		if len(c.Exec.Argv) == 0 {
			return "", errors.New("exec: empty argv")
		}
		return action.Exec(c.Exec.Argv[0])
	case c.Fetch != nil:
		return action.Fetch(c.Fetch.URL)
	case c.MCP != nil:
		if c.MCP.Server == "" || c.MCP.Tool == "" {
			return "", errors.New("mcp: a call names a server and a tool")
		}
		return action.MCPTool(c.MCP.Server, c.MCP.Tool)
	}
	return "", errors.New("a call names no tool")
}

// audit logs the call and its result (or refusal), redacted.
func (s *Session) audit(ctx context.Context, c *Call, next Handler) (*Result, error) {
	fields := []sessionlog.Field{sessionlog.F("call", c.ID), sessionlog.F("tool", c.Tool), sessionlog.F("action", c.Action)}
	if c.Exec != nil {
		fields = append(fields, sessionlog.F("argv", c.Exec.Argv), sessionlog.F("background", c.Exec.Background))
	}
	if c.Fetch != nil {
		fields = append(fields, sessionlog.F("url", c.Fetch.URL))
	}
	if c.MCP != nil {
		fields = append(fields, sessionlog.F("server", c.MCP.Server), sessionlog.F("name", c.MCP.Tool), sessionlog.F("arguments", string(c.MCP.Arguments)))
	}
	if err := s.event("tool.call", fields...); err != nil {
		return nil, fmt.Errorf("session log: %w", err)
	}
	res, err := next(ctx, c)
	out := []sessionlog.Field{sessionlog.F("call", c.ID)}
	var refused *RefusedError
	switch {
	case errors.As(err, &refused):
		out = append(out, sessionlog.F("outcome", "refused"), sessionlog.F("reason", refused.Reason))
	case err != nil:
		out = append(out, sessionlog.F("outcome", "error"), sessionlog.F("error", s.redact.String(err.Error())))
	case c.MCP != nil:
		out = append(out, sessionlog.F("outcome", "done"), sessionlog.F("content", res.Content), sessionlog.F("is_error", res.IsError))
	default:
		out = append(out, sessionlog.F("outcome", "done"), sessionlog.F("exit_code", res.ExitCode), sessionlog.F("timed_out", res.TimedOut),
			sessionlog.F("stdout", res.Stdout), sessionlog.F("stderr", res.Stderr))
		if len(res.Network) > 0 {
			out = append(out, sessionlog.F("network", res.Network))
		}
		if c.Fetch != nil {
			out = append(out, sessionlog.F("status", res.Status), sessionlog.F("body", res.Body))
		}
	}
	if lerr := s.event("tool.result", out...); lerr != nil && err == nil {
		err = fmt.Errorf("session log: %w", lerr)
	}
	if err != nil && refused == nil {
		err = errors.New(s.redact.String(err.Error())) // no value in an error either
	}
	return res, err
}

// timeLimit bounds the call by its one budget: the time limit it names,
// or else its tool's (an MCP tool call's is MCP.CallTimeout, which
// --mcp-call-timeout sets; a program's or a fetch's is CallTimeout).
func (s *Session) timeLimit(ctx context.Context, c *Call, next Handler) (*Result, error) {
	d := c.Timeout
	switch {
	case d > 0:
	case c.MCP != nil:
		d = s.opts.MCP.CallTimeout
	default:
		d = s.opts.CallTimeout
	}
	if c.Exec != nil && c.Exec.Background {
		return next(ctx, c) // a background command outlives the call by design
	}
	c.budget = d
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return next(ctx, c)
}

// decide asks the policy and logs the decision; parent names the call a
// nested decision belongs to.
//
// A decision no policy could make (eval.ErrUnavailable: a remote OPA that
// does not answer, a bundle service with no policy) is a deny, logged as
// one with the reason. A decision under another revision than the last
// one logs the change first.
func (s *Session) decide(ctx context.Context, act string, phase config.Phase, parent string) (*eval.Decision, error) {
	return s.decideArgs(ctx, act, nil, phase, parent)
}

// callArgs are the arguments of a call of argv as the rules with .args
// read them: argv after argv[0], and when argv[0] is not the name the
// program is decided under (a symlink git-push to git, exec -a), an
// unknown argument first: a multi-call program (git, busybox) picks what
// it does from argv[0], so git-push is git push.
func callArgs(argv []string, named bool) []string {
	args := make([]string, 0, len(argv))
	if !named {
		args = append(args, action.Unknown)
	}
	return append(args, argv[1:]...)
}

// decideArgs is decide for a program's call with its arguments (argv
// after argv[0]), which the rules with .args match.
func (s *Session) decideArgs(ctx context.Context, act string, args []string, phase config.Phase, parent string) (*eval.Decision, error) {
	var d *eval.Decision
	var err error
	if slices.ContainsFunc(args, s.holdsSecret) {
		// An argument holding a secret's value is not sent to the policy
		// (a remote OPA, its decision log): it is decided as an argument
		// not known, which every deny's and ask's words match.
		args = slices.Clone(args)
		for i, a := range args {
			if s.holdsSecret(a) {
				args[i] = action.Unknown
			}
		}
	}
	if s.holdsSecret(act) {
		// It is not asked: no decision log, no remote OPA sees it.
		err = fmt.Errorf("%w: the action holds a secret's value, so it is not asked of the policy", eval.ErrUnavailable)
	} else {
		d, err = s.engine(ctx).DecideArgs(ctx, act, args, phase)
	}
	if errors.Is(err, eval.ErrUnavailable) {
		d, err = &eval.Decision{Action: s.redact.String(act), Phase: phase, Decision: config.Deny, Error: s.redact.String(err.Error()), Unavailable: true}, nil
	}
	if err != nil {
		return nil, err
	}
	if d.Revision != "" {
		if prev := s.revision.Swap(&d.Revision); prev != nil && *prev != d.Revision {
			if err := s.event("policy.revision", sessionlog.F("from", *prev), sessionlog.F("to", d.Revision)); err != nil {
				return nil, fmt.Errorf("session log: %w", err)
			}
		}
	}
	rule, layer := "default", "project"
	if l := d.Decider(); l != nil {
		layer, rule = l.Spelling(), l.RuleText()
	} else if d.Unavailable {
		rule, layer = "none", "none"
	}
	fields := []sessionlog.Field{sessionlog.F("action", act), sessionlog.F("phase", phase.String()),
		sessionlog.F("decision", d.Decision.String()), sessionlog.F("layer", layer), sessionlog.F("rule", rule), sessionlog.F("parent", parent)}
	if d.ID != "" {
		fields = append(fields, sessionlog.F("decision_id", d.ID))
	}
	if d.Error != "" {
		fields = append(fields, sessionlog.F("error", d.Error))
	}
	// The hint is for the person reading the log (hidden from every call),
	// never for the agent.
	if d.Decision != config.Allow && !d.Unavailable {
		if x := eval.Explain(d, s.opts.Config); x.Hint != nil && x.Hint.Text != "" {
			fields = append(fields, sessionlog.F("hint", x.Hint.Text))
		}
	}
	if err := s.event("decision", fields...); err != nil {
		return nil, fmt.Errorf("session log: %w", err)
	}
	// An ask at loop phase is recorded when it is answered (permit).
	if d.Decision != config.Ask || phase == config.Start {
		s.guardrail(ctx, d, parent, d.Decision == config.Allow, "")
	}
	return d, nil
}

// permit turns a decision into go or no-go, asking where the policy asks.
func (s *Session) permit(ctx context.Context, d *eval.Decision, parent string) error {
	if d.Decision == config.Allow {
		return nil
	}
	x := eval.Explain(d, s.opts.Config)
	switch d.Decision {
	case config.Ask:
		ok, err := s.opts.Asker.Ask(ctx, Question{Action: d.Action, Phase: d.Phase, Explanation: x})
		answer := "no"
		if err == nil && ok {
			answer = "yes"
		}
		s.event("ask", sessionlog.F("action", d.Action), sessionlog.F("answer", answer), sessionlog.F("parent", parent))
		s.guardrail(ctx, d, parent, answer == "yes", answer)
		if err != nil {
			return &RefusedError{Action: d.Action, Reason: "ask could not be put: " + err.Error(), Explanation: x}
		}
		if !ok {
			return &RefusedError{Action: d.Action, Reason: "the policy asks, and the answer was no", Explanation: x}
		}
		return nil
	}
	reason := eval.Describe(d)
	switch {
	case d.Unavailable:
		reason = d.Error
	case d.Error != "":
		reason = "malformed action: " + d.Error
	}
	return &RefusedError{Action: d.Action, Reason: reason, Explanation: x}
}

// policy asks exec.path.<program> or net.fetch.<host> of OPA. A program
// argv[0] does not name is refused before anything is asked.
func (s *Session) policy(ctx context.Context, c *Call, next Handler) (*Result, error) {
	if c.identity != nil {
		return nil, &RefusedError{Action: c.Action, Reason: c.identity.Error()}
	}
	var args []string
	if c.Exec != nil && len(c.Exec.Argv) > 0 {
		args = callArgs(c.Exec.Argv, c.prog != nil && path.Base(c.Exec.Argv[0]) == c.prog.Name)
	}
	d, err := s.decideArgs(ctx, c.Action, args, config.Loop, c.ID)
	if err != nil {
		return nil, err
	}
	if err := s.permit(ctx, d, c.ID); err != nil {
		if c.MCP != nil {
			host := ""
			if sv := s.server(c.MCP.Server); sv != nil {
				host = sv.status.Host
			}
			s.logExchange(mcpconn.Exchange{Server: c.MCP.Server, Host: host, About: c.MCP.Tool, Outcome: mcpconn.RefusedByPolicy})
		}
		return nil, err
	}
	return next(ctx, c)
}

// secrets gives the call the secrets the policy offers it, each asked under
// secret.use.NAME; a refused or missing one refuses the call.
func (s *Session) secrets(ctx context.Context, c *Call, next Handler) (*Result, error) {
	defer func() {
		for _, f := range c.cleanup {
			f()
		}
	}()
	if c.Exec == nil || c.Exec.Background {
		// Only a program is given secrets; a background command outlives
		// its call, and a grant would outlive it too.
		return next(ctx, c)
	}
	if !c.prog.OnPath {
		// A program that is not what its name means on the session's PATH
		// (a pinned file elsewhere) is never given a secret.
		return next(ctx, c)
	}
	g := grantee{target: eval.Target{Action: c.Action}, action: c.Action, phase: config.Loop, parent: c.ID}
	grants, refused, err := s.grants(ctx, g)
	if err != nil {
		return nil, err
	}
	if refused != nil {
		refused.Action = c.Action
		return nil, refused
	}
	for _, gr := range grants {
		switch gr.sec.Bind {
		case config.BindEnv:
			c.env = append(c.env, gr.sec.As+"="+gr.value)
		case config.BindFile:
			path, err := s.secretFileFor(c, gr.sec.Name, gr.value)
			if err != nil {
				return nil, fmt.Errorf("secret %s: writing its file: %w", gr.sec.Name, err)
			}
			c.env = append(c.env, gr.sec.As+"="+path)
		}
		if err := s.give(g, gr); err != nil {
			return nil, err
		}
	}
	return next(ctx, c)
}

// redaction makes sure no held value leaves in the result or an error.
// The action itself already streams its output through the redactor; this
// catches everything else.
func (s *Session) redaction(ctx context.Context, c *Call, next Handler) (*Result, error) {
	res, err := next(ctx, c)
	if res != nil {
		res.Stdout = s.redact.String(res.Stdout)
		res.Stderr = s.redact.String(res.Stderr)
		res.Body = s.redact.String(res.Body)
		res.Content = s.redact.String(res.Content)
		for i, l := range res.Network {
			res.Network[i] = s.redact.String(l)
		}
	}
	if err != nil {
		var r *RefusedError
		if errors.As(err, &r) {
			r.Reason = s.redact.String(r.Reason) // it may quote the agent's argv or dir
		} else {
			err = errors.New(s.redact.String(err.Error()))
		}
	}
	return res, err
}

// perform runs the action, once the events that led to it are on disk.
func (s *Session) perform(ctx context.Context, c *Call) (*Result, error) {
	if err := s.log.Flush(); err != nil {
		return nil, fmt.Errorf("session log: %w", err)
	}
	switch {
	case c.Exec != nil:
		return s.runExec(ctx, c)
	case c.Fetch != nil:
		return s.runFetch(ctx, c)
	case c.MCP != nil:
		return s.runMCP(ctx, c)
	}
	return nil, errors.New("a call names no tool")
}

// MinimalEnv keeps the few variables a program needs to run from env;
// nothing else of this process (its tokens above all) reaches a call.
func MinimalEnv(env []string) []string {
	keep := map[string]bool{"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "LANG": true, "LC_ALL": true, "TZ": true, "TMPDIR": true, "TERM": true}
	var out []string
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && keep[k] {
			out = append(out, kv)
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}
