package lint

import (
	"errors"
	"fmt"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/chockhq/chock/compile/region"
)

// The checks here are exact: they visit every region of the action space
// (package region) that a rule matches, split by the patterns that decide
// there, and decide each region's witness.
//
// They do so without indexing a layer's literal rules again (a large
// policy is mostly literals, and lint's memory is bounded against its
// input): a literal rule is the most specific rule of its one action and
// matches no other, so it decides that action alone, and the rest of the
// space is decided by the layer's other rules, which split indexes. A
// region of one action that a literal rule names is left out of a walk;
// every other region holds actions no literal rule names.

// ruleRegions bounds one rule's check. A rule that matters is told so by
// the first region where it decides, nearly always the first visited (and
// most often by its own witness, before any walk); only a rule that
// matters nowhere is walked through, and one that would take more regions
// than this is left unchecked.
const ruleRegions = 10_000

// split is one layer as the region checks read it: its literal rules by
// their text (the layer's firstRules), its other rules in an evaluator
// with the layer's default, and the rules whose pattern another rule of
// the layer repeats (rule-repeated and rule-conflict say so; these checks
// leave them be).
type split struct {
	first  *firstRules
	wild   *native.Layer
	shared map[*config.Rule]bool
}

func newSplit(ly *layer, first *firstRules, shared map[*config.Rule]bool) *split {
	wild := &config.Policy{Default: ly.policy.Default}
	for _, r := range ly.policy.Rules {
		if !r.Pattern.IsLiteral() {
			wild.Rules = append(wild.Rules, r)
		}
	}
	return &split{first: first, wild: native.NewLayer(ly.kind, ly.name, "", wild), shared: shared}
}

// named says whether a literal rule names the region, a single action.
func (s *split) named(r region.Region, w action.Action) bool {
	if r.More {
		return false
	}
	for _, g := range r.Segs {
		if g.Other {
			return false
		}
	}
	return s.first.find(w.String()) != nil
}

// witness is an action r matches: its '*'s as "x". ok is false when a
// literal rule names it, so that it says nothing about r.
func (s *split) witness(r *config.Rule) (action.Action, bool) {
	w := append(action.Action(nil), r.Pattern.Segments()...)
	for i := range w {
		if w[i] == "*" {
			w[i] = "x"
		}
	}
	return w, s.first.find(w.String()) == nil
}

// budget is what the region checks of one run may visit in all:
// region.Limit of the number of rules, so that a policy's checks cost a
// few regions a rule whatever the rules are. Checks past it are left
// undone.
func (l *linter) budget() int {
	if l.wasRedundant == nil {
		n := 0
		for _, ly := range l.layers {
			n += len(ly.policy.Rules)
		}
		l.regions = region.Limit(n)
		l.wasRedundant = map[*config.Rule]bool{}
	}
	return l.regions
}

// walk visits the regions r's pattern matches among the patterns of
// shapes, but those of one action a literal rule of s names, spending the
// run's budget. It says whether the walk ran to its end or visit stopped
// it (by returning false); false means it was left unfinished (too many
// regions).
func (l *linter) walk(shapes []action.Shape, s *split, r *config.Rule, visit func(w action.Action) bool) (finished bool) {
	left := l.budget()
	if left <= 0 {
		return false
	}
	n, err := region.Walk(shapes, region.Options{Focus: []action.Pattern{r.Pattern}, Max: min(ruleRegions, left)},
		func(reg region.Region, w action.Action) error {
			if s.named(reg, w) || visit(w) {
				return nil
			}
			return region.SkipAll
		})
	l.regions -= n
	var le *region.LimitError
	return !errors.As(err, &le)
}

// redundant finds the rules of layer n whose removal changes none of the
// layer's decisions, and names what decides in their place: the rules, or
// the default, that decide those actions the same without it. shared are
// rules whose pattern another rule of the layer repeats (rule-repeated
// and rule-conflict say so).
func (l *linter) redundant(n int, shared map[*config.Rule]bool, first *firstRules) {
	l.budget()
	s := newSplit(&l.layers[n], first, shared)
	if n == 0 {
		l.project = s
	}
	shapes := []action.Shape{s.wild.Shape()}
	for _, r := range l.layers[n].policy.Rules {
		switch {
		case shared[r]:
		case r.Args != nil:
			// Decided by a call's arguments, which no region of actions
			// shows: never reported as changing nothing.
		case n == 0 && l.stopsDeclaration(r):
			// Its removal would let a declaration through, so it is not
			// redundant, whatever the default says.
		case r.Pattern.IsLiteral():
			// The one action it matches, decided by the other rules.
			if d, by := s.wild.Decide(r.Pattern.Segments()); d == r.Decision {
				var m makers
				m.note(by)
				l.reportRedundant(n, r, m)
			}
		default:
			if m, ok := l.redundantWild(s, shapes, r); ok {
				l.reportRedundant(n, r, m)
			}
		}
	}
}

// stopsDeclaration says whether project rule r is one a .programs
// declaration cannot beat: a refusing rule naming a declared call
// (config.DeclaredCallRuns) or as narrow as a declared connection
// (config.DeclaredConnectRuns).
func (l *linter) stopsDeclaration(r *config.Rule) bool {
	if r.Decision == config.Allow || l.in.Config == nil {
		return false
	}
	verdicts := []config.LayerVerdict{{Decision: r.Decision, Rule: r.Pattern.String()}}
	for _, p := range l.in.Config.Programs {
		for _, c := range p.Calls.Value {
			if config.DeclaredCallRuns(c.Value, verdicts) == 0 {
				return true
			}
		}
		for _, c := range p.Connects.Value {
			if d, err := action.ParsePattern(c.Value); err == nil && action.Overlaps(d, r.Pattern) && config.DeclaredConnectRuns(c.Value, verdicts) == 0 {
				return true
			}
		}
	}
	return false
}

// makers are what decides a redundant rule's actions in its place.
type makers struct {
	rules     []*config.Rule
	byDefault bool
}

func (m *makers) note(r *config.Rule) {
	if r == nil {
		m.byDefault = true
	} else if !contains(m.rules, r) {
		m.rules = append(m.rules, r)
	}
}

// redundantWild says whether a rule with a '*' is redundant, and what
// decides in its place.
func (l *linter) redundantWild(s *split, shapes []action.Shape, r *config.Rule) (makers, bool) {
	var m makers
	if w, ok := s.witness(r); ok {
		if d, by := s.wild.Decide(w); by == r {
			if without, _ := s.wild.DecideExcept(w, r); without != d {
				return m, false
			}
		}
	}
	changes := false
	finished := l.walk(shapes, s, r, func(w action.Action) bool {
		d, by := s.wild.Decide(w)
		if by != r {
			m.note(by) // a more specific rule decides here, with or without r
			return true
		}
		without, instead := s.wild.DecideExcept(w, r)
		if without != d {
			changes = true
			return false
		}
		m.note(instead)
		return true
	})
	return m, finished && !changes
}

func (l *linter) reportRedundant(n int, r *config.Rule, m makers) {
	l.wasRedundant[r] = true
	l.add(r.Span, CodeRuleRedundant,
		fmt.Sprintf("%q (%s) changes nothing: %s", r.Pattern, r.Decision, makersText(m.rules, m.byDefault, l.layers[n])),
		"remove it; every action it matches is decided the same without it")
}

func contains(list []*config.Rule, r *config.Rule) bool {
	for _, x := range list {
		if x == r {
			return true
		}
	}
	return false
}

// makersText says what decides a redundant rule's actions in its place.
func makersText(makers []*config.Rule, byDefault bool, ly layer) string {
	var parts []string
	for i, m := range makers {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more rules", len(makers)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%q (%s, at %s)", m.Pattern, m.Decision, at(m.Span)))
	}
	if byDefault {
		d := ly.policy.Default
		where := ""
		if d.Set {
			where = ", at " + at(d.Span)
		}
		parts = append(parts, fmt.Sprintf("the %s default (%s%s)", layerName(ly), d.Value, where))
	}
	verb := "decides"
	if len(parts) > 1 {
		verb = "decide"
	}
	return fmt.Sprintf("%s %s every action it matches as it would", strings.Join(parts, " and "), verb)
}

func layerName(ly layer) string {
	if ly.kind == "org" {
		return fmt.Sprintf("org %q's", ly.name)
	}
	return "project's"
}

// deadByOrg finds the project rules whose decision never holds: on every
// action the rule decides in the project, an org ceiling gives less. A
// deny rule cannot be overridden (an org only narrows), and a redundant
// rule is reported as that.
func (l *linter) deadByOrg() {
	if len(l.in.Orgs) == 0 || l.project == nil {
		return
	}
	var orgs []*native.Layer
	shapes := []action.Shape{l.project.wild.Shape()}
	for _, o := range l.in.Orgs {
		ol := native.NewLayer("org", o.Name.Value, o.File, &o.Policy)
		orgs = append(orgs, ol)
		shapes = append(shapes, ol.Shape())
	}
	type capper struct {
		org  *native.Layer
		rule *config.Rule
		d    config.Decision
	}
	lowest := func(w action.Action) capper {
		low := capper{d: config.Allow}
		for _, o := range orgs {
			if d, rule := o.Decide(w); d < low.d {
				low = capper{o, rule, d}
			}
		}
		return low
	}
	for _, r := range l.layers[0].policy.Rules {
		if r.Decision == config.Deny || l.wasRedundant[r] || l.project.shared[r] || r.Args != nil {
			continue
		}
		var cappers []capper
		capped := func(w action.Action) bool {
			low := lowest(w)
			if low.d >= r.Decision {
				return false
			}
			for _, c := range cappers {
				if c == low {
					return true
				}
			}
			cappers = append(cappers, low)
			return true
		}
		if r.Pattern.IsLiteral() {
			if !capped(r.Pattern.Segments()) {
				continue
			}
		} else {
			if w, ok := l.project.witness(r); ok {
				if _, by := l.project.wild.Decide(w); by == r && lowest(w).d >= r.Decision {
					continue
				}
			}
			decides, holds := false, false
			finished := l.walk(shapes, l.project, r, func(w action.Action) bool {
				if _, by := l.project.wild.Decide(w); by != r {
					return true
				}
				decides = true
				if !capped(w) {
					holds = true
					return false
				}
				return true
			})
			if !finished || holds || !decides {
				continue
			}
		}
		var parts []string
		for i, c := range cappers {
			if i == 3 {
				parts = append(parts, fmt.Sprintf("and %d more", len(cappers)-3))
				break
			}
			how := fmt.Sprintf("by its .default at %s", at(c.org.Policy.Default.Span))
			if c.rule != nil {
				how = fmt.Sprintf("with %q at %s", c.rule.Pattern, at(c.rule.Span))
			}
			parts = append(parts, fmt.Sprintf("the org ceiling %q makes it %s %s", c.org.Name, c.d, how))
		}
		l.add(r.Span, CodeRuleDeadByOrg,
			fmt.Sprintf("%q is %s here, but on every action it decides %s", r.Pattern, r.Decision, strings.Join(parts, "; ")),
			"the project cannot widen an org ceiling; drop the rule, or ask the org to change theirs")
	}
}
