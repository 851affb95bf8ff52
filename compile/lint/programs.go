package lint

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
)

// ProgramCall is the action a .calls entry declares, or why it declares
// none: it must be one concrete exec.path.<name>, never a wildcard.
func ProgramCall(s string) (action.Action, string) {
	a, err := action.ParseAction(s)
	if err != nil {
		if p, perr := action.ParsePattern(s); perr == nil && !p.IsLiteral() {
			return nil, fmt.Sprintf("%q is a pattern; a declared call names one program, such as exec.path.git-remote-https", s)
		}
		return nil, fmt.Sprintf("%q is not an action: %v", s, err)
	}
	if len(a) != 3 || a[0] != "exec" || a[1] != "path" {
		return nil, fmt.Sprintf("%q is not exec.path.<program>: a program declares the programs it runs", s)
	}
	return a, ""
}

// programs checks .programs: names, paths, declared calls, and that the
// project and every org let each declared call run.
func (l *linter) programs(c *config.Config) {
	seen := map[string]*config.Program{}
	for _, p := range c.Programs {
		name := p.Name.Value
		if _, err := action.Exec(name); err != nil || strings.ContainsAny(name, "/*") || name != filepath.Base(name) {
			l.add(p.Name.Span, CodeProgramName, fmt.Sprintf("%q is not a program name: exec.path.<name> must name one program", name),
				"write the program's file name, such as \"gh\"; its files go in .paths")
		} else if prev, dup := seen[name]; dup {
			l.add(p.Name.Span, CodeProgramDuplicate, fmt.Sprintf("program %q is pinned twice (first at %s)", name, at(prev.Name.Span)),
				"list all of its files in one entry's .paths")
		} else {
			seen[name] = p
		}
		if p.Paths.Set && len(p.Paths.Value) == 0 {
			l.add(p.Paths.Span, CodeProgramPath, fmt.Sprintf("program %q is pinned to no file, so it can never run", name),
				"list the absolute files it may run as, such as \"/usr/bin/gh\", or leave .paths out")
		}
		for _, path := range p.Paths.Value {
			if !filepath.IsAbs(path.Value) || filepath.Clean(path.Value) != path.Value {
				l.add(path.Span, CodeProgramPath, fmt.Sprintf("%q is not a clean absolute path", path.Value),
					"pin a program to absolute files, such as \"/usr/bin/gh\"")
			}
		}
		declarations(l, p.Calls.Value, ProgramCall, CodeProgramCall, "declare each program it runs by its own name",
			func(call config.Text, a action.Action) { l.declaredCall(p, call, a) })
		declarations(l, p.Connects.Value, ProgramConnect, CodeProgramConnect, "declare the hosts it reaches, such as net.connect.org.pypi.*",
			func(conn config.Text, pat action.Pattern) { l.declaredConnect(p, conn, pat) })
	}
}

// declarations checks each entry of a .programs list (its .calls or
// .connects): one parse cannot read is reported under code with hint, and
// each one it reads is given to then.
func declarations[T any](l *linter, list []config.Text, parse func(string) (T, string), code, hint string, then func(config.Text, T)) {
	for _, t := range list {
		v, why := parse(t.Value)
		if why != "" {
			l.add(t.Span, code, why, hint)
			continue
		}
		then(t, v)
	}
}

// ProgramConnect is the pattern a .connects entry declares, or why it
// declares none: a net.connect pattern narrower than the namespace.
func ProgramConnect(s string) (action.Pattern, string) {
	p, err := action.ParsePattern(s)
	if err != nil {
		return action.Pattern{}, fmt.Sprintf("%q is not a pattern: %v", s, err)
	}
	ns := action.NetConnect.Pattern()
	switch {
	case !action.Covers(ns, p):
		return action.Pattern{}, fmt.Sprintf("%q is not in net.connect.<host>: a program declares the hosts its calls reach", s)
	case action.Covers(p, ns):
		return action.Pattern{}, fmt.Sprintf("%q is every host: a declaration names the hosts a program reaches, such as net.connect.org.pypi.*", s)
	}
	return p, ""
}

// declaredConnect reports a declared connection the project refuses by a
// rule as narrow, or an org ceiling does not allow, at an action the
// pattern matches (config.DeclaredConnectRuns).
func (l *linter) declaredConnect(p *config.Program, conn config.Text, pat action.Pattern) {
	if a := witness(pat, pat); a != nil {
		l.declared(p, conn, a, pat.String(), CodeProgramConnectDenied, config.DeclaredConnectRuns)
	}
}

// declaredCall reports a declared call the project denies by a rule, or an
// org ceiling does not allow: a declaration allows like a project rule,
// so it cannot beat either.
func (l *linter) declaredCall(p *config.Program, call config.Text, a action.Action) {
	l.declared(p, call, a, a.String(), CodeProgramCallDenied, config.DeclaredCallRuns)
}

// declared reports declaration decl of p (written at t) that the layer
// runs names stops at action a.
func (l *linter) declared(p *config.Program, t config.Text, a action.Action, decl, code string, runs func(string, []config.LayerVerdict) int) {
	res := l.evaluator(a).Decide(a, config.Loop)
	verdicts := make([]config.LayerVerdict, len(res.Layers))
	for i, lr := range res.Layers {
		verdicts[i].Decision = lr.Decision
		if lr.Rule != nil {
			verdicts[i].Rule = lr.Rule.Pattern.String()
		}
	}
	switch i := runs(decl, verdicts); {
	case i == 0:
		lr := res.Layers[0]
		l.add(t.Span, code, fmt.Sprintf("program %q declares %s, which the project's rule %q at %s makes %s", p.Name.Value, decl, lr.Rule.Pattern, at(lr.Rule.Span), lr.Decision),
			"drop the declaration, or the rule")
	case i > 0:
		lr := res.Layers[i]
		where := "its default"
		if lr.Rule != nil {
			where = fmt.Sprintf("%q at %s", lr.Rule.Pattern, at(lr.Rule.Span))
		}
		l.add(t.Span, code, fmt.Sprintf("program %q declares %s, which the org ceiling %q makes %s by %s", p.Name.Value, decl, lr.Layer.Name, lr.Decision, where),
			"a declaration cannot widen an org ceiling; only the org's owners can permit it")
	}
}

// dottedVariants warns at a deny of exec.path.P where a dotted name of
// the same program family (exec.path.P.12: python3.12 beside python3) is
// allowed: an agent runs the program under that name instead.
func (l *linter) dottedVariants(layer *layer) {
	// The allows that could overlap some exec.path.P.*, by their third
	// segment when it is a literal (they can meet only P's family), or
	// for every P; in source order.
	type allowRule struct {
		order int
		rule  *config.Rule
	}
	var byProgram map[string][]allowRule
	var anyProgram []allowRule
	candidates := func() {
		byProgram = map[string][]allowRule{}
		every := action.MustPattern("exec.path.*.*")
		for i, allow := range l.layers[0].policy.Rules {
			if allow.Decision != config.Allow || !action.Overlaps(allow.Pattern, every) {
				continue
			}
			if s := allow.Pattern.Segments(); len(s) >= 3 && allow.Pattern.Kind(2) == action.Literal {
				byProgram[s[2]] = append(byProgram[s[2]], allowRule{i, allow})
			} else {
				anyProgram = append(anyProgram, allowRule{i, allow})
			}
		}
	}
	for _, r := range layer.policy.Rules {
		s := r.Pattern.Segments()
		if r.Decision != config.Deny || len(s) != 3 || s[0] != "exec" || s[1] != "path" || !r.Pattern.IsLiteral() {
			continue
		}
		if byProgram == nil {
			candidates()
		}
		allows := append(append([]allowRule(nil), byProgram[s[2]]...), anyProgram...)
		sort.Slice(allows, func(i, j int) bool { return allows[i].order < allows[j].order })
		family := action.MustPattern(r.Pattern.String() + ".*")
		for _, a := range allows {
			allow := a.rule
			if !action.Overlaps(allow.Pattern, family) {
				continue
			}
			w := witness(allow.Pattern, family)
			if w == nil || l.evaluator(w).Decide(w, config.Loop).Decision != config.Allow {
				continue
			}
			l.add(r.Span, CodeDottedVariant,
				fmt.Sprintf("%q denies %s, but %s is allowed by %q at %s: a dotted name of the same program (%s.12 beside %s) is an action of its own", r.Pattern, s[2], w, allow.Pattern, at(allow.Span), s[2], s[2]),
				fmt.Sprintf("deny %s.* too", r.Pattern))
			break
		}
	}
}

// witness is an action both patterns match, or nil: each segment the
// literal either gives, "x" where both have a '*'.
func witness(p, q action.Pattern) action.Action {
	ps, qs := p.Segments(), q.Segments()
	n := max(len(ps), len(qs))
	a := make(action.Action, n)
	for i := range a {
		var x, y string
		if i < len(ps) {
			x = ps[i]
		} else {
			x = "*"
		}
		if i < len(qs) {
			y = qs[i]
		} else {
			y = "*"
		}
		switch {
		case x != "*":
			a[i] = x
		case y != "*":
			a[i] = y
		default:
			a[i] = "x"
		}
	}
	if !p.Matches(a) || !q.Matches(a) {
		return nil
	}
	return a
}

// sharedFiles warns where a rule refuses one name of a file that another
// name lets run (Input.SharedFiles): at run time the file is decided under
// all of its names, the strictest winning, so the allowed name runs
// nothing either. The warning is at the refusing rule, naming both.
func (l *linter) sharedFiles() {
	type said struct {
		rule *config.Rule
		path string
	}
	done := map[said]bool{}
	for _, f := range l.in.SharedFiles {
		var allowed []string
		var allowedBy string
		type refusal struct {
			name string
			rule *config.Rule
		}
		var refused []refusal
		for _, n := range f.Names {
			text, err := action.Exec(n)
			if err != nil {
				continue
			}
			a, err := action.ParseAction(text)
			if err != nil {
				continue
			}
			r := l.evaluator(a).Decide(a, config.Loop)
			if r.Decision == config.Allow {
				if allowed = append(allowed, text); allowedBy == "" {
					allowedBy = "the default"
					if rule := r.Layers[0].Rule; rule != nil {
						allowedBy = fmt.Sprintf("%s at %s", rule.Key(), at(rule.Span))
					}
				}
				continue
			}
			for _, lr := range r.Layers {
				if lr.Rule != nil && !lr.Rule.Builtin && lr.Decision != config.Allow {
					refused = append(refused, refusal{text, lr.Rule})
					break
				}
			}
		}
		if len(allowed) == 0 {
			continue
		}
		for _, rf := range refused {
			if done[said{rf.rule, f.Path}] {
				continue
			}
			done[said{rf.rule, f.Path}] = true
			verb := "denied"
			if rf.rule.Decision == config.Ask {
				verb = "asked"
			}
			l.add(rf.rule.Span, CodeProgramSharedFile,
				fmt.Sprintf("%s is %s here, and its file on this machine, %s, is also %s (allowed by %s): a file is decided under every name it has, the strictest winning, so %s is %s too",
					rf.name, verb, f.Path, strings.Join(allowed, " and "), allowedBy, strings.Join(allowed, " and "), verb),
				fmt.Sprintf("%s %s as well, so the policy says what happens", rf.rule.Decision, strings.Join(allowed, ", ")))
		}
	}
}
