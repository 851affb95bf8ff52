package action

// This file answers questions about sets of paths exactly: whether two
// path patterns share a path, whether one holds every path of another,
// and into which cells a set of them splits the paths (package region
// walks the cells). Each pattern is a regular language (its glob's RE2);
// a breadth-first walk of the product of their automata over the few
// characters that tell them apart meets a shortest path of every cell.

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxPathStates bounds the product states one question visits; past it
// the question has no exact answer (ErrPathStates).
const MaxPathStates = 50_000

// ErrPathStates is a set of path patterns too intricate to compare
// within MaxPathStates.
var ErrPathStates = fmt.Errorf("the path patterns are too intricate to compare (more than %d states)", MaxPathStates)

// validPathRE is every path an action may name (checkPath with glob
// false): "/", "~", or names of no '/' or '*', none "." or "..", each
// after a '/', rooted at "/", "~/" or nothing.
const validPathRE = `(?:/|~|(?:/|~/)?` + pathName + `(?:/` + pathName + `)*)`

const pathName = `(?:[^/*.][^/*]*|\.[^/*.][^/*]*|\.\.[^/*]+)`

// notRelativeRE is every path that is not relative.
const notRelativeRE = `(?:/.*|~|~/.*)`

// PathLang is one pattern's path segment as a set of paths: a literal, a
// glob, or any path ('*').
type PathLang struct {
	pos *syntax.Prog
	neg *syntax.Prog // paths it leaves out (a relative glob: the non-relative ones)
}

// LangOf is segment i of pattern p as a set of paths.
func LangOf(p Pattern, i int) PathLang {
	switch p.Kind(i) {
	case PathGlob:
		return GlobLang(p.glob)
	case Literal:
		return LiteralLang(p.segs[i])
	}
	return PathLang{pos: mustProg(`.+`)}
}

// GlobLang is the paths glob g matches.
func GlobLang(g *Glob) PathLang {
	l := PathLang{pos: mustProg(g.Regexp())}
	if g.form == Relative {
		l.neg = mustProg(notRelativeRE)
	}
	return l
}

// LiteralLang is the one path lit.
func LiteralLang(lit string) PathLang { return PathLang{pos: mustProg(regexp.QuoteMeta(lit))} }

func mustProg(re string) *syntax.Prog {
	r, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		panic("action: path regexp " + re + ": " + err.Error())
	}
	p, err := syntax.Compile(r.Simplify())
	if err != nil {
		panic("action: path regexp " + re + ": " + err.Error())
	}
	return p
}

var validProg = mustProg(validPathRE)

// nfa is a set of a program's instructions, sorted.
type nfa []uint32

func closure(p *syntax.Prog, from []uint32) nfa {
	var out nfa
	seen := map[uint32]bool{}
	var add func(pc uint32)
	add = func(pc uint32) {
		if seen[pc] {
			return
		}
		seen[pc] = true
		i := &p.Inst[pc]
		switch i.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			add(i.Out)
			add(i.Arg)
		case syntax.InstCapture, syntax.InstNop:
			add(i.Out)
		case syntax.InstMatch, syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			out = append(out, pc)
		}
	}
	for _, pc := range from {
		add(pc)
	}
	slices.Sort(out)
	return out
}

func step(p *syntax.Prog, s nfa, r rune) nfa {
	var next []uint32
	for _, pc := range s {
		i := &p.Inst[pc]
		ok := false
		switch i.Op {
		case syntax.InstRune:
			ok = i.MatchRune(r)
		case syntax.InstRune1:
			ok = r == i.Rune[0]
		case syntax.InstRuneAny:
			ok = true
		case syntax.InstRuneAnyNotNL:
			ok = r != '\n'
		}
		if ok {
			next = append(next, i.Out)
		}
	}
	return closure(p, next)
}

func accepts(p *syntax.Prog, s nfa) bool {
	for _, pc := range s {
		if p.Inst[pc].Op == syntax.InstMatch {
			return true
		}
	}
	return false
}

// alphabet is one character of each class the programs tell apart, that
// a path may hold: the ends of every range they test, and 'x'.
func alphabet(progs []*syntax.Prog) []rune {
	set := map[rune]bool{'x': true, '/': true, '~': true, '.': true}
	for _, p := range progs {
		for _, i := range p.Inst {
			switch i.Op {
			case syntax.InstRune1:
				set[i.Rune[0]] = true
			case syntax.InstRune:
				for k := 0; k+1 < len(i.Rune); k += 2 {
					set[i.Rune[k]], set[i.Rune[k+1]], set[i.Rune[k]-1], set[i.Rune[k+1]+1] = true, true, true, true
				}
			}
		}
	}
	var out []rune
	for r := range set {
		if r >= 0 && r <= utf8.MaxRune && utf8.ValidRune(r) && r != '*' && !badRune(r) {
			out = append(out, r)
		}
	}
	// 'x' first, then letters and digits, then the rest: the walk meets
	// the witnesses a person reads best first.
	rank := func(r rune) int {
		switch {
		case r == 'x':
			return 0
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z':
			return 1
		}
		return 2
	}
	slices.SortFunc(out, func(a, b rune) int {
		if rank(a) != rank(b) {
			return rank(a) - rank(b)
		}
		return int(a - b)
	})
	return out
}

// errStop ends Explore early.
var errStop = errors.New("stop")

// Explore walks the paths an action may name, split by which of langs
// hold them: visit is called once for each combination that some path
// has (in[k] says langs[k] holds it) with one of its shortest paths, in
// order of length, until it returns false. More than MaxPathStates
// states is ErrPathStates.
func Explore(langs []PathLang, visit func(in []bool, witness string) bool) error {
	progs := []*syntax.Prog{validProg}
	for _, l := range langs {
		progs = append(progs, l.pos)
		if l.neg != nil {
			progs = append(progs, l.neg)
		}
	}
	sigma := alphabet(progs)
	type state struct {
		sets []nfa
		path string
	}
	var kb []byte
	key := func(sets []nfa) string {
		kb = kb[:0]
		for _, s := range sets {
			for _, pc := range s {
				kb = strconv.AppendUint(kb, uint64(pc), 36)
				kb = append(kb, ',')
			}
			kb = append(kb, '|')
		}
		return string(kb)
	}
	start := make([]nfa, len(progs))
	for k, p := range progs {
		start[k] = closure(p, []uint32{uint32(p.Start)})
	}
	seen := map[string]bool{key(start): true}
	done := map[string]bool{}
	queue := []state{{sets: start}}
	for len(queue) > 0 {
		st := queue[0]
		queue = queue[1:]
		if st.path != "" && accepts(progs[0], st.sets[0]) {
			in := make([]bool, len(langs))
			k := 1
			for j, l := range langs {
				in[j] = accepts(l.pos, st.sets[k])
				k++
				if l.neg != nil {
					in[j] = in[j] && !accepts(l.neg, st.sets[k])
					k++
				}
			}
			ck := fmt.Sprint(in)
			if !done[ck] {
				done[ck] = true
				if !visit(in, st.path) {
					return nil
				}
			}
		}
		for _, r := range sigma {
			next := make([]nfa, len(progs))
			dead := false
			for k, p := range progs {
				next[k] = step(p, st.sets[k], r)
				if k == 0 && len(next[k]) == 0 {
					dead = true // no valid path goes on from here
					break
				}
			}
			if dead {
				continue
			}
			kk := key(next)
			if seen[kk] {
				continue
			}
			if len(seen) >= MaxPathStates {
				return ErrPathStates
			}
			seen[kk] = true
			queue = append(queue, state{sets: next, path: st.path + string(r)})
		}
	}
	return nil
}

// segsOverlap says whether segment i of p and of q share a path (or a
// segment, outside path tails).
func segsOverlap(p, q Pattern, i int) bool {
	kp, kq := p.Kind(i), q.Kind(i)
	if kp != PathGlob && kq != PathGlob {
		return true // literals were compared already; '*' takes anything
	}
	switch {
	case kp == Star || kq == Star:
		return true
	case kp == Literal:
		return q.glob.Matches(p.segs[i])
	case kq == Literal:
		return p.glob.Matches(q.segs[i])
	}
	both := false
	err := Explore([]PathLang{LangOf(p, i), LangOf(q, i)}, func(in []bool, _ string) bool {
		both = in[0] && in[1]
		return !both
	})
	return both || err != nil // too intricate to tell: they may
}

// globCovers says whether p's path glob at segment i holds every path
// segment i of q holds.
func globCovers(p, q Pattern, i int) bool {
	switch q.Kind(i) {
	case Literal:
		return p.glob.Matches(q.segs[i])
	case PathGlob:
		out := false
		err := Explore([]PathLang{LangOf(p, i), LangOf(q, i)}, func(in []bool, _ string) bool {
			out = in[1] && !in[0]
			return !out
		})
		return !out && err == nil
	}
	return false
}

// parsePathPattern parses a pattern of a path family: the segments before
// the path as any pattern's, the path as one segment (t is its offset).
func parsePathPattern(s string, t int) (Pattern, error) {
	head, err := parsePlainPattern(s[:t] + "x")
	if err != nil {
		return Pattern{}, err
	}
	tail := s[t:]
	segs := append(slices.Clip(head.segs[:len(head.segs)-1]), tail)
	if tail == "*" {
		return Pattern{text: s, segs: segs}, nil
	}
	if err := pathErr(tail, t, true); err != nil {
		return Pattern{}, err
	}
	p := Pattern{text: s, segs: segs}
	if IsPathGlob(tail) {
		p.glob = newGlob(tail)
	}
	return p, nil
}

// parsePathAction parses an action of a path family.
func parsePathAction(s string, t int) (Action, error) {
	head, err := parsePlainAction(s[:t] + "x")
	if err != nil {
		return nil, err
	}
	tail := s[t:]
	if err := pathErr(tail, t, false); err != nil {
		return nil, err
	}
	return append(head[:len(head)-1:len(head)-1], tail), nil
}

// pathErr checks a path and its characters, with errors at offsets in
// the whole text (the path starts at t).
func pathErr(tail string, t int, glob bool) error {
	for i := 0; i < len(tail); {
		r, n := utf8.DecodeRuneInString(tail[i:])
		if badRune(r) {
			return perr(ErrBadChar, t+i, "path holds "+describeRune(tail[i:], r, n),
				"a path in an action has no white space, control characters or invisible format characters")
		}
		i += n
	}
	if off, msg, hint := checkPath(tail, glob); off >= 0 {
		kind := ErrEmptySeg
		if strings.Contains(msg, "'*'") {
			kind = ErrPartialGlob
		}
		return perr(kind, t+off, msg, hint)
	}
	return nil
}
