package region

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/chockhq/chock/compile/action"
)

// Map is a function from actions to values, given region by region (Set,
// with the regions of a Walk) and read back as the coarsest regions that
// describe it (Regions). A walk splits the space wherever some pattern
// could tell actions apart; the value often cannot (a deny rule under a
// default deny), and Map merges those pieces again. The regions it gives
// are the same for any two walks of the same function, whatever patterns
// split them: at each position a literal is named only where the actions
// under it take other values than the other segments do. So a list of them
// changes only when what it describes does.
//
// Actions in no region Set have the zero value.
type Map[V comparable] struct {
	root mnode[V]
}

type mnode[V comparable] struct {
	self    V
	more    V
	hasMore bool
	other   *mnode[V]
	lits    map[string]*mnode[V]
	// cells are the cells of path globs (Seg.In, Seg.Out) at an fs
	// action's path, which stand for other there.
	cells map[string]*mcell[V]
}

// mcell is one cell of path globs and what is set under it.
type mcell[V comparable] struct {
	seg  Seg
	node *mnode[V]
}

// cellKey names a cell by its globs.
func cellKey(g Seg) string { return strings.Join(g.In, ",") + "|" + strings.Join(g.Out, ",") }

// isCell says whether g is a cell of path globs.
func isCell(g Seg) bool { return g.Other && len(g.In)+len(g.Out) > 0 }

// inCell says whether s lies in the cell's globs (its literals aside).
func inCell(g Seg, s string) bool {
	h := g
	h.Not = nil
	return h.Matches(s)
}

func (n *mnode[V]) lit(s string) *mnode[V] {
	if n.lits == nil {
		n.lits = map[string]*mnode[V]{}
	}
	c := n.lits[s]
	if c == nil {
		c = &mnode[V]{}
		n.lits[s] = c
	}
	return c
}

// Set gives every action of r the value v. The regions Set must be
// disjoint (those of one walk are).
func (m *Map[V]) Set(r Region, v V) {
	n := &m.root
	for _, g := range r.Segs {
		if !g.Other {
			n = n.lit(g.Lit)
			continue
		}
		// The literals the segment leaves out are not the other segments:
		// they take what is set under them, or the zero value.
		for _, l := range g.Not {
			n.lit(l)
		}
		if isCell(g) {
			if n.cells == nil {
				n.cells = map[string]*mcell[V]{}
			}
			k := cellKey(g)
			c := n.cells[k]
			if c == nil {
				c = &mcell[V]{seg: Seg{Other: true, In: g.In, Out: g.Out, wit: g.wit}, node: &mnode[V]{}}
				n.cells[k] = c
			}
			n = c.node
			continue
		}
		if n.other == nil {
			n.other = &mnode[V]{}
		}
		n = n.other
	}
	if r.More {
		n.more, n.hasMore = v, true
	} else {
		n.self = v
	}
}

// reduced is a node in its coarsest form: its own value, and below it
// either one value for every longer action (constant) or a branch on the
// next segment that names only the literals that differ from the others.
type reduced[V comparable] struct {
	self     V
	constant bool
	more     V // when constant
	empty    bool
	other    *reduced[V]
	lits     map[string]*reduced[V]
	// cells stand for other where path globs split the paths.
	cells map[string]*reduced[V]
	segs  map[string]Seg
	id    int
}

type reducer[V comparable] struct {
	ids    map[string]*reduced[V]
	values map[V]int
}

func (x *reducer[V]) value(v V) string {
	id, ok := x.values[v]
	if !ok {
		id = len(x.values)
		x.values[v] = id
	}
	return strconv.Itoa(id)
}

// intern returns the one reduced node equal to n.
func (x *reducer[V]) intern(n *reduced[V]) *reduced[V] {
	var b strings.Builder
	b.WriteString(x.value(n.self))
	switch {
	case n.empty:
		b.WriteString("|e")
	case n.constant:
		b.WriteString("|c" + x.value(n.more))
	default:
		if n.other != nil {
			b.WriteString("|o" + strconv.Itoa(n.other.id))
		}
		for _, k := range slices.Sorted(maps.Keys(n.cells)) {
			b.WriteString("|c" + strconv.Quote(k) + "=" + strconv.Itoa(n.cells[k].id))
		}
		for _, l := range slices.Sorted(maps.Keys(n.lits)) {
			b.WriteString("|" + strconv.Quote(l) + "=" + strconv.Itoa(n.lits[l].id))
		}
	}
	key := b.String()
	if have, ok := x.ids[key]; ok {
		return have
	}
	n.id = len(x.ids)
	x.ids[key] = n
	return n
}

// reduce is n (nil: the zero value everywhere) at depth d in its coarsest
// form.
func (x *reducer[V]) reduce(n *mnode[V], d int) *reduced[V] {
	var zero V
	if n == nil {
		n = &mnode[V]{}
	}
	r := &reduced[V]{self: n.self}
	switch {
	case d == action.MaxSegments:
		r.empty = true // no action is longer
	case n.hasMore:
		r.constant, r.more = true, n.more
	case n.other == nil && len(n.lits) == 0 && len(n.cells) == 0:
		r.constant, r.more = true, zero
	case len(n.cells) > 0:
		// The cells, merged into one other when all reduce alike; a
		// literal is named where it differs from the cell it lies in.
		// A Map may hold some cells only (a walk in focus): the others
		// are the zero value, so cells merge only when all are that.
		cells := map[string]*reduced[V]{}
		one := x.reduce(nil, d+1)
		same := true
		for k, c := range n.cells {
			rc := x.reduce(c.node, d+1)
			cells[k] = rc
			if rc != one {
				same = false
			}
		}
		lits := map[string]*reduced[V]{}
		for l, c := range n.lits {
			rc := x.reduce(c, d+1)
			home := one
			for k, cc := range n.cells {
				if inCell(cc.seg, l) {
					home = cells[k]
				}
			}
			if rc != home {
				lits[l] = rc
			}
		}
		switch {
		case same && len(lits) == 0 && (one.empty || one.constant && one.more == one.self):
			r.constant, r.more = true, one.self
		case same:
			r.other, r.lits = one, lits
		default:
			r.lits, r.cells, r.segs = lits, cells, map[string]Seg{}
			for k, c := range n.cells {
				r.segs[k] = c.seg
			}
		}
	default:
		o := x.reduce(n.other, d+1)
		lits := map[string]*reduced[V]{}
		for l, c := range n.lits {
			if rc := x.reduce(c, d+1); rc != o {
				lits[l] = rc
			}
		}
		if len(lits) == 0 && (o.empty || o.constant && o.more == o.self) {
			r.constant, r.more = true, o.self
		} else {
			r.other, r.lits = o, lits
		}
	}
	return x.intern(r)
}

// Regions calls yield with the coarsest regions whose value is not the
// zero value, in the order of a walk, until it returns false. The region
// is valid during the call only.
func (m *Map[V]) Regions(yield func(Region, V) bool) {
	x := &reducer[V]{ids: map[string]*reduced[V]{}, values: map[V]int{}}
	root := x.reduce(&m.root, 0)
	var segs []Seg
	var zero V
	var emit func(r *reduced[V], d int) bool
	emit = func(r *reduced[V], d int) bool {
		if d > 0 && r.self != zero && !yield(Region{Segs: segs}, r.self) {
			return false
		}
		switch {
		case r.empty:
			return true
		case r.constant:
			return r.more == zero || yield(Region{Segs: segs, More: true}, r.more)
		}
		lits := slices.Sorted(maps.Keys(r.lits))
		if r.other != nil {
			segs = append(segs, Seg{Other: true, Not: lits})
			if !emit(r.other, d+1) {
				return false
			}
			segs = segs[:d]
		}
		for _, k := range slices.Sorted(maps.Keys(r.cells)) {
			g := r.segs[k]
			g.Not = nil
			for _, l := range lits {
				if inCell(g, l) {
					g.Not = append(g.Not, l)
				}
			}
			segs = append(segs, g)
			if !emit(r.cells[k], d+1) {
				return false
			}
			segs = segs[:d]
		}
		for _, l := range lits {
			segs = append(segs, Seg{Lit: l})
			if !emit(r.lits[l], d+1) {
				return false
			}
			segs = segs[:d]
		}
		return true
	}
	emit(root, 0)
}

// Get is the value of action a.
func (m *Map[V]) Get(a action.Action) V {
	n := &m.root
	for i, s := range a {
		if n.hasMore {
			return n.more
		}
		next := n.lits[s]
		if next == nil {
			next = n.other
		}
		for _, c := range n.cells {
			if next == nil && inCell(c.seg, s) {
				next = c.node
			}
		}
		if next == nil || i >= action.MaxSegments {
			var zero V
			return zero
		}
		n = next
	}
	return n.self
}

// Shape lays out the regions Set so far for a walk (package region's
// own): walked beside a policy's patterns, every region it visits has one
// value here. Set must not run while it is used.
func (m *Map[V]) Shape() action.Shape { return &m.root }

func (n *mnode[V]) Literal(seg string) (action.Shape, bool) {
	c, ok := n.lits[seg]
	return c, ok
}

func (n *mnode[V]) Star() (action.Shape, bool) { return n.other, n.other != nil }

func (n *mnode[V]) Literals(yield func(string) bool) { maps.Keys(n.lits)(yield) }

func (n *mnode[V]) NumLiterals() int { return len(n.lits) }

// Globs yields nothing: a Map keeps the cells of path globs as literals
// and other segments (see Set).
func (n *mnode[V]) Globs(func(*action.Glob, action.Shape) bool) {}

// Except is the coarsest regions of the actions longer than prefix (those
// prefix.* matches) whose value keep rejects, actions in no region Set
// included (they have the zero value). Coarsening a report uses it: prefix.*
// minus Except holds exactly the actions whose value keep accepts.
func (m *Map[V]) Except(prefix []string, keep func(V) bool) []Region {
	var zero V
	rejects := func(v V) bool { return !keep(v) }
	var cp func(n *mnode[V]) *mnode[bool]
	cp = func(n *mnode[V]) *mnode[bool] {
		if n == nil {
			return &mnode[bool]{self: rejects(zero), more: rejects(zero), hasMore: true}
		}
		c := &mnode[bool]{self: rejects(n.self)}
		switch {
		case n.hasMore:
			c.more, c.hasMore = rejects(n.more), true
		case n.other == nil && len(n.lits) == 0 && len(n.cells) == 0:
			c.more, c.hasMore = rejects(zero), true
		default:
			c.other = cp(n.other)
			if len(n.cells) > 0 {
				c.other = nil
				c.cells = map[string]*mcell[bool]{}
				for key, cc := range n.cells {
					c.cells[key] = &mcell[bool]{seg: cc.seg, node: cp(cc.node)}
				}
			}
			for l, k := range n.lits {
				c.lit(l)
				c.lits[l] = cp(k)
			}
		}
		return c
	}
	// The node prefix leads to, as Get finds it.
	n := &m.root
	for _, s := range prefix {
		if n == nil || n.hasMore {
			break
		}
		next := n.lits[s]
		if next == nil {
			next = n.other
		}
		n = next
	}
	var sub *mnode[bool]
	if n != nil && n.hasMore {
		// Every longer action has n's one value.
		sub = &mnode[bool]{more: rejects(n.more), hasMore: true}
	} else {
		sub = cp(n)
	}
	sub.self = false // prefix itself is not in prefix.*
	var out Map[bool]
	at := &out.root
	for _, s := range prefix {
		at = at.lit(s)
	}
	*at = *sub
	var regions []Region
	out.Regions(func(r Region, _ bool) bool {
		regions = append(regions, r.Clone())
		return true
	})
	return regions
}
