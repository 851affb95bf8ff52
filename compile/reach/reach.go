// Package reach states what a policy grants, org ceilings applied, as a
// deterministic list of self-contained lines: every region of the action
// space the policy allows or asks about (package region: exact, so every
// grant is there, whatever namespace it is in), which calls and servers
// each secret reaches, what each server may do, and every broad grant (a
// program that runs other programs reaches them all). CI pins it with
// chock reach --write and checks it with chock reach --check; chock diff
// compares two policies directly.
package reach

import (
	"fmt"
	"sort"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/chockhq/chock/compile/region"
)

// reporter holds what every part of the report asks.
type reporter struct {
	ev     *native.Evaluator
	shapes []action.Shape
	limit  int
	lines  []string
}

func (r *reporter) add(format string, args ...any) {
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// grant is what a region is granted: its decision in each phase.
type grant struct{ loop, start config.Decision }

// walk maps the regions the focus patterns match (every region when focus
// is nil) to the value value gives each, and returns the map, whose
// coarsest regions the lines name: a line changes only when what it says
// does, not when a rule that changes nothing splits a region.
func walk[V comparable](r *reporter, focus []action.Pattern, value func(w action.Action, g grant) V) (*region.Map[V], error) {
	m := &region.Map[V]{}
	_, err := region.Walk(r.shapes, region.Options{Whole: focus == nil, Focus: focus, Max: r.limit},
		func(reg region.Region, w action.Action) error {
			m.Set(reg, value(w, grant{r.ev.Decide(w, config.Loop).Decision, r.ev.Decide(w, config.Start).Decision}))
			return nil
		})
	return m, err
}

// Report computes the reach of a policy. Each line stands alone, so that a
// line-by-line diff names what is newly granted and what was removed. The
// error is a *region.LimitError when the policy splits the action space
// into more regions than region.Limit allows for its size.
func Report(cfg *config.Config, orgs []*config.Org) ([]string, error) {
	ev := native.New(cfg, orgs)
	n := len(cfg.Secrets)
	for _, l := range ev.Layers {
		n += len(l.Policy.Rules)
	}
	r := &reporter{ev: ev, shapes: append(ev.Shapes(), action.ProgramShape()), limit: region.Limit(n)}

	// Every grant: each region allowed or asked about in either phase.
	grants, err := walk(r, nil, func(_ action.Action, g grant) grant { return g })
	if err != nil {
		return nil, err
	}
	for reg, g := range grants.Regions {
		text := reg.String()
		r.add("grant %s %s", text, phases(g.loop, g.start))
		if what := broad(reg); what != "" {
			r.add("broad: %s %s %s", text, g.loop, what)
		}
	}
	for _, s := range cfg.Secrets {
		if err := r.secret(cfg, s); err != nil {
			return nil, err
		}
	}
	for _, srv := range cfg.Servers {
		if err := r.server(srv); err != nil {
			return nil, err
		}
	}
	for _, p := range cfg.Programs {
		r.program(p)
	}
	// What a call's arguments decide is no region of actions: each rule
	// with .args is a line of its own, in its layer.
	for _, l := range ev.Layers {
		for _, rule := range l.Policy.Rules {
			if rule.Args != nil {
				r.add("args %s %s %s", config.LayerSpelling(l.Kind, l.Name), rule.Key(), rule.Decision)
			}
		}
	}
	sort.Strings(r.lines)
	return dedupe(r.lines), nil
}

// phases says a region's decisions: one word when both phases agree, else
// the loop's with the start's reading.
func phases(loop, start config.Decision) string {
	if loop == start {
		return loop.String()
	}
	return fmt.Sprintf("%s (%s at start)", loop, start)
}

// broad says how a granted region reaches every program: it holds every
// program but a few, or a program that runs other programs.
func broad(reg region.Region) string {
	s, fixed := reg.Segs, action.ExecPath.Fixed()
	k := len(fixed)
	if len(s) < k {
		return ""
	}
	for i, f := range fixed {
		if s[i].Other || s[i].Lit != f {
			return ""
		}
	}
	switch {
	case len(s) == k && reg.More, len(s) > k && s[k].Other:
		return "reaches every program, shells and interpreters among them"
	case len(s) > k && action.RunsOthers(s[k].Lit):
		return fmt.Sprintf("reaches %s, which runs other programs, so every program", s[k].Lit)
	}
	return ""
}

func (r *reporter) secret(cfg *config.Config, s *config.Secret) error {
	if !s.ToPattern.Set {
		return nil
	}
	name := s.Name.Value
	how := fmt.Sprintf("%s %s", s.Bind.Value, s.Variable())
	use := action.Action{"secret", "use", name}
	switch s.ToPattern.Value.Segments()[0] {
	case "exec":
		// The calls it is offered to: the program regions its .to matches,
		// each with the call's own decision.
		given := r.ev.Decide(use, config.Loop).Decision
		offered, granted := false, false
		calls, err := walk(r, []action.Pattern{s.ToPattern.Value}, func(w action.Action, g grant) config.Decision {
			if !action.ExecPath.Has(w) || !s.OfferedToCall(w) {
				return config.Deny
			}
			offered = true
			return g.loop
		})
		if err != nil {
			return err
		}
		for reg, d := range calls.Regions {
			granted = true
			r.add("secret %s -> call %s: secret.use %s at loop; the call itself %s (%s)", name, reg, given, d, how)
		}
		switch {
		case !offered:
			r.add("secret %s -> %s: reaches no program (a call is exec.path.PROGRAM) (%s)", name, s.To.Value, how)
		case !granted:
			r.add("secret %s -> %s: every call it is offered to is denied (%s)", name, s.To.Value, how)
		}
	case "mcp":
		for _, srv := range cfg.Servers {
			if !s.OfferedToServer(srv.Name.Value) {
				continue
			}
			given := r.ev.Decide(use, config.Start).Decision
			note := "given at start"
			if given != config.Allow || s.Bind.Value == config.BindFile {
				note = "not given"
			}
			r.add("secret %s -> server %s: secret.use %s at start, %s (%s)", name, srv.Name.Value, given, note, how)
		}
	default:
		r.add("secret %s -> %s: reaches nothing", name, s.To.Value)
	}
	return nil
}

func (r *reporter) server(srv *config.Server) error {
	name := srv.Name.Value
	decide := func(a string) config.Decision {
		return r.ev.Decide(action.Action(strings.Split(a, ".")), config.Start).Decision
	}
	if srv.URL.Set {
		r.add("server %s: url %s", name, srv.URL.Value)
		if host, err := action.MCPHost(name, srv.URL.Value); err == nil {
			d := decide(host)
			state := "starts"
			if d != config.Allow {
				state = "left out"
			}
			r.add("server %s: host %s %s at start (%s)", name, host, d, state)
		}
	} else if srv.Command.Set {
		var argv []string
		for _, a := range srv.Command.Value {
			argv = append(argv, a.Value)
		}
		r.add("server %s: command %s", name, strings.Join(argv, " "))
		d := decide("mcp." + name + ".network")
		net := "network"
		if d != config.Allow {
			net = "no network"
		}
		r.add("server %s: mcp.%s.network %s at start (%s)", name, name, d, net)
	}
	tools, err := action.ParsePattern("mcp." + name + ".tool.*")
	if err != nil {
		return nil // lint's server-name
	}
	calls, err := walk(r, []action.Pattern{tools}, func(_ action.Action, g grant) config.Decision { return g.loop })
	if err != nil {
		return err
	}
	any := false
	for reg, d := range calls.Regions {
		any = true
		r.add("server %s: tool %s %s", name, reg, d)
	}
	if !any {
		r.add("server %s: no tool allowed or asked", name)
	}
	return nil
}

// program reports a .programs entry: the files it is pinned to, and the
// hidden reach its declared calls give it (the hidden reach): each
// runs inside the program's calls unless the project denies or asks it by
// name or an org ceiling does not allow it, as the run time decides.
func (r *reporter) program(p *config.Program) {
	name := p.Name.Value
	if p.Paths.Set {
		var paths []string
		for _, t := range p.Paths.Value {
			paths = append(paths, t.Value)
		}
		r.add("program %s: pinned to %s", name, strings.Join(paths, ", "))
	}
	for _, c := range p.Calls.Value {
		a, err := action.ParseAction(c.Value)
		if err != nil || !action.ExecPath.Has(a) || len(a) != len(action.ExecPath.Fixed())+1 {
			continue // lint's program-call
		}
		verdict := r.declared(a, c.Value, "allow (declared: it runs inside "+name+"'s calls)", config.DeclaredCallRuns)
		r.add("program %s: calls %s %s", name, c.Value, verdict)
	}
	for _, c := range p.Connects.Value {
		pat, err := action.ParsePattern(c.Value)
		if err != nil || !action.Covers(action.NetConnect.Pattern(), pat) || action.Covers(pat, action.NetConnect.Pattern()) {
			continue // lint's program-connect
		}
		// Decided at one host the pattern matches (its '*'s an "x").
		segs := strings.Split(pat.String(), ".")
		for i, s := range segs {
			if s == "*" {
				segs[i] = "x"
			}
		}
		a, err := action.ParseAction(strings.Join(segs, "."))
		if err != nil {
			continue
		}
		verdict := r.declared(a, c.Value, "allow (declared: only "+name+"'s calls reach them)", config.DeclaredConnectRuns)
		r.add("program %s: connects %s %s", name, c.Value, verdict)
	}
}

// declared is what becomes of declaration decl at action a, as the rule
// runs says: allowed, or refused by the layer that stops it.
func (r *reporter) declared(a action.Action, decl, allowed string, runs func(string, []config.LayerVerdict) int) string {
	res := r.ev.Decide(a, config.Loop)
	switch i := runs(decl, nativeVerdicts(res)); {
	case i == 0:
		return fmt.Sprintf("refused (the project's rule gives %s)", res.Layers[0].Decision)
	case i > 0:
		return fmt.Sprintf("refused (org:%s gives %s)", res.Layers[i].Layer.Name, res.Layers[i].Decision)
	}
	return allowed
}

// nativeVerdicts are a native decision's layers as config.DeclaredCallRuns
// reads them.
func nativeVerdicts(res native.Result) []config.LayerVerdict {
	out := make([]config.LayerVerdict, len(res.Layers))
	for i, l := range res.Layers {
		out[i].Decision = l.Decision
		if l.Rule != nil {
			out[i].Rule = l.Rule.Pattern.String()
		}
	}
	return out
}

func dedupe(lines []string) []string {
	out := lines[:0]
	for i, l := range lines {
		if i == 0 || l != lines[i-1] {
			out = append(out, l)
		}
	}
	return out
}

// Check compares a pinned reach (the lines chock reach --write wrote, #
// comments left out) with what the policy grants now: the grants exactly,
// region by region, and the other lines as lines. Each grant line's
// region is read back, and the pinned grants are walked beside the
// policy's rules, so a grant is named where, and only where, it changed:
// allowing mcp.time.tool.* where mcp.time.tool.now was pinned names
// mcp.time.tool.<not now> and mcp.time.tool.now.* as newly granted, and
// nothing as removed. The tool and broad lines follow from the grants and
// are not compared again. added is what is newly granted or less
// restricted (its line with what it was), removed what is no longer
// granted or more restricted (with what it is now).
func Check(pinned []string, cfg *config.Config, orgs []*config.Org) (added, removed []string, err error) {
	now, err := Report(cfg, orgs)
	if err != nil {
		return nil, nil, err
	}
	var pin region.Map[grant]
	var pinnedLines []string
	n := 0
	for i, l := range pinned {
		text, ok := strings.CutPrefix(l, "grant ")
		if !ok {
			pinnedLines = append(pinnedLines, l)
			continue
		}
		reg, g, err := parseGrant(text)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		pin.Set(reg, g)
		n++
	}
	ev := native.New(cfg, orgs)
	n += len(cfg.Secrets)
	for _, l := range ev.Layers {
		n += len(l.Policy.Rules)
	}
	r := &reporter{ev: ev, shapes: append(ev.Shapes(), action.ProgramShape(), pin.Shape()), limit: region.Limit(n)}
	type change struct{ was, is grant }
	changes, err := walk(r, nil, func(w action.Action, g grant) change {
		if was := pin.Get(w); was != g {
			return change{was, g}
		}
		return change{}
	})
	if err != nil {
		return nil, nil, err
	}
	for reg, c := range changes.Regions {
		if c.is.loop > c.was.loop || c.is.loop == c.was.loop && c.is.start > c.was.start {
			added = append(added, fmt.Sprintf("grant %s %s (was %s)", reg, phases(c.is.loop, c.is.start), phases(c.was.loop, c.was.start)))
		} else {
			removed = append(removed, fmt.Sprintf("grant %s %s (now %s)", reg, phases(c.was.loop, c.was.start), phases(c.is.loop, c.is.start)))
		}
	}
	var nowLines []string
	for _, l := range now {
		if !strings.HasPrefix(l, "grant ") {
			nowLines = append(nowLines, l)
		}
	}
	keep := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if !derived(l) {
				out = append(out, l)
			}
		}
		return out
	}
	a, rm := Diff(keep(pinnedLines), keep(nowLines))
	return append(added, a...), append(removed, rm...), nil
}

// derived says whether a line follows from the grants: a broad grant, or
// a server's tools.
func derived(line string) bool {
	if strings.HasPrefix(line, "broad: ") {
		return true
	}
	rest, ok := strings.CutPrefix(line, "server ")
	if !ok {
		return false
	}
	_, what, ok := strings.Cut(rest, ": ")
	return ok && (strings.HasPrefix(what, "tool ") || strings.HasPrefix(what, "no tool "))
}

// parseGrant reads what follows "grant " in a line Report wrote: a region
// and its decisions, as phases writes them ("allow", or "ask (deny at
// start)").
func parseGrant(text string) (region.Region, grant, error) {
	var g grant
	bad := func(format string, args ...any) (region.Region, grant, error) {
		return region.Region{}, g, fmt.Errorf("grant %q: %s", text, fmt.Sprintf(format, args...))
	}
	rest, both := text, true
	if head, ok := strings.CutSuffix(rest, " at start)"); ok {
		i := strings.LastIndex(head, " (")
		if i < 0 {
			return bad("no decision at start")
		}
		if g.start, ok = config.ParseDecision(head[i+2:]); !ok {
			return bad("%q is no decision", head[i+2:])
		}
		rest, both = head[:i], false
	}
	i := strings.LastIndex(rest, " ")
	if i < 0 {
		return bad("no decision")
	}
	var ok bool
	if g.loop, ok = config.ParseDecision(rest[i+1:]); !ok {
		return bad("%q is no decision", rest[i+1:])
	}
	if both {
		g.start = g.loop // one word: both phases agree
	}
	reg, err := region.Parse(rest[:i])
	if err != nil {
		return bad("%v", err)
	}
	return reg, g, nil
}

// Diff compares a pinned reach with the current one: the lines newly
// granted (in now, not in pinned) and the lines removed.
func Diff(pinned, now []string) (added, removed []string) {
	in := func(list []string) map[string]bool {
		m := make(map[string]bool, len(list))
		for _, l := range list {
			m[l] = true
		}
		return m
	}
	p, n := in(pinned), in(now)
	for _, l := range now {
		if !p[l] {
			added = append(added, l)
		}
	}
	for _, l := range pinned {
		if !n[l] {
			removed = append(removed, l)
		}
	}
	return added, removed
}
