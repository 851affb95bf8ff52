// Package region partitions the action space (actions of up to
// action.MaxSegments non-empty segments) by a set of patterns into
// regions: disjoint sets of actions on which every pattern of the set
// matches all the actions or none. Every decision chock makes depends on
// an action only through which patterns match it, so one witness action
// decides a whole region, and comparing two policies, listing what a
// policy grants or asking whether a rule matters is exact after visiting
// each region once.
//
// A region is a list of segments, each a literal or "any one segment but
// these literals", and whether one or more further segments (any) follow.
// The walk is a depth-first descent over segment positions: at each
// position it branches on the literals the patterns still in play hold
// there, plus one branch for every other segment, and stops where no
// pattern looks further. Only equality with a literal ever matters, so
// one fresh segment stands for all the others, and positions past the
// longest pattern matter only as "one or more further segments".
//
// The walk can be bounded to the actions some focus patterns match (the
// rules that changed, the rule under test), which bounds the work by those
// patterns rather than the whole policy, and by a number of regions, so
// that patterns built to multiply regions (a '*' between literals at many
// positions) cannot make it run away.
package region

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/chockhq/chock/compile/action"
)

// Seg is one segment of a region: the literal Lit, or, when Other, any
// one segment but the literals in Not (sorted). At the path of an fs
// action, an Other segment may also be a cell of the path globs: the
// paths every glob of In matches and no glob of Out does.
type Seg struct {
	Lit   string
	Other bool
	Not   []string
	// In and Out are path globs (sorted), for a cell of them.
	In, Out []string
	// wit is a path of the cell (Explore's), when known.
	wit string
}

// Matches says whether the segment s lies in the segment set.
func (g Seg) Matches(s string) bool {
	if !g.Other {
		return s == g.Lit
	}
	if _, found := slices.BinarySearch(g.Not, s); found {
		return false
	}
	for _, in := range g.In {
		if !globOf(in).Matches(s) {
			return false
		}
	}
	for _, out := range g.Out {
		if globOf(out).Matches(s) {
			return false
		}
	}
	return true
}

// globOf is the compiled path glob text (as a pattern's path writes it).
func globOf(text string) *action.Glob {
	globs.Lock()
	defer globs.Unlock()
	if g, ok := globs.m[text]; ok {
		return g
	}
	p, err := action.ParsePattern("fs.read." + text)
	g := p.Glob()
	if err != nil || g == nil {
		g = nil
	}
	if globs.m == nil {
		globs.m = map[string]*action.Glob{}
	}
	globs.m[text] = g
	return g
}

var globs struct {
	sync.Mutex
	m map[string]*action.Glob
}

// Region is a set of actions: those whose first len(Segs) segments lie in
// Segs, and that have exactly len(Segs) segments, or, when More, one or
// more further segments of any kind (up to action.MaxSegments in all).
type Region struct {
	Segs []Seg
	More bool
}

// Contains says whether a lies in the region.
func (r Region) Contains(a action.Action) bool {
	switch {
	case len(a) > action.MaxSegments:
		return false
	case r.More && len(a) <= len(r.Segs):
		return false
	case !r.More && len(a) != len(r.Segs):
		return false
	}
	for i, g := range r.Segs {
		if !g.Matches(a[i]) {
			return false
		}
	}
	return true
}

// Witness is an action of the region: each literal as it is, "x" (or the
// first of x2, x3, ... that the segment does not exclude) for any other
// segment, and one "x" more when further segments follow.
func (r Region) Witness() action.Action {
	a := make(action.Action, 0, len(r.Segs)+1)
	for _, g := range r.Segs {
		if g.Other {
			a = append(a, g.witness())
		} else {
			a = append(a, g.Lit)
		}
	}
	if r.More {
		a = append(a, "x")
	}
	return a
}

// witness is a segment of the set: a cell's path, or a fresh segment.
func (g Seg) witness() string {
	if len(g.In) == 0 && len(g.Out) == 0 {
		return fresh(g.Not)
	}
	if g.wit != "" {
		return g.wit
	}
	langs := make([]action.PathLang, 0, len(g.In)+len(g.Out)+len(g.Not))
	for _, l := range append(append(slices.Clone(g.In), g.Out...), g.Not...) {
		if glob := globOf(l); glob != nil {
			langs = append(langs, action.GlobLang(glob))
		} else {
			langs = append(langs, action.LiteralLang(l))
		}
	}
	out := fresh(g.Not)
	action.Explore(langs, func(in []bool, w string) bool {
		for i := range in {
			if in[i] != (i < len(g.In)) {
				return true
			}
		}
		out = w
		return false
	})
	return out
}

// fresh is a segment outside not (sorted).
func fresh(not []string) string {
	s := "x"
	for i := 2; ; i++ {
		if _, found := slices.BinarySearch(not, s); !found {
			return s
		}
		s = "x" + strconv.Itoa(i)
	}
}

// Clone copies the region, which Walk's visit may keep only as a clone.
func (r Region) Clone() Region {
	out := Region{Segs: make([]Seg, len(r.Segs)), More: r.More}
	for i, g := range r.Segs {
		out.Segs[i] = Seg{Lit: g.Lit, Other: g.Other, Not: slices.Clone(g.Not), In: slices.Clone(g.In), Out: slices.Clone(g.Out), wit: g.wit}
	}
	return out
}

// String writes the region as patterns read: literals as they are, a
// segment that excludes literals as <not a,b>, any one segment as <any>,
// and further segments as a trailing ".*" (one or more, as in a pattern);
// every action is "*". A literal holding \, <, > or , has a \ before each, so that Parse reads
// the text back.
func (r Region) String() string { return r.Format(-1) }

// Format is String with at most max literals named in each <not ...>
// (the rest counted: <not a,b,… 12 more>), for display; max < 0 names
// them all.
func (r Region) Format(max int) string {
	var b strings.Builder
	for i, g := range r.Segs {
		if i > 0 {
			b.WriteByte('.')
		}
		switch {
		case !g.Other:
			b.WriteString(escape(g.Lit))
		case len(g.In)+len(g.Out) > 0:
			b.WriteString("<")
			sep := ""
			for _, part := range []struct {
				word string
				list []string
			}{{"not", g.Not}, {"in", g.In}, {"out", g.Out}} {
				if len(part.list) == 0 {
					continue
				}
				b.WriteString(sep + part.word + " ")
				sep = " "
				for k, l := range part.list {
					if k > 0 {
						b.WriteByte(',')
					}
					b.WriteString(escape(l))
				}
			}
			b.WriteString(">")
		case len(g.Not) == 0:
			b.WriteString("<any>")
		default:
			b.WriteString("<not ")
			n := len(g.Not)
			if max >= 0 && n > max {
				n = max
			}
			for k, l := range g.Not[:n] {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(escape(l))
			}
			if rest := len(g.Not) - n; rest > 0 {
				fmt.Fprintf(&b, ",… %d more", rest)
			}
			b.WriteByte('>')
		}
	}
	switch {
	case r.More && len(r.Segs) == 0:
		b.WriteString("*") // every action
	case r.More:
		b.WriteString(".*")
	}
	return b.String()
}

const special = `\<>,`

func escape(lit string) string {
	if !strings.ContainsAny(lit, special) {
		return lit
	}
	var b strings.Builder
	for _, c := range []byte(lit) {
		if strings.IndexByte(special, c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Parse reads a region as String writes it. The literals of a <not ...>
// may come in any order; each literal must be a valid action segment.
func Parse(s string) (Region, error) {
	var r Region
	if s == "*" {
		return Region{More: true}, nil // every action
	}
	if rest, ok := strings.CutSuffix(s, ".*"); ok {
		r.More, s = true, rest
	}
	if s == "" {
		return Region{}, errors.New("empty region")
	}
	parts := strings.Split(s, ".")
	if t := action.PathTail(s); t >= 0 {
		parts = append(strings.Split(s[:t-1], "."), s[t:])
	}
	for pi, part := range parts {
		isPath := action.PathTail(s) >= 0 && pi == len(parts)-1
		var g Seg
		switch {
		case strings.HasPrefix(part, "<") && strings.HasSuffix(part, ">") && (strings.Contains(part, " in ") || strings.Contains(part, " out ") || strings.HasPrefix(part, "<in ") || strings.HasPrefix(part, "<out ")):
			cell, err := parseCell(part[1 : len(part)-1])
			if err != nil {
				return Region{}, fmt.Errorf("segment %q: %w", part, err)
			}
			g = cell
		case part == "<any>":
			g = Seg{Other: true, Not: []string{}}
		case strings.HasPrefix(part, "<not ") && strings.HasSuffix(part, ">") && !escaped(part, len(part)-1):
			lits, err := unescapeList(part[len("<not "):len(part)-1], isPath)
			if err != nil {
				return Region{}, fmt.Errorf("segment %q: %w", part, err)
			}
			slices.Sort(lits)
			g = Seg{Other: true, Not: slices.Compact(lits)}
		default:
			lits, err := unescapeList(part, isPath)
			if err != nil || len(lits) != 1 {
				return Region{}, fmt.Errorf("segment %q is neither a literal, <any> nor <not ...>", part)
			}
			g = Seg{Lit: lits[0]}
		}
		r.Segs = append(r.Segs, g)
	}
	if len(r.Segs) > action.MaxSegments || r.More && len(r.Segs) >= action.MaxSegments {
		return Region{}, fmt.Errorf("a region of more than %d segments", action.MaxSegments)
	}
	return r, nil
}

// parseCell reads "not L,… in G,… out G,…" (each part optional, in that
// order) as a cell of path globs.
func parseCell(s string) (Seg, error) {
	g := Seg{Other: true, Not: []string{}}
	words := map[string]*[]string{"not": &g.Not, "in": &g.In, "out": &g.Out}
	fields := strings.Split(s, " ")
	if len(fields)%2 != 0 {
		return Seg{}, errors.New("a cell is pairs of not, in or out and a list")
	}
	for i := 0; i < len(fields); i += 2 {
		dst, ok := words[fields[i]]
		if !ok {
			return Seg{}, fmt.Errorf("%q is not not, in or out", fields[i])
		}
		list, err := unescapeList(fields[i+1], true)
		if err != nil {
			return Seg{}, err
		}
		slices.Sort(list)
		*dst = list
	}
	for _, gl := range append(slices.Clone(g.In), g.Out...) {
		if globOf(gl) == nil {
			return Seg{}, fmt.Errorf("%q is not a path glob", gl)
		}
	}
	return g, nil
}

// escaped says whether the byte at i has an odd run of \ before it.
func escaped(s string, i int) bool {
	n := 0
	for i--; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// unescapeList splits s at its unescaped commas and undoes escape on
// each part, which must be a valid action segment.
func unescapeList(s string, path bool) ([]string, error) {
	var out []string
	var b strings.Builder
	flush := func() error {
		lit := b.String()
		b.Reset()
		if path {
			if _, err := action.ParsePattern("fs.read." + lit); err != nil {
				return fmt.Errorf("%q is not a path", lit)
			}
		} else if a, err := action.ParseAction(lit); err != nil || len(a) != 1 {
			return fmt.Errorf("%q is not an action segment", lit)
		}
		out = append(out, lit)
		return nil
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			if i+1 == len(s) || strings.IndexByte(special, s[i+1]) < 0 {
				return nil, errors.New("a \\ escapes only \\, <, > and ,")
			}
			i++
			b.WriteByte(s[i])
		case c == ',':
			if err := flush(); err != nil {
				return nil, err
			}
		case c == '<' || c == '>':
			return nil, fmt.Errorf("an unescaped %q", c)
		default:
			b.WriteByte(c)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// MarshalJSON writes {"segments":["exec","path",{"not":["curl","gh"]}],"more":false}:
// a literal as a string, any other segment as {"not":[...]}.
func (r Region) MarshalJSON() ([]byte, error) {
	segs := make([]any, len(r.Segs))
	for i, g := range r.Segs {
		if g.Other {
			not := g.Not
			if not == nil {
				not = []string{}
			}
			segs[i] = struct {
				Not []string `json:"not"`
				In  []string `json:"in,omitempty"`
				Out []string `json:"out,omitempty"`
			}{not, g.In, g.Out}
		} else {
			segs[i] = g.Lit
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(struct {
		Segments []any `json:"segments"`
		More     bool  `json:"more"`
	}{segs, r.More})
	return bytes.TrimRight(b.Bytes(), "\n"), err
}

// DefaultMax is the most regions a walk visits unless told otherwise.
// Policies written as chock's namespaces are (literal prefixes, trailing
// '*') stay far below it: 10,000 rules make about 20,000 regions.
const DefaultMax = 100_000

// PerPattern is how many regions Limit allows each pattern beyond
// DefaultMax: such policies make about two a pattern.
const PerPattern = 8

// Limit is the cap for a walk over n patterns: DefaultMax, or PerPattern
// regions a pattern when that is more. Real policies of any size stay
// under it; patterns built to multiply regions (their number grows as
// about 4^k with k positions of '*' between literals) meet it at once,
// and the work stays linear in the policy's size.
func Limit(n int) int { return max(DefaultMax, PerPattern*n) }

// LimitError ends a walk that would visit more than Max regions.
type LimitError struct{ Max int }

func (e *LimitError) Error() string {
	return fmt.Sprintf("the patterns split the action space into more than %d regions (a '*' between literals, at many positions, multiplies them)", e.Max)
}

// SkipAll, returned by a visit function, ends the walk at once; Walk then
// returns no error.
var SkipAll = errors.New("skip every region left")

// Options bound a walk.
type Options struct {
	// Whole walks the whole action space. Otherwise the walk visits only
	// the regions that hold an action some Focus pattern matches (none
	// when Focus is empty).
	Whole bool
	Focus []action.Pattern
	// Max is the most regions visited (DefaultMax when 0); one more ends
	// the walk with a *LimitError.
	Max int
}

// Walk partitions the action space by the patterns laid out in shapes
// (their union) and the focus patterns, and calls visit with each region,
// in a fixed order: a prefix itself, then its other-segment branch, then
// its literal branches in order. Each region holds actions whose match is
// the same for every pattern of every shape and every focus pattern (so a
// region lies wholly inside the focus): witness is one of them
// (Region.Witness). The region and witness are valid during the call only;
// Clone keeps one. n is the number of regions visited.
//
// For the regions to be exact, every pattern the caller decides with must
// be in shapes or in the focus.
func Walk(shapes []action.Shape, o Options, visit func(r Region, witness action.Action) error) (n int, err error) {
	w := &walker{visit: visit, max: o.Max}
	if w.max <= 0 {
		w.max = DefaultMax
	}
	var focus []action.Pattern
	if !o.Whole {
		if len(o.Focus) == 0 {
			return 0, nil
		}
		focus = o.Focus
		var t action.Trie[struct{}]
		for _, p := range focus {
			t.Insert(p, struct{}{})
		}
		shapes = append(slices.Clip(shapes), t.Shape())
	}
	err = w.node(shapes, 0, focus, o.Whole)
	if errors.Is(err, SkipAll) {
		err = nil
	}
	return w.n, err
}

type walker struct {
	visit func(Region, action.Action) error
	max   int
	n     int
	segs  []Seg
	wit   action.Action
}

func (w *walker) emit(more bool) error {
	w.n++
	if w.n > w.max {
		w.n = w.max
		return &LimitError{Max: w.max}
	}
	wit := w.wit
	if more {
		wit = append(wit, "x")
	}
	return w.visit(Region{Segs: w.segs, More: more}, wit)
}

// node walks the actions below the prefix w.segs (length d). shapes are
// the patterns' layout after the prefix; focus the focus patterns that
// match the prefix with no trailing '*' in it; all says that everything
// from here down is in focus.
func (w *walker) node(shapes []action.Shape, d int, focus []action.Pattern, all bool) error {
	if d > 0 && action.PathHead(segLits(w.segs[:d-1])) {
		// Past the path of an fs action: no action is longer.
		self := all
		for _, f := range focus {
			self = self || f.Len() == d || f.Kind(d-1) == action.Trailing
		}
		if self {
			return w.emit(false)
		}
		return nil
	}
	self, ext := all, all
	var alive []action.Pattern
	for _, f := range focus {
		switch {
		case f.Len() == d:
			self = true // f names actions of exactly this prefix
		case f.Kind(d) == action.Trailing:
			ext = true // f takes every longer action
		default:
			alive = append(alive, f)
		}
	}
	if d > 0 && self {
		if err := w.emit(false); err != nil {
			return err
		}
	}
	if d == action.MaxSegments || (!ext && len(alive) == 0) {
		return nil
	}
	leaf := true
	for _, s := range shapes {
		if s.NumLiterals() > 0 {
			leaf = false
			break
		}
		if _, ok := s.Star(); ok {
			leaf = false
			break
		}
	}
	if leaf {
		// No pattern looks at position d or later: every longer action
		// matches as one.
		return w.emit(true)
	}

	// Which branches hold actions in focus: all of them when everything
	// is, or a focus pattern has '*' here; else the literals the focus
	// patterns name.
	full := ext
	var stars []action.Pattern
	byLit := map[string][]action.Pattern{}
	for _, f := range alive {
		if f.Kind(d) == action.Star {
			stars = append(stars, f)
			full = true
		} else {
			lit := f.Segments()[d]
			byLit[lit] = append(byLit[lit], f)
		}
	}
	// (Every focus literal is in a shape: Walk adds the focus patterns'.)
	var lits []string // the literals of the shapes here, sorted
	if full {
		lits = shapeLiterals(shapes)
	}

	var globbed []globShape
	for _, s := range shapes {
		s.Globs(func(g *action.Glob, next action.Shape) bool {
			globbed = append(globbed, globShape{g, next})
			return true
		})
	}
	var focusGlobs []action.Pattern
	for _, f := range alive {
		if f.Kind(d) == action.PathGlob {
			focusGlobs = append(focusGlobs, f)
		}
	}
	if len(globbed) > 0 || len(focusGlobs) > 0 {
		return w.globCells(shapes, d, alive, stars, ext, globbed)
	}
	if full {
		var next []action.Shape
		for _, s := range shapes {
			if c, ok := s.Star(); ok {
				next = append(next, c)
			}
		}
		g := Seg{Other: true, Not: lits}
		if err := w.branch(next, d, g, fresh(lits), stars, ext); err != nil {
			return err
		}
	}

	branchLits := lits
	if !full {
		branchLits = slices.Sorted(maps.Keys(byLit))
	}
	for _, lit := range branchLits {
		f := append(slices.Clip(stars), byLit[lit]...)
		if !ext && len(f) == 0 {
			continue
		}
		var next []action.Shape
		for _, s := range shapes {
			if c, ok := s.Literal(lit); ok {
				next = append(next, c)
			}
			if c, ok := s.Star(); ok {
				next = append(next, c)
			}
		}
		if err := w.branch(next, d, Seg{Lit: lit}, lit, f, ext); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) branch(shapes []action.Shape, d int, g Seg, wit string, focus []action.Pattern, all bool) error {
	w.segs = append(w.segs, g)
	w.wit = append(w.wit, wit)
	err := w.node(shapes, d+1, focus, all)
	w.segs = w.segs[:d]
	w.wit = w.wit[:d]
	return err
}

// segLits are the literals of segs, or nil when one is not a literal.
func segLits(segs []Seg) []string {
	out := make([]string, len(segs))
	for i, g := range segs {
		if g.Other {
			return nil
		}
		out[i] = g.Lit
	}
	return out
}

// globShape is a path glob some pattern has next, and the shape after it.
type globShape struct {
	glob  *action.Glob
	shape action.Shape
}

// globCells walks position d, the path of an fs action, where path globs
// stand beside the literals: the literals each as a branch, and every
// other path split into cells by which globs match it (action.Explore),
// each a branch whose witness is one of its paths. Which branches hold
// actions in focus: every one when everything below is, or a focus
// pattern has '*' here; else those a focus literal or glob names.
func (w *walker) globCells(shapes []action.Shape, d int, alive, stars []action.Pattern, ext bool, globbed []globShape) error {
	var texts []string
	byText := map[string][]globShape{}
	for _, g := range globbed {
		if _, ok := byText[g.glob.String()]; !ok {
			texts = append(texts, g.glob.String())
		}
		byText[g.glob.String()] = append(byText[g.glob.String()], g)
	}
	var focusGlobs []action.Pattern
	byLit := map[string][]action.Pattern{}
	for _, f := range alive {
		switch f.Kind(d) {
		case action.PathGlob:
			focusGlobs = append(focusGlobs, f)
			if _, ok := byText[f.Glob().String()]; !ok {
				texts = append(texts, f.Glob().String())
				byText[f.Glob().String()] = nil
			}
		case action.Literal:
			lit := f.Segments()[d]
			byLit[lit] = append(byLit[lit], f)
		}
	}
	slices.Sort(texts)
	lits := shapeLiterals(shapes)
	all := ext || len(stars) > 0
	starNext := func() []action.Shape {
		var next []action.Shape
		for _, s := range shapes {
			if c, ok := s.Star(); ok {
				next = append(next, c)
			}
		}
		return next
	}
	inFocus := func(matches func(*action.Glob) bool, lit string, isLit bool) []action.Pattern {
		f := slices.Clip(stars)
		for _, p := range focusGlobs {
			if matches(p.Glob()) {
				f = append(f, p)
			}
		}
		if isLit {
			f = append(f, byLit[lit]...)
		}
		return f
	}
	// The literals.
	for _, lit := range lits {
		next := starNext()
		for _, s := range shapes {
			if c, ok := s.Literal(lit); ok {
				next = append(next, c)
			}
		}
		for _, t := range texts {
			for _, g := range byText[t] {
				if g.glob.Matches(lit) {
					next = append(next, g.shape)
				}
			}
		}
		f := inFocus(func(g *action.Glob) bool { return g.Matches(lit) }, lit, true)
		if !all && len(f) == 0 {
			continue
		}
		if err := w.branch(next, d, Seg{Lit: lit}, lit, f, ext); err != nil {
			return err
		}
	}
	// The cells of the other paths.
	langs := make([]action.PathLang, 0, len(texts)+len(lits))
	for _, t := range texts {
		langs = append(langs, action.GlobLang(globOf(t)))
	}
	for _, l := range lits {
		langs = append(langs, action.LiteralLang(l))
	}
	var cells []cell
	err := exploreCached(texts, lits, langs, func(in []bool, wit string) bool {
		for k := range lits {
			if in[len(texts)+k] {
				return true // a literal's own branch
			}
		}
		cells = append(cells, cell{in, wit})
		return true
	})
	if err != nil {
		return &LimitError{Max: w.max}
	}
	for _, c := range cells {
		g := Seg{Other: true, wit: c.wit}
		next := starNext()
		for k, t := range texts {
			if c.in[k] {
				g.In = append(g.In, t)
				for _, gs := range byText[t] {
					next = append(next, gs.shape)
				}
			} else if len(g.In) == 0 || meets(cells, c.in, k) {
				g.Out = append(g.Out, t)
			}
		}
		if len(g.In) > 0 {
			// Out only the globs some path of the cell's In globs meets.
			g.Out = nil
			for k, t := range texts {
				if !c.in[k] && meets(cells, c.in, k) {
					g.Out = append(g.Out, t)
				}
			}
		}
		for _, l := range lits {
			if inCell(g, l) {
				g.Not = append(g.Not, l)
			}
		}
		if g.Not == nil {
			g.Not = []string{}
		}
		f := inFocus(func(gl *action.Glob) bool { return slices.Contains(g.In, gl.String()) }, "", false)
		if !all && len(f) == 0 {
			continue
		}
		if err := w.branch(next, d, g, c.wit, f, ext); err != nil {
			return err
		}
	}
	return nil
}

// meets says whether some cell holds every glob in does and glob k too.
func meets(cells []cell, in []bool, k int) bool {
	for _, c := range cells {
		if !c.in[k] {
			continue
		}
		all := true
		for j, v := range in {
			if v && !c.in[j] {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// cellsCache keeps the cells of recent sets of globs and literals: every
// walk of a project meets chock's file defaults at the same positions.
var cellsCache struct {
	sync.Mutex
	m map[string][]cell
}

type cell struct {
	in  []bool
	wit string
}

// exploreCached is action.Explore over langs (the globs texts, then the
// literals lits), its cells remembered.
func exploreCached(texts, lits []string, langs []action.PathLang, visit func([]bool, string) bool) error {
	key := strings.Join(texts, "\x00") + "\x01" + strings.Join(lits, "\x00")
	cellsCache.Lock()
	cells, ok := cellsCache.m[key]
	cellsCache.Unlock()
	if !ok {
		err := action.Explore(langs, func(in []bool, wit string) bool {
			cells = append(cells, cell{slices.Clone(in), wit})
			return true
		})
		if err != nil {
			return err
		}
		cellsCache.Lock()
		if cellsCache.m == nil || len(cellsCache.m) >= 256 {
			cellsCache.m = map[string][]cell{}
		}
		cellsCache.m[key] = cells
		cellsCache.Unlock()
	}
	for _, c := range cells {
		if !visit(c.in, c.wit) {
			return nil
		}
	}
	return nil
}

// shapeLiterals are the literals the shapes have next, sorted, each once.
func shapeLiterals(shapes []action.Shape) []string {
	seen := map[string]bool{}
	var lits []string
	for _, s := range shapes {
		for lit := range s.Literals {
			if !seen[lit] {
				seen[lit] = true
				lits = append(lits, lit)
			}
		}
	}
	slices.Sort(lits)
	return lits
}
