package runtime

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/egress"
	"github.com/chockhq/chock/runtime/sandbox"
	"github.com/chockhq/chock/runtime/sessionlog"
	"github.com/chockhq/chock/runtime/telemetry"
)

// This file is the network fence of a call: the call's own network
// namespace (loopback only) holds the egress proxy's two listeners, and
// each connection on them is decided as net.connect.<host>.

// proxyVars are the variables a call's programs read their proxy from
// (upper and lower case are both read, by different programs).
var proxyVars = map[string]bool{"http_proxy": true, "https_proxy": true, "all_proxy": true, "no_proxy": true, "ftp_proxy": true}

// proxyEnv is env with the proxy variables pointing at the call's own
// listeners: HTTP (plain and CONNECT) for http and https, SOCKS5 with
// names resolved by chock (socks5h) for the rest; what a call runs on its
// own loopback (localhost) is reached directly. Whatever the base
// environment said about a proxy is dropped.
func proxyEnv(env []string) []string {
	out := make([]string, 0, len(env)+8)
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && proxyVars[strings.ToLower(k)] {
			continue
		}
		out = append(out, kv)
	}
	httpProxy := fmt.Sprintf("http://127.0.0.1:%d", sandbox.HTTPProxyPort)
	socks := fmt.Sprintf("socks5h://127.0.0.1:%d", sandbox.SOCKSProxyPort)
	noProxy := "localhost,127.0.0.1,::1"
	for _, kv := range [][2]string{{"HTTP_PROXY", httpProxy}, {"HTTPS_PROXY", httpProxy}, {"ALL_PROXY", socks}, {"NO_PROXY", noProxy}} {
		out = append(out, kv[0]+"="+kv[1], strings.ToLower(kv[0])+"="+kv[1])
	}
	return out
}

// maxNetLines is how many refused connections a call's result lists; the
// rest are counted in one more line (the log has each).
const maxNetLines = 20

// callNet is one call's fence: its proxy, the answers given to asks (each
// holds for its host for the rest of the call) and the refusals for the
// call's result.
type callNet struct {
	s *Session
	c *Call
	// id names whose connections these are in the log: the call's ID, or
	// server:NAME.
	id    string
	proxy *egress.Call
	once  sync.Once

	askMu   sync.Mutex
	mu      sync.Mutex
	answers map[string]string // host → why the answer refuses ("" for yes)
	refused []string
	more    int
}

// serveNet serves the call's listeners: the proxy decides each connection
// under the call's policy and budget (ctx). A background call's listeners
// are closed at once: it outlives its call, so it has no network.
func (s *Session) serveNet(ctx context.Context, c *Call, ls *sandbox.NetListeners) (*callNet, error) {
	defer ls.Close()
	if c.Exec != nil && c.Exec.Background {
		return nil, nil
	}
	n := &callNet{s: s, c: c, id: c.ID, answers: map[string]string{}}
	return n, n.serve(ctx, ls, n.decide)
}

// serve serves the listeners with decide.
func (n *callNet) serve(ctx context.Context, ls *sandbox.NetListeners, decide egress.DeciderFunc) error {
	hl, err := net.FileListener(ls.HTTP)
	if err != nil {
		return err
	}
	sl, err := net.FileListener(ls.SOCKS)
	if err != nil {
		hl.Close()
		return err
	}
	p := &egress.Proxy{Resolver: n.s.opts.Resolver, Log: n.logged}
	n.proxy = p.Serve(ctx, decide, hl, sl)
	return nil
}

// serveServer serves a local MCP server's listeners for the rest of the
// session: a connection to HOST is decided as mcp.S.host.<HOST> at start
// phase where a rule (not a default) of any layer names that action (an
// org's default then caps a project rule as it caps any), and otherwise
// takes network's decision (mcp.S.network's), so a project narrows a
// server to its hosts without changing what the seed grants.
func (s *Session) serveServer(name string, network *eval.Decision, ls *sandbox.NetListeners) (*callNet, error) {
	defer ls.Close()
	n := &callNet{s: s, id: "server:" + name, answers: map[string]string{}}
	decide := func(ctx context.Context, r egress.Request) egress.Verdict {
		host := r.Host
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		act, err := action.MCPHostNS.Build(name, host)
		if err != nil {
			return egress.Verdict{Refusal: fmt.Sprintf("refused by chock: a connection to %s (port %d): the host forms no action: %v", r.Host, r.Port, err)}
		}
		d, err := s.decide(ctx, act, config.Start, n.id)
		if err != nil || d.Unavailable || d.Error != "" {
			// Not decided (a host holding a secret's value is never asked):
			// a deny, never mcp.S.network's answer for a host no rule names.
			return egress.Verdict{Action: s.redact.String(act), Refusal: fmt.Sprintf("refused by chock: %s (port %d): the decision could not be made", s.redact.String(act), r.Port)}
		}
		named := false
		for _, l := range d.Layers {
			named = named || l.Rule != nil
		}
		if !named {
			d = network // no layer's rule names the host: mcp.S.network decides
		}
		v := egress.Verdict{Action: d.Action, Layer: "project", Rule: "default", Allow: d.Decision == config.Allow}
		if l := d.Decider(); l != nil {
			v.Layer, v.Rule = l.Spelling(), l.RuleText()
		}
		if !v.Allow {
			v.Refusal = fmt.Sprintf("refused by chock: %s (port %d) is %s at start%s", act, r.Port, eval.Describe(d), whyOf(d))
		}
		return v
	}
	return n, n.serve(context.Background(), ls, decide)
}

// close stops the call's proxy; every connection is logged when it returns.
func (n *callNet) close() {
	if n != nil {
		n.once.Do(n.proxy.Close)
	}
}

// lines are the call's refused connections, for its result.
func (n *callNet) lines() []string {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	out := append([]string(nil), n.refused...)
	if n.more > 0 {
		out = append(out, fmt.Sprintf("chock refused %d more connections (the session log has each)", n.more))
	}
	return out
}

// decide decides one connection: net.connect.<host> at loop phase, the
// program's .connects declarations, an ask put as the session puts them
// (its answer kept for the host for the rest of the call).
func (n *callNet) decide(ctx context.Context, r egress.Request) egress.Verdict {
	s, c := n.s, n.c
	act, err := action.Connect(r.Host)
	if err != nil {
		return egress.Verdict{Refusal: fmt.Sprintf("refused by chock: a connection to %s (port %d): the host forms no action: %v", r.Host, r.Port, err)}
	}
	d, err := s.decide(ctx, act, config.Loop, c.ID)
	if err != nil {
		return egress.Verdict{Action: act, Refusal: fmt.Sprintf("refused by chock: %s (port %d): the decision could not be made", act, r.Port)}
	}
	v := egress.Verdict{Action: act, Layer: "project", Rule: "default"}
	if l := d.Decider(); l != nil {
		v.Layer, v.Rule = l.Spelling(), l.RuleText()
	}
	if d.Unavailable || d.Error != "" {
		// Not decided (a host holding a secret's value is never asked): a
		// deny, which no declaration turns into an allow (it has no
		// layers to be checked against).
		v.Refusal = fmt.Sprintf("refused by chock: %s (port %d) is no policy could decide it, which is a deny%s", act, r.Port, whyOf(d))
		return v
	}
	if entry := n.declared(act, d); entry != "" {
		v.Allow, v.Layer, v.Rule = true, "project", entry
		return v
	}
	switch d.Decision {
	case config.Allow:
		v.Allow = true
		return v
	case config.Ask:
		if _, nobody := s.opts.Asker.(DenyAsker); nobody {
			v.Refusal = fmt.Sprintf("refused by chock: %s (port %d): %s, and nobody can be asked in this session%s", act, r.Port, eval.Describe(d), whyOf(d))
			return v
		}
		// One question at a time for the call: a second connection to the
		// host waits for the first one's answer, and takes it.
		n.askMu.Lock()
		defer n.askMu.Unlock()
		n.mu.Lock()
		no, answered := n.answers[r.Host]
		n.mu.Unlock()
		if !answered {
			err := s.permit(ctx, d, c.ID)
			no = "the answer was no"
			if err == nil {
				no = ""
			} else if re, ok := err.(*RefusedError); ok {
				no = strings.TrimPrefix(re.Reason, "the policy asks, and ")
			}
			if ctx.Err() == nil {
				n.mu.Lock()
				n.answers[r.Host] = no
				n.mu.Unlock()
			}
		}
		if no == "" {
			v.Allow = true
			v.Rule += ", asked: yes"
			return v
		}
		v.Refusal = fmt.Sprintf("refused by chock: %s (port %d): %s; %s%s", act, r.Port, eval.Describe(d), no, whyOf(d))
		return v
	}
	reason := eval.Describe(d)
	if d.Unavailable {
		reason = "no policy could decide it, which is a deny"
	}
	v.Refusal = fmt.Sprintf("refused by chock: %s (port %d) is %s%s", act, r.Port, reason, whyOf(d))
	return v
}

// whyOf is the deciding rule's .why, as "; why: …", or "".
func whyOf(d *eval.Decision) string {
	if l := d.Decider(); l != nil && l.Rule != nil && l.Rule.Why != "" {
		return "; why: " + l.Rule.Why
	}
	return ""
}

// declared names the .programs entry whose .connects lets the call's
// program reach act ("" when none does), under config.DeclaredConnectRuns.
func (n *callNet) declared(act string, d *eval.Decision) string {
	if n.c == nil || n.c.prog == nil {
		return ""
	}
	a, err := action.ParseAction(act)
	if err != nil {
		return ""
	}
	for _, p := range n.s.opts.Engine.Meta().Programs {
		if p.Name != n.c.prog.Name {
			continue
		}
		for _, decl := range p.Connects {
			pat, err := action.ParsePattern(decl)
			if err != nil || !pat.Matches(a) {
				continue
			}
			verdicts := make([]config.LayerVerdict, len(d.Layers))
			for i, l := range d.Layers {
				verdicts[i].Decision = l.Decision
				if l.Rule != nil {
					verdicts[i].Rule = l.Rule.Pattern
				}
			}
			if config.DeclaredConnectRuns(decl, verdicts) < 0 {
				return fmt.Sprintf("declared by .programs %q .connects %s (%s)", p.Name, decl, p.Span)
			}
		}
	}
	return ""
}

// logged writes a connection's net.connect event, and keeps a refused
// one's line for the call's result.
func (n *callNet) logged(r egress.Record) {
	decision := "deny"
	if r.Allowed {
		decision = "allow"
	}
	fields := []sessionlog.Field{sessionlog.F("call", n.id), sessionlog.F("host", r.Host), sessionlog.F("port", r.Port), sessionlog.F("via", r.Via),
		sessionlog.F("action", r.Action), sessionlog.F("decision", decision), sessionlog.F("layer", r.Layer), sessionlog.F("rule", r.Rule),
		sessionlog.F("sent", r.Sent), sessionlog.F("received", r.Received), sessionlog.F("outcome", r.Outcome)}
	if r.Addr.IsValid() {
		fields = append(fields, sessionlog.F("address", r.Addr.String()))
	}
	if r.Why != "" {
		fields = append(fields, sessionlog.F("why", r.Why))
	}
	n.s.event("net.connect", fields...)
	n.s.spanEvent(n.c, "net.connect", fields)
	if !r.Allowed {
		telemetry.RecordRefusedConnection(context.Background(), telemetry.NamespaceOf(r.Action))
	}
	if r.Outcome == egress.Connected {
		return
	}
	line := r.Why
	switch r.Outcome {
	case egress.RefusedByPolicy:
	case egress.RefusedByAddress:
		line = fmt.Sprintf("refused by chock: %s (port %d): %s", orHost(r), r.Port, r.Why)
	default:
		line = fmt.Sprintf("chock could not connect %s (port %d): %s", orHost(r), r.Port, r.Why)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.refused) < maxNetLines {
		n.refused = append(n.refused, line)
	} else {
		n.more++
	}
}

func orHost(r egress.Record) string {
	if r.Action != "" {
		return r.Action
	}
	if r.Host == "" {
		return "a connection"
	}
	return r.Host
}
