// Package diff compares two policies exactly: every region of
// the action space where the effective decision of either phase changed,
// with a witness action and the rule that decides on each side; the
// secrets each program region or server is newly offered or no longer
// offered; the servers added, removed or changed. Nothing else is
// reported: two policies that decide alike report nothing.
//
// The regions come from package region, walked over the patterns of every
// layer of both sides and of every secret's .to, and are reported in their
// coarsest form (region.Map), so a rule that changes nothing splits no
// reported region; regions with the same change that together make up a
// coarser one, prefix.* but for a few regions, are reported as that one
// with those few as its exceptions (one added allow exec.path.* is one
// change, not one per program the policy names). The walk is bounded to the actions a changed rule or
// secret matches (a region no changed pattern matches is decided alike on
// both sides), unless a layer's default changed, and by a number of
// regions.
package diff

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/chockhq/chock/compile/region"
	"github.com/chockhq/chock/diag"
)

// Side is one of the two policies: a project (nil: none, which denies
// every action) and its org ceilings.
type Side struct {
	Config *config.Config
	Orgs   []*config.Org
}

// Options bound the comparison.
type Options struct {
	// Max is the most regions compared (when 0, region.Limit of the
	// number of patterns of both sides); more ends Diff with a
	// *region.LimitError.
	Max int
}

// Kinds of change.
const (
	Widened  = "widened"  // less restrictive (deny < ask < allow), or reaching something new
	Narrowed = "narrowed" // more restrictive, or reaching less
)

// Rule is what decided an action on one side: a layer's rule, or its
// default (Pattern empty).
type Rule struct {
	Layer    string          `json:"layer"`
	Pattern  string          `json:"pattern,omitempty"`
	Default  bool            `json:"default,omitempty"`
	Decision config.Decision `json:"decision"`
	Span     diag.Span       `json:"span"`
}

// String names the rule as the text output does: `project "exec.path.*"
// allow at chock.zon:4:20`, or `project default deny at chock.zon`.
func (r Rule) String() string {
	if r.Default {
		return fmt.Sprintf("%s default %s at %s", r.Layer, r.Decision, r.Span)
	}
	return fmt.Sprintf("%s %q %s at %s", r.Layer, r.Pattern, r.Decision, r.Span)
}

// Change is a region whose effective decision changed in one phase:
// the actions of Region but those of Except. Except is empty unless
// regions with the same change (the same decisions and rules in both
// phases) were coalesced into the coarser Region they form together, the
// actions Except holds (changed otherwise, or not at all) left out.
type Change struct {
	Region  region.Region   `json:"region"`
	Except  []region.Region `json:"except,omitempty"`
	Phase   config.Phase    `json:"phase"`
	Old     config.Decision `json:"old"`
	New     config.Decision `json:"new"`
	Kind    string          `json:"kind"`
	Witness string          `json:"witness"`
	OldRule Rule            `json:"old_rule"`
	NewRule Rule            `json:"new_rule"`
}

// Contains says whether action a is one of the change's: in Region and
// in none of Except.
func (c *Change) Contains(a action.Action) bool {
	if !c.Region.Contains(a) {
		return false
	}
	for _, e := range c.Except {
		if e.Contains(a) {
			return false
		}
	}
	return true
}

// Where is the change's region as the text output names it: the region,
// and " except " the regions left out, each with at most max literals
// named in a <not ...> (max < 0: all).
func (c *Change) Where(max int) string {
	s := c.Region.Format(max)
	for i, e := range c.Except {
		if i == 0 {
			s += " except "
		} else {
			s += ", "
		}
		s += e.Format(max)
	}
	return s
}

// Offer is one secret offered: its entry's name, bind and the variable or
// header it arrives under, and where the entry is.
type Offer struct {
	Name     string      `json:"name"`
	Bind     config.Bind `json:"bind"`
	Variable string      `json:"variable"`
	To       string      `json:"to"`
	Span     diag.Span   `json:"span"`
}

func (o Offer) key() string { return o.Name + "\x00" + o.Bind.String() + "\x00" + o.Variable }

// SecretChange is a program region (calls of the programs it holds) or a
// server whose offered secrets changed. Kind is widened when some secret
// is newly offered.
type SecretChange struct {
	Region *region.Region `json:"region,omitempty"`
	// Except are the program regions of Region left out, as in a Change.
	Except  []region.Region `json:"except,omitempty"`
	Witness string          `json:"witness,omitempty"`
	Server  string          `json:"server,omitempty"`
	Kind    string          `json:"kind"`
	Added   []Offer         `json:"added"`
	Removed []Offer         `json:"removed"`
}

// Contains says whether a program call a is one of the change's: in
// Region and in none of Except (never, for a server's change).
func (s *SecretChange) Contains(a action.Action) bool {
	if s.Region == nil {
		return false
	}
	c := Change{Region: *s.Region, Except: s.Except}
	return c.Contains(a)
}

// Server is one .mcp_servers entry as the diff shows it.
type Server struct {
	Name    string    `json:"name"`
	Command []string  `json:"command,omitempty"`
	URL     string    `json:"url,omitempty"`
	Span    diag.Span `json:"span"`
}

// What a server runs or reaches, to tell a changed one.
func (s *Server) what() string {
	if s.URL != "" {
		return "url " + s.URL
	}
	return "command " + strings.Join(s.Command, " ")
}

// ServerChange is a server added, removed, or whose command or url
// changed (Change is "added", "removed" or "changed"). An added or changed
// server is a widening: it runs or reaches what it did not.
type ServerChange struct {
	Name   string  `json:"name"`
	Change string  `json:"change"`
	Kind   string  `json:"kind"`
	Old    *Server `json:"old,omitempty"`
	New    *Server `json:"new,omitempty"`
}

// Report is the whole comparison. Regions is how many regions were
// compared: those some changed pattern matches, or all of them when a
// default changed.
type Report struct {
	Changes []Change       `json:"changes"`
	Secrets []SecretChange `json:"secrets"`
	Servers []ServerChange `json:"servers"`
	// Programs are the .programs changes: a program pinned or no longer,
	// a file added to or dropped from its pins, a call it declares added or
	// dropped.
	Programs []ProgramChange `json:"programs"`
	// Args are the changes of the rules with .args, rule by rule: what a
	// call's arguments decide is not a region of actions.
	Args    []ArgsChange `json:"args"`
	Regions int          `json:"regions"`
}

// ArgsChange is a rule with .args added, removed or decided otherwise in
// one layer. An allow added or a refusal (deny, ask) removed or loosened
// widens.
type ArgsChange struct {
	Layer string `json:"layer"`
	// Rule is its pattern and .args as chock.zon writes them.
	Rule string `json:"rule"`
	// Old and New are its decisions; nil where the rule is not.
	Old  *config.Decision `json:"old"`
	New  *config.Decision `json:"new"`
	Kind string           `json:"kind"`
	Span diag.Span        `json:"span"`
}

// argsChanges compares the rules with .args of each layer of both sides.
func argsChanges(oe, ne *native.Evaluator) []ArgsChange {
	type rule struct {
		d    config.Decision
		span diag.Span
	}
	index := func(e *native.Evaluator) (map[string]rule, []string) {
		m, order := map[string]rule{}, []string(nil)
		for _, l := range e.Layers {
			for _, r := range l.Policy.Rules {
				if r.Args == nil {
					continue
				}
				k := config.LayerSpelling(l.Kind, l.Name) + "\x00" + r.Key()
				if old, ok := m[k]; ok && old.d <= r.Decision {
					continue // the same rule twice: the stricter decides
				}
				if _, ok := m[k]; !ok {
					order = append(order, k)
				}
				m[k] = rule{r.Decision, r.Span}
			}
		}
		return m, order
	}
	om, oo := index(oe)
	nm, no := index(ne)
	var out []ArgsChange
	add := func(k string) {
		layer, text, _ := strings.Cut(k, "\x00")
		c := ArgsChange{Layer: layer, Rule: text}
		o, had := om[k]
		n, has := nm[k]
		loosens := func(from, to config.Decision) bool { return to > from }
		switch {
		case had && has && o.d == n.d:
			return
		case had && has:
			c.Old, c.New, c.Span, c.Kind = &o.d, &n.d, n.span, Narrowed
			if loosens(o.d, n.d) {
				c.Kind = Widened
			}
		case has:
			c.New, c.Span, c.Kind = &n.d, n.span, Narrowed
			if n.d == config.Allow {
				c.Kind = Widened
			}
		default:
			c.Old, c.Span, c.Kind = &o.d, o.span, Widened
			if o.d == config.Allow {
				c.Kind = Narrowed
			}
		}
		out = append(out, c)
	}
	for _, k := range no {
		add(k)
	}
	for _, k := range oo {
		if _, ok := nm[k]; !ok {
			add(k)
		}
	}
	return out
}

// ProgramChange is one change of a .programs entry. A declared call added,
// a pin dropped or a pinned file added widens: the program runs, or runs
// as, what it did not.
type ProgramChange struct {
	Name   string    `json:"name"`
	Change string    `json:"change"`
	Kind   string    `json:"kind"`
	Span   diag.Span `json:"span"`
}

// Empty says whether nothing changed.
func (r *Report) Empty() bool {
	return len(r.Changes) == 0 && len(r.Secrets) == 0 && len(r.Servers) == 0 && len(r.Programs) == 0 && len(r.Args) == 0
}

// Widened says whether anything widened.
func (r *Report) Widened() bool {
	return widens(r.Changes, func(c Change) string { return c.Kind }) ||
		widens(r.Secrets, func(c SecretChange) string { return c.Kind }) ||
		widens(r.Servers, func(c ServerChange) string { return c.Kind }) ||
		widens(r.Programs, func(c ProgramChange) string { return c.Kind }) ||
		widens(r.Args, func(c ArgsChange) string { return c.Kind })
}

// widens says whether a change of list widened, kind reading its kind.
func widens[T any](list []T, kind func(T) string) bool {
	return slices.ContainsFunc(list, func(c T) bool { return kind(c) == Widened })
}

// Diff compares the policy before a change with the policy after it.
func Diff(before, after Side, o Options) (*Report, error) { return diff(before, after, o, true) }

// diff is Diff, its regions coalesced (coalesce) when coarsen is set.
func diff(before, after Side, o Options, coarsen bool) (*Report, error) {
	oe, ne := native.New(before.Config, before.Orgs), native.New(after.Config, after.Orgs)
	focus, whole := changedRules(oe, ne)
	os, ns := callSecrets(before.Config), callSecrets(after.Config)
	focus = append(focus, changedSecrets(os, ns)...)

	shapes := append(oe.Shapes(), ne.Shapes()...)
	ot, nt := secretTrie(os), secretTrie(ns)
	shapes = append(shapes, ot.Shape(), nt.Shape(), action.ProgramShape())

	limit := o.Max
	if limit <= 0 {
		n := len(os) + len(ns)
		for _, e := range []*native.Evaluator{oe, ne} {
			for _, l := range e.Layers {
				n += len(l.Policy.Rules)
			}
		}
		limit = region.Limit(n)
	}
	rep := &Report{Changes: []Change{}, Secrets: []SecretChange{}, Servers: []ServerChange{}, Args: []ArgsChange{}}
	var err error
	// What changed in each region the walk visits is mapped, and read back
	// as the coarsest regions that say it: a rule that changes nothing
	// splits no reported region.
	var decisions region.Map[verdict]
	var offered region.Map[string]
	offerChanges := map[string]SecretChange{}
	rep.Regions, err = region.Walk(shapes, region.Options{Whole: whole, Focus: focus, Max: limit}, func(r region.Region, w action.Action) error {
		var v verdict
		for i, phase := range []config.Phase{config.Loop, config.Start} {
			or, nr := oe.Decide(w, phase), ne.Decide(w, phase)
			if or.Decision != nr.Decision {
				v[i] = move{or.Decision, nr.Decision, decider(or), decider(nr)}
			}
		}
		if v != (verdict{}) {
			decisions.Set(r, v)
		}
		if action.ExecPath.Has(w) {
			if added, removed := offerDiff(offers(os, func(s *config.Secret) bool { return s.OfferedToCall(w) }),
				offers(ns, func(s *config.Secret) bool { return s.OfferedToCall(w) })); len(added)+len(removed) > 0 {
				key := offerKey(added, removed)
				offerChanges[key] = SecretChange{Kind: offerKind(added), Added: added, Removed: removed}
				offered.Set(r, key)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, g := range coalesce(&decisions, coarsen) {
		reg, v := g.region, g.v
		for i, phase := range []config.Phase{config.Loop, config.Start} {
			m := v[i]
			if m == (move{}) {
				continue
			}
			kind := Narrowed
			if m.new > m.old {
				kind = Widened
			}
			rep.Changes = append(rep.Changes, Change{Region: reg, Except: g.except, Phase: phase, Old: m.old, New: m.new, Kind: kind,
				Witness: g.witness, OldRule: m.oldRule, NewRule: m.newRule})
		}
	}
	for _, g := range coalesce(&offered, coarsen) {
		reg := g.region
		c := offerChanges[g.v]
		c.Region, c.Except, c.Witness = &reg, g.except, g.witness
		rep.Secrets = append(rep.Secrets, c)
	}
	rep.Servers, rep.Secrets = servers(before.Config, after.Config, rep.Secrets)
	rep.Programs = programChanges(before.Config, after.Config)
	rep.Args = argsChanges(oe, ne)
	return rep, nil
}

// programChanges compares the .programs blocks, entry by entry.
func programChanges(old, cur *config.Config) []ProgramChange {
	list := func(c *config.Config) map[string]*config.Program {
		m := map[string]*config.Program{}
		if c != nil {
			for _, p := range c.Programs {
				if _, dup := m[p.Name.Value]; !dup { // lint's program-duplicate
					m[p.Name.Value] = p
				}
			}
		}
		return m
	}
	texts := func(f config.Field[[]config.Text]) []string {
		var out []string
		for _, t := range f.Value {
			out = append(out, t.Value)
		}
		return out
	}
	om, nm := list(old), list(cur)
	names := map[string]bool{}
	for n := range om {
		names[n] = true
	}
	for n := range nm {
		names[n] = true
	}
	out := []ProgramChange{}
	add := func(name, change, kind string, span diag.Span) {
		out = append(out, ProgramChange{Name: name, Change: change, Kind: kind, Span: span})
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		o, nw := om[n], nm[n]
		var oPinned, nPinned bool
		var oPaths, nPaths, oCalls, nCalls, oConns, nConns []string
		span := diag.Span{}
		if o != nil {
			oPinned, oPaths, oCalls, oConns, span = o.Paths.Set, texts(o.Paths), texts(o.Calls), texts(o.Connects), o.Span
		}
		if nw != nil {
			nPinned, nPaths, nCalls, nConns, span = nw.Paths.Set, texts(nw.Paths), texts(nw.Calls), texts(nw.Connects), nw.Span
		}
		switch {
		case !oPinned && nPinned:
			add(n, "pinned to "+strings.Join(nPaths, ", "), Narrowed, span)
		case oPinned && !nPinned:
			add(n, "no longer pinned (was "+strings.Join(oPaths, ", ")+")", Widened, span)
		case oPinned && nPinned:
			for _, p := range nPaths {
				if !slices.Contains(oPaths, p) {
					add(n, "may now run as "+p, Widened, span)
				}
			}
			for _, p := range oPaths {
				if !slices.Contains(nPaths, p) {
					add(n, "may no longer run as "+p, Narrowed, span)
				}
			}
		}
		for _, d := range []struct {
			old, new []string
			what     string
		}{{oCalls, nCalls, "it may run it inside its calls"}, {oConns, nConns, "its calls may reach those hosts"}} {
			for _, c := range d.new {
				if !slices.Contains(d.old, c) {
					add(n, "newly declares "+c+" ("+d.what+")", Widened, span)
				}
			}
			for _, c := range d.old {
				if !slices.Contains(d.new, c) {
					add(n, "no longer declares "+c, Narrowed, span)
				}
			}
		}
	}
	return out
}

// A group is one reported region of changed decisions: the coarsest
// region of the map, or the regions with the same verdict coalesced into
// the coarser one they form (region minus except), with a witness of one
// of them.
type group[V comparable] struct {
	region  region.Region
	except  []region.Region
	v       V
	witness string
}

// coalesce lists the coarsest regions of m in walk order and, when
// coarsen is set, merges regions with the same value that together make
// up prefix.* for a literal prefix but for a few regions of other values
// (or none): those are the group's except, and the merged group takes the
// place of the first. Where it merges is chosen to name the fewest
// regions, rows and exceptions counted alike; no merge is made where a
// region of the same value lies partly in prefix.* and partly out of it.
// Coalescing never joins regions whose values differ: prefix.* minus the
// exceptions is exactly the regions merged.
func coalesce[V comparable](m *region.Map[V], coarsen bool) []group[V] {
	var out []group[V]
	for r, v := range m.Regions {
		reg := r.Clone()
		out = append(out, group[V]{region: reg, v: v, witness: reg.Witness().String()})
	}
	if !coarsen || len(out) < 2 {
		return out
	}
	// One trie of literal prefixes for all the regions (how many lie in
	// each prefix.*), and one per value (which).
	all := &ptrie{}
	byValue := map[V]*ptrie{}
	for i, g := range out {
		all.add(g.region, i)
		t := byValue[g.v]
		if t == nil {
			t = &ptrie{}
			byValue[g.v] = t
		}
		t.add(g.region, i)
	}
	replaced := map[int]bool{}
	for _, g := range out {
		t := byValue[g.v]
		delete(byValue, g.v) // each value's trie once, at its first region
		if t == nil || t.n < 2 {
			continue
		}
		v := g.v
		// best is the fewest regions named (rows and exceptions) for the
		// regions in prefix.* of n, merged at n or below; merges holds
		// where it merges, with the exceptions.
		merges := map[*ptrie][]region.Region{}
		var prefix []string
		var best func(n, alln *ptrie, blocked bool) int
		best = func(n, alln *ptrie, blocked bool) int {
			cost := len(n.inside)
			below := 0
			for _, l := range slices.Sorted(maps.Keys(n.kids)) {
				var allc *ptrie
				if alln != nil {
					allc = alln.kids[l]
				}
				c := n.kids[l]
				prefix = append(prefix, l)
				cost += best(c, allc, blocked || n.spans(l)) - len(c.inside)
				prefix = prefix[:len(prefix)-1]
				below += len(c.inside)
			}
			// Merged here: one row and its exceptions. Tried where most of
			// what lies here has the value: only then can the exceptions
			// be few.
			if len(prefix) > 0 && !blocked && len(n.inside) >= 2 && alln != nil && len(alln.inside) < 3*len(n.inside) {
				except := m.Except(prefix, func(x V) bool { return x == v })
				if 1+len(except) < cost {
					if except == nil {
						except = []region.Region{}
					}
					merges[n] = except
					return 1 + len(except)
				}
			}
			delete(merges, n)
			return cost
		}
		best(t, all, false)
		// Apply the merges, outermost first.
		var apply func(n *ptrie)
		apply = func(n *ptrie) {
			if except, ok := merges[n]; ok {
				first := n.inside[0]
				segs := make([]region.Seg, len(prefix))
				for k, l := range prefix {
					segs[k] = region.Seg{Lit: l}
				}
				out[first] = group[V]{region: region.Region{Segs: segs, More: true}, except: except, v: v, witness: out[first].witness}
				for _, k := range n.inside[1:] {
					replaced[k] = true
				}
				return
			}
			for _, l := range slices.Sorted(maps.Keys(n.kids)) {
				prefix = append(prefix, l)
				apply(n.kids[l])
				prefix = prefix[:len(prefix)-1]
			}
		}
		apply(t)
	}
	if len(replaced) == 0 {
		return out
	}
	kept := out[:0]
	for i, g := range out {
		if !replaced[i] {
			kept = append(kept, g)
		}
	}
	return kept
}

// ptrie is a trie of regions by their literal prefixes: at each node, the
// regions (by index) that lie in prefix.*, and those that lie across it
// (partly in the prefix.* of a child and partly out of it).
type ptrie struct {
	kids   map[string]*ptrie
	inside []int
	n      int // regions added
	// more is set when a region is prefix.* itself minus nothing: it lies
	// across every child's prefix.*.
	more bool
	// branch are the <not ...> segments of the regions whose literals end
	// here: each lies across the prefix.* of every child it matches.
	branch []region.Seg
}

// add files region r (index i) under its literal prefix.
func (t *ptrie) add(r region.Region, i int) {
	t.n++
	n := t
	for k, g := range r.Segs {
		if g.Other {
			n.branch = append(n.branch, g)
			return
		}
		if n.kids == nil {
			n.kids = map[string]*ptrie{}
		}
		c := n.kids[g.Lit]
		if c == nil {
			c = &ptrie{}
			n.kids[g.Lit] = c
		}
		n = c
		if k+1 < len(r.Segs) || r.More {
			n.inside = append(n.inside, i)
		}
	}
	if r.More {
		n.more = true
	}
}

// spans says whether a region filed at t lies across the prefix.* of its
// child l.
func (t *ptrie) spans(l string) bool {
	if t.more {
		return true
	}
	for _, g := range t.branch {
		if g.Matches(l) {
			return true
		}
	}
	return false
}

// A move is a decision changed in one phase, with the rule on each side;
// a verdict is a region's moves at loop and at start (zero: none).
type (
	move struct {
		old, new         config.Decision
		oldRule, newRule Rule
	}
	verdict [2]move
)

// offerKey names a change of offers, for region.Map.
func offerKey(added, removed []Offer) string {
	var b strings.Builder
	for _, o := range added {
		b.WriteString("+" + o.key() + "\x00" + o.To + "\x01")
	}
	for _, o := range removed {
		b.WriteString("-" + o.key() + "\x00" + o.To + "\x01")
	}
	return b.String()
}

// decider is the rule that decided a result: the deciding rule (or
// default) of the layer that gave the effective decision, the project's
// unless an org capped it.
func decider(r native.Result) Rule {
	lr := r.Layers[0]
	if r.CappedBy != nil {
		for _, l := range r.Layers {
			if l.Layer == r.CappedBy {
				lr = l
				break
			}
		}
	}
	layer := config.LayerSpelling(lr.Layer.Kind, lr.Layer.Name)
	if lr.Rule == nil {
		span := lr.Layer.Policy.Default.Span
		if !lr.Layer.Policy.Default.Set {
			span = diag.Span{File: lr.Layer.File}
		}
		return Rule{Layer: layer, Default: true, Decision: lr.Decision, Span: span}
	}
	return Rule{Layer: layer, Pattern: lr.Rule.Pattern.String(), Decision: lr.Rule.Decision, Span: lr.Rule.Span}
}

// changedRules are the patterns whose rules differ between the two sides'
// layers (a layer's decision for an action depends only on, per matching
// pattern, the most restrictive decision written for it), and whether a
// default changed, which changes what no rule matches: the whole space.
// Layers pair by kind and name; an org on one side only pairs with no
// ceiling (default allow, no rules).
func changedRules(oe, ne *native.Evaluator) (focus []action.Pattern, whole bool) {
	type layer struct {
		def   config.Decision
		rules map[string]config.Decision
		pats  map[string]action.Pattern
	}
	index := func(e *native.Evaluator) map[string]*layer {
		out := map[string]*layer{}
		seen := map[string]int{}
		for _, l := range e.Layers {
			key := config.LayerSpelling(l.Kind, l.Name)
			seen[key]++
			if n := seen[key]; n > 1 {
				key = fmt.Sprintf("%s#%d", key, n) // the same org twice
			}
			x := &layer{def: l.Policy.Default.Value, rules: map[string]config.Decision{}, pats: map[string]action.Pattern{}}
			for _, r := range l.Policy.Rules {
				p := r.Pattern.String()
				if d, ok := x.rules[p]; !ok || r.Decision < d {
					x.rules[p] = r.Decision
					x.pats[p] = r.Pattern
				}
			}
			out[key] = x
		}
		return out
	}
	ol, nl := index(oe), index(ne)
	none := &layer{def: config.Allow}
	seen := map[string]bool{}
	add := func(p action.Pattern) {
		if !seen[p.String()] {
			seen[p.String()] = true
			focus = append(focus, p)
		}
	}
	compare := func(a, b *layer) {
		if a.def != b.def {
			whole = true
		}
		for p, d := range a.rules {
			if e, ok := b.rules[p]; !ok || e != d {
				add(a.pats[p])
			}
		}
		for p := range b.rules {
			if _, ok := a.rules[p]; !ok {
				add(b.pats[p])
			}
		}
	}
	for key, a := range ol {
		b := nl[key]
		if b == nil {
			b = none
		}
		compare(a, b)
	}
	for key, b := range nl {
		if ol[key] == nil {
			compare(none, b)
		}
	}
	slices.SortFunc(focus, func(p, q action.Pattern) int { return strings.Compare(p.String(), q.String()) })
	return focus, whole
}

// callSecrets are the entries that can be offered to a call.
func callSecrets(c *config.Config) []*config.Secret {
	if c == nil {
		return nil
	}
	var out []*config.Secret
	for _, s := range c.Secrets {
		if s.ToPattern.Set && s.ToPattern.Value.Segments()[0] == "exec" {
			out = append(out, s)
		}
	}
	return out
}

func offerOf(s *config.Secret) Offer {
	return Offer{Name: s.Name.Value, Bind: s.Bind.Value, Variable: s.Variable(), To: s.To.Value, Span: s.Span}
}

// changedSecrets are the .to patterns of the call secrets on one side
// only (by name, bind, variable and .to).
func changedSecrets(old, cur []*config.Secret) []action.Pattern {
	key := func(s *config.Secret) string { return offerOf(s).key() + "\x00" + s.To.Value }
	in := func(list []*config.Secret) map[string]bool {
		m := map[string]bool{}
		for _, s := range list {
			m[key(s)] = true
		}
		return m
	}
	om, nm := in(old), in(cur)
	var out []action.Pattern
	for _, s := range old {
		if !nm[key(s)] {
			out = append(out, s.ToPattern.Value)
		}
	}
	for _, s := range cur {
		if !om[key(s)] {
			out = append(out, s.ToPattern.Value)
		}
	}
	return out
}

func secretTrie(list []*config.Secret) *action.Trie[*config.Secret] {
	t := &action.Trie[*config.Secret]{}
	for _, s := range list {
		t.Insert(s.ToPattern.Value, s)
	}
	return t
}

// offers are the offers of the entries given keeps, once each.
func offers(list []*config.Secret, given func(*config.Secret) bool) []Offer {
	var out []Offer
	seen := map[string]bool{}
	for _, s := range list {
		if given(s) {
			o := offerOf(s)
			if !seen[o.key()] {
				seen[o.key()] = true
				out = append(out, o)
			}
		}
	}
	return out
}

// offerDiff is what cur offers that old does not, and the reverse.
func offerDiff(old, cur []Offer) (added, removed []Offer) {
	has := func(list []Offer, o Offer) bool {
		return slices.ContainsFunc(list, func(x Offer) bool { return x.key() == o.key() })
	}
	added, removed = []Offer{}, []Offer{}
	for _, o := range cur {
		if !has(old, o) {
			added = append(added, o)
		}
	}
	for _, o := range old {
		if !has(cur, o) {
			removed = append(removed, o)
		}
	}
	return added, removed
}

func offerKind(added []Offer) string {
	if len(added) > 0 {
		return Widened
	}
	return Narrowed
}

// servers compares the two .mcp_servers lists and each server's offered
// secrets, appending those to secrets.
func servers(old, cur *config.Config, secrets []SecretChange) ([]ServerChange, []SecretChange) {
	list := func(c *config.Config) map[string]*Server {
		m := map[string]*Server{}
		if c == nil {
			return m
		}
		for _, s := range c.Servers {
			if _, dup := m[s.Name.Value]; dup {
				continue // lint's server-duplicate; the first one is the server
			}
			x := &Server{Name: s.Name.Value, URL: s.URL.Value, Span: s.Span}
			for _, a := range s.Command.Value {
				x.Command = append(x.Command, a.Value)
			}
			m[s.Name.Value] = x
		}
		return m
	}
	om, nm := list(old), list(cur)
	var names []string
	for n := range om {
		names = append(names, n)
	}
	for n := range nm {
		if om[n] == nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	serverSecrets := func(c *config.Config, name string, present bool) []Offer {
		if c == nil || !present {
			return nil
		}
		return offers(c.Secrets, func(s *config.Secret) bool { return s.OfferedToServer(name) })
	}
	out := []ServerChange{}
	for _, n := range names {
		o, nw := om[n], nm[n]
		switch {
		case o == nil:
			out = append(out, ServerChange{Name: n, Change: "added", Kind: Widened, New: nw})
		case nw == nil:
			out = append(out, ServerChange{Name: n, Change: "removed", Kind: Narrowed, Old: o})
		case o.what() != nw.what():
			out = append(out, ServerChange{Name: n, Change: "changed", Kind: Widened, Old: o, New: nw})
		}
		added, removed := offerDiff(serverSecrets(old, n, o != nil), serverSecrets(cur, n, nw != nil))
		if len(added)+len(removed) > 0 {
			secrets = append(secrets, SecretChange{Server: n, Kind: offerKind(added), Added: added, Removed: removed})
		}
	}
	return out, secrets
}
