package action

import (
	"maps"
	"slices"
	"strings"
)

// Trie finds the most specific pattern matching an action. Each node has
// literal children, a one-segment '*' child and a trailing '*' child; a
// depth-first walk that tries them in that order meets the most specific
// match first, because specificity is decided at the first segment where
// two patterns differ. A lookup costs O(segments) for literal-only rule
// sets and never visits a rule that cannot match.
type Trie[T any] struct {
	root trieNode[T]
	size int
}

type trieNode[T any] struct {
	lit      map[string]*trieNode[T]
	globs    []globChild[T] // path globs, most literal characters first
	star     *trieNode[T]
	trailing []Entry[T] // patterns ending in '*' here
	exact    []Entry[T] // patterns ending here
}

// globChild is a path glob (the last segment of an fs pattern) and the
// node of the patterns that end in it.
type globChild[T any] struct {
	glob *Glob
	node *trieNode[T]
}

// Entry is one pattern and the value stored with it.
type Entry[T any] struct {
	Pattern Pattern
	Value   T
}

// Len is the number of patterns inserted.
func (t *Trie[T]) Len() int { return t.size }

// Insert adds a pattern. Identical patterns are kept side by side; Lookup
// returns all of them.
func (t *Trie[T]) Insert(p Pattern, v T) {
	n := &t.root
	e := Entry[T]{Pattern: p, Value: v}
	for i := range p.segs {
		switch p.Kind(i) {
		case Trailing:
			n.trailing = append(n.trailing, e)
			t.size++
			return
		case Star:
			if n.star == nil {
				n.star = &trieNode[T]{}
			}
			n = n.star
		case PathGlob:
			n = n.globChild(p.glob)
		default:
			if n.lit == nil {
				n.lit = make(map[string]*trieNode[T])
			}
			c := n.lit[p.segs[i]]
			if c == nil {
				c = &trieNode[T]{}
				n.lit[p.segs[i]] = c
			}
			n = c
		}
	}
	n.exact = append(n.exact, e)
	t.size++
}

// Lookup returns the entries of the most specific pattern matching a (more
// than one only when identical patterns were inserted), or nil.
func (t *Trie[T]) Lookup(a Action) []Entry[T] {
	return t.root.lookup(a, 0, nil)
}

// LookupExcept is Lookup with the entries skip refuses left out, as if
// they had never been inserted: the entries of the most specific pattern
// matching a that has any entry skip keeps, those entries only, or nil.
// It answers "what would decide a without this rule".
func (t *Trie[T]) LookupExcept(a Action, skip func(Entry[T]) bool) []Entry[T] {
	return t.root.lookup(a, 0, skip)
}

// globChild is the child of glob g, made when missing; the children stay
// sorted by literal characters, most first, then by text.
func (n *trieNode[T]) globChild(g *Glob) *trieNode[T] {
	i, found := slices.BinarySearchFunc(n.globs, g, func(c globChild[T], g *Glob) int {
		if c.glob.lits != g.lits {
			return g.lits - c.glob.lits
		}
		return strings.Compare(c.glob.text, g.text)
	})
	if !found {
		n.globs = slices.Insert(n.globs, i, globChild[T]{glob: g, node: &trieNode[T]{}})
	}
	return n.globs[i].node
}

func (n *trieNode[T]) lookup(a Action, i int, skip func(Entry[T]) bool) []Entry[T] {
	if i == len(a) {
		return keep(n.exact, skip)
	}
	if c := n.lit[a[i]]; c != nil {
		if r := c.lookup(a, i+1, skip); r != nil {
			return r
		}
	}
	// Path globs: those of the most literal characters that match decide,
	// all of them together (a tie, which the caller settles as for
	// identical patterns).
	var tied []Entry[T]
	for k, c := range n.globs {
		if tied != nil && c.glob.lits != n.globs[k-1].glob.lits {
			break
		}
		if !c.glob.Matches(a[i]) {
			continue
		}
		if r := c.node.lookup(a, i+1, skip); r != nil {
			tied = append(tied, r...)
		}
	}
	if tied != nil {
		return tied
	}
	if n.star != nil {
		if r := n.star.lookup(a, i+1, skip); r != nil {
			return r
		}
	}
	return keep(n.trailing, skip) // a trailing '*' takes the one or more segments left
}

// keep is es without the entries skip refuses (es itself when skip is nil
// or refuses none), or nil when none is left.
func keep[T any](es []Entry[T], skip func(Entry[T]) bool) []Entry[T] {
	if skip == nil || len(es) == 0 {
		if len(es) == 0 {
			return nil
		}
		return es
	}
	var out []Entry[T]
	for i, e := range es {
		if skip(e) {
			if out == nil {
				out = append(make([]Entry[T], 0, len(es)-1), es[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, e)
		}
	}
	if out == nil {
		return es // skip refused none
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Shape is how a set of patterns is laid out by segment, seen from one
// prefix: which literals and wildcards come next. It is all a walk over
// the action space needs (package region partitions the space by it), so
// the patterns of several tries, whatever they store, can be walked side
// by side without copying them.
type Shape interface {
	// Literal is the shape after the literal seg, if some pattern has it
	// next.
	Literal(seg string) (Shape, bool)
	// Star is the shape after a one-segment '*', if some pattern has one
	// next.
	Star() (Shape, bool)
	// Literals calls yield with every literal some pattern has next, in
	// no order, until it returns false.
	Literals(yield func(string) bool)
	// NumLiterals is how many literals Literals yields.
	NumLiterals() int
	// Globs calls yield with every path glob some pattern has next and
	// the shape after it, until it returns false.
	Globs(yield func(g *Glob, next Shape) bool)
}

// Shape returns the shape of the trie's patterns from the empty prefix.
// It reads the trie as it is: Insert must not run while it is used.
func (t *Trie[T]) Shape() Shape { return &t.root }

func (n *trieNode[T]) Literal(seg string) (Shape, bool) {
	c, ok := n.lit[seg]
	return c, ok
}

func (n *trieNode[T]) Star() (Shape, bool) { return n.star, n.star != nil }

func (n *trieNode[T]) Literals(yield func(string) bool) { maps.Keys(n.lit)(yield) }

func (n *trieNode[T]) NumLiterals() int { return len(n.lit) }

func (n *trieNode[T]) Globs(yield func(*Glob, Shape) bool) {
	for _, c := range n.globs {
		if !yield(c.glob, c.node) {
			return
		}
	}
}
