package eval

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
)

// ruleIndex finds, for an action, the rules of a policy's meta whose
// patterns match it: its signature. data.chock.core's answer for an action
// (with no arguments) is the set of the numbers of the rules that match
// it, so two actions of one signature get the same answer, and a batch of
// actions needs one evaluation per signature (a session's PATH names:
// thousands of exec.path.NAME, nearly all matched by the same wildcard or
// by none). TestRegoMatchesAreGoMatches holds each compiled condition to
// Pattern.Matches, the matcher the signature is made with.
type ruleIndex struct {
	pats []action.Pattern
	// buckets are the rules by their first segments: a literal segment's
	// text, "*" where any segment matches (a '*', a path glob, or past a
	// trailing '*'), "" past the end of a pattern without one.
	buckets map[[levels]string][]int
}

// levels is how many leading segments the index buckets rules by.
const levels = 3

// newRuleIndex indexes m's rules, or is nil when one does not parse (the
// batch is then decided action by action).
func newRuleIndex(m Meta) *ruleIndex {
	x := &ruleIndex{buckets: map[[levels]string][]int{}}
	for _, l := range m.Layers {
		for _, r := range l.Rules {
			p, err := action.ParsePattern(r.Pattern)
			if err != nil {
				return nil
			}
			var key [levels]string
			for i := range key {
				switch {
				case i < p.Len() && p.Kind(i) == action.Literal:
					key[i] = p.Segments()[i]
				case i < p.Len(), p.Kind(p.Len()-1) == action.Trailing:
					key[i] = "*"
				}
			}
			x.buckets[key] = append(x.buckets[key], len(x.pats))
			x.pats = append(x.pats, p)
		}
	}
	return x
}

// signature is the numbers of the rules matching a, in index order, as a
// map key.
func (x *ruleIndex) signature(a action.Action) string {
	var key [levels]string
	for i := range key {
		if i < len(a) {
			key[i] = a[i]
		}
	}
	var hits []int
	for combo := 0; combo < 1<<levels; combo++ {
		k := key
		for i := range k {
			if combo&(1<<i) != 0 {
				k[i] = "*"
			}
		}
		for _, n := range x.buckets[k] {
			if x.pats[n].Matches(a) {
				hits = append(hits, n)
			}
		}
	}
	slices.Sort(hits)
	hits = slices.Compact(hits) // an action segment that is "*" meets a bucket twice
	var b strings.Builder
	for _, n := range hits {
		b.WriteString(strconv.Itoa(n))
		b.WriteByte(',')
	}
	return b.String()
}

// index is the policy's ruleIndex, built once.
func (p *prepared) index() *ruleIndex {
	p.indexOnce.Do(func() { p.rules = newRuleIndex(p.meta) })
	return p.rules
}

// decideMany decides actions at phase with no arguments and logs none:
// each from the cache, or by one evaluation of data.chock.core per
// signature, every action of it filled in from that answer. A path action
// (fs.read, fs.write) and one that does not parse are evaluated alone.
func (e *Engine) decideMany(ctx context.Context, p *prepared, actions []string, phase config.Phase) ([]*Decision, error) {
	x := p.index()
	if x == nil || p.failure != nil || p.only != nil {
		return each(actions, func(a string) (*Decision, error) { return e.decideLogged(ctx, a, phase, false) })
	}
	answers := map[string]any{}
	out := make([]*Decision, len(actions))
	for i, a := range actions {
		key := decisionKey{action: a, phase: phase}
		if d, ok := p.decisions.get(key); ok {
			d = d.clone()
			d.Revision = p.revision
			out[i] = d
			continue
		}
		n, valid := action.Valid(a)
		pa, err := action.ParseAction(a)
		if !valid || err != nil || isPath(a) {
			// A path action is decided on its own: its rules' path globs
			// are matched by the compiled policy, and the name of a file
			// the agent made is never grouped by another matcher's word.
			if out[i], err = e.decideLogged(ctx, a, phase, false); err != nil {
				return nil, err
			}
			continue
		}
		sig := x.signature(pa)
		v, ok := answers[sig]
		if !ok {
			if v, err = p.coreAnswer(ctx, a, n, nil); err != nil {
				return nil, fmt.Errorf("deciding %q: %w", a, err)
			}
			answers[sig] = v
		}
		d, err := p.fill(v, a, phase)
		if err != nil {
			return nil, fmt.Errorf("deciding %q: %w", a, err)
		}
		p.decisions.put(key, d.clone())
		d.Revision = p.revision
		out[i] = d
	}
	return out, nil
}

// isPath says a is in a namespace whose last segment is a path (fs.read,
// fs.write).
func isPath(a string) bool {
	for _, pre := range action.PathPrefixes() {
		if strings.HasPrefix(a, pre) {
			return true
		}
	}
	return false
}
