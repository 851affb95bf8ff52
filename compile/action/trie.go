package action

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
	star     *trieNode[T]
	trailing []Entry[T] // patterns ending in '*' here
	exact    []Entry[T] // patterns ending here
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
	return t.root.lookup(a, 0)
}

func (n *trieNode[T]) lookup(a Action, i int) []Entry[T] {
	if i == len(a) {
		return n.exact
	}
	if c := n.lit[a[i]]; c != nil {
		if r := c.lookup(a, i+1); r != nil {
			return r
		}
	}
	if n.star != nil {
		if r := n.star.lookup(a, i+1); r != nil {
			return r
		}
	}
	return n.trailing // a trailing '*' takes the one or more segments left
}
