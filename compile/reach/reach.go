// Package reach states what a policy grants, org ceilings applied, as a
// deterministic list of self-contained lines: which calls and servers each
// secret reaches, what each server may do, and every broad grant (a
// program that runs other programs reaches them all). CI pins it with
// chock reach --write and checks it with chock reach --check.
package reach

import (
	"fmt"
	"sort"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/lint"
	"github.com/chockhq/chock/compile/native"
)

// any is a segment no rule names, standing for "any other" in a wildcard.
const anySeg = "\x00any"

// Report computes the reach of a policy. Each line stands alone, so that a
// line-by-line diff names what is newly granted and what was removed.
func Report(cfg *config.Config, orgs []*config.Org) []string {
	ev := native.New(cfg, orgs)
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	decide := func(segs []string, phase config.Phase) config.Decision {
		return ev.Decide(action.Action(segs), phase).Decision
	}
	act := func(s string) []string { return strings.Split(s, ".") }

	for _, s := range cfg.Secrets {
		if !s.ToPattern.Set {
			continue
		}
		use := act("secret.use." + s.Name.Value)
		how := fmt.Sprintf("%s %s", s.Bind.Value, s.Variable())
		segs := s.ToPattern.Value.Segments()
		switch segs[0] {
		case "exec":
			call := "call " + s.To.Value
			if !s.ToPattern.Value.IsLiteral() {
				call = "calls matching " + s.To.Value
			}
			add("secret %s -> %s: secret.use %s at loop; the call itself %s (%s)", s.Name.Value, call,
				decide(use, config.Loop), callDecision(ev, s.ToPattern.Value), how)
		case "mcp":
			for _, srv := range cfg.Servers {
				ns, err := action.ParsePattern("mcp." + srv.Name.Value + ".*")
				if err != nil || !action.Covers(s.ToPattern.Value, ns) {
					continue
				}
				given := decide(use, config.Start)
				note := "given at start"
				if given != config.Allow || s.Bind.Value == config.BindFile {
					note = "not given"
				}
				add("secret %s -> server %s: secret.use %s at start, %s (%s)", s.Name.Value, srv.Name.Value, given, note, how)
			}
		default:
			add("secret %s -> %s: reaches nothing", s.Name.Value, s.To.Value)
		}
	}

	for _, srv := range cfg.Servers {
		name := srv.Name.Value
		if srv.URL.Set {
			add("server %s: url %s", name, srv.URL.Value)
			if host, err := action.MCPHost(name, srv.URL.Value); err == nil {
				d := decide(act(host), config.Start)
				state := "starts"
				if d != config.Allow {
					state = "left out"
				}
				add("server %s: host %s %s at start (%s)", name, host, d, state)
			}
		} else if srv.Command.Set {
			var argv []string
			for _, a := range srv.Command.Value {
				argv = append(argv, a.Value)
			}
			add("server %s: command %s", name, strings.Join(argv, " "))
			d := decide(act("mcp."+name+".network"), config.Start)
			net := "network"
			if d != config.Allow {
				net = "no network"
			}
			add("server %s: mcp.%s.network %s at start (%s)", name, name, d, net)
		}
		for _, t := range toolPatterns(cfg, orgs, name) {
			segs := t.Segments()
			probe := append([]string(nil), segs...)
			if last := len(segs) - 1; t.Kind(last) == action.Trailing {
				probe[last] = anySeg
			}
			for i := range probe {
				if probe[i] == "*" {
					probe[i] = anySeg
				}
			}
			if d := decide(probe, config.Loop); d != config.Deny {
				add("server %s: tool %s %s", name, t, d)
			}
		}
		other := decide([]string{"mcp", name, "tool", anySeg}, config.Loop)
		add("server %s: any other tool %s", name, other)
	}

	lines = append(lines, broad(cfg, ev)...)
	sort.Strings(lines)
	return dedupe(lines)
}

// callDecision is the decision for calls a secret's exec pattern matches:
// exact for a literal, "any other" for a wildcard.
func callDecision(ev *native.Evaluator, p action.Pattern) string {
	segs := append([]string(nil), p.Segments()...)
	for i := range segs {
		if segs[i] == "*" {
			segs[i] = anySeg
		}
	}
	return ev.Decide(action.Action(segs), config.Loop).Decision.String()
}

// toolPatterns are the tool patterns of any layer that can match a tool
// of server name, with the server segment filled in.
func toolPatterns(cfg *config.Config, orgs []*config.Org, name string) []action.Pattern {
	tools := action.MustPattern("mcp." + name + ".tool.*")
	seen := map[string]bool{}
	var out []action.Pattern
	consider := func(rules []*config.Rule) {
		for _, r := range rules {
			segs := r.Pattern.Segments()
			if len(segs) < 4 || segs[0] != "mcp" || !action.Overlaps(r.Pattern, tools) {
				continue
			}
			inst := append([]string(nil), segs...)
			inst[1], inst[2] = name, "tool"
			p, err := action.ParsePattern(strings.Join(inst, "."))
			if err != nil || seen[p.String()] {
				continue
			}
			seen[p.String()] = true
			out = append(out, p)
		}
	}
	consider(cfg.Policy.Rules)
	for _, o := range orgs {
		consider(o.Policy.Rules)
	}
	sort.Slice(out, func(i, j int) bool { return action.Compare(out[i], out[j]) < 0 })
	return out
}

// broad lists the effective grants that reach every program.
func broad(cfg *config.Config, ev *native.Evaluator) []string {
	var out []string
	for _, r := range cfg.Policy.Rules {
		if r.Decision == config.Deny {
			continue
		}
		segs := r.Pattern.Segments()
		if segs[0] != "exec" || len(segs) < 2 || (segs[1] != "path" && segs[1] != "*") {
			continue
		}
		every := len(segs) == 2 || segs[2] == "*"
		probe := []string{"exec", "path", anySeg}
		what := "every program, shells and interpreters among them"
		if !every {
			if !lint.RunsOthers(segs[2]) {
				continue
			}
			probe = append([]string(nil), segs...)
			for i := range probe {
				if probe[i] == "*" {
					probe[i] = anySeg
				}
			}
			what = segs[2] + " runs other programs, so every program"
		}
		d := ev.Decide(action.Action(probe), config.Loop).Decision
		if d == config.Deny {
			continue // an org ceiling (or a more specific rule) takes it back
		}
		out = append(out, fmt.Sprintf("broad: %s %s reaches %s", r.Pattern, d, what))
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
