// Package udiff writes the unified diff of two texts, line by line, as
// gofmt -d and diff -u do: a "diff OLD NEW" line, the --- and +++ file
// lines, then hunks with three lines of context.
//
// Lines are matched as patience diff matches them: lines that occur once
// in each side anchor the match (the longest run of them in the same
// order), the common lines next to each anchor are matched out from it,
// and what lies between anchors is matched the same way, recursively; a
// stretch with no unique line is matched by dynamic programming when it
// is small, and shown as removed and added when it is not. Every step is
// O(n log n) or bounded, so a large file with many changes stays cheap.
package udiff

import (
	"bytes"
	"fmt"
	"sort"
)

// context is the number of unchanged lines shown around each change.
const context = 3

// dpLimit bounds the cells of one dynamic-programming match.
const dpLimit = 1 << 16

// Unified returns the unified diff that turns old into new, or nil when
// they are equal. oldName and newName name the two sides in the header.
func Unified(oldName, newName string, old, new []byte) []byte {
	if bytes.Equal(old, new) {
		return nil
	}
	x, y := lines(old), lines(new)
	m := matches(x, y)
	var b bytes.Buffer
	fmt.Fprintf(&b, "diff %s %s\n--- %s\n+++ %s\n", oldName, newName, oldName, newName)
	for _, h := range hunks(m, len(x), len(y)) {
		writeHunk(&b, h, x, y, m)
	}
	return b.Bytes()
}

// lines splits s after each newline; the last line may lack one.
func lines(s []byte) []string {
	var out []string
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, string(s))
			break
		}
		out = append(out, string(s[:i+1]))
		s = s[i+1:]
	}
	return out
}

// pair is a line of x matched with an equal line of y.
type pair struct{ x, y int }

// matches returns the matched lines of x and y, increasing in both.
func matches(x, y []string) []pair {
	var out []pair
	match(x, y, 0, len(x), 0, len(y), &out)
	return out
}

// match appends the matches of x[x0:x1] and y[y0:y1], in order.
func match(x, y []string, x0, x1, y0, y1 int, out *[]pair) {
	// The common prefix and suffix match as they stand.
	for x0 < x1 && y0 < y1 && x[x0] == y[y0] {
		*out = append(*out, pair{x0, y0})
		x0, y0 = x0+1, y0+1
	}
	var suffix []pair
	for x0 < x1 && y0 < y1 && x[x1-1] == y[y1-1] {
		x1, y1 = x1-1, y1-1
		suffix = append(suffix, pair{x1, y1})
	}
	defer func() {
		for i := len(suffix) - 1; i >= 0; i-- {
			*out = append(*out, suffix[i])
		}
	}()
	if x0 == x1 || y0 == y1 {
		return
	}
	anchors := unique(x, y, x0, x1, y0, y1)
	if len(anchors) == 0 {
		if (x1-x0)*(y1-y0) <= dpLimit {
			lcs(x, y, x0, x1, y0, y1, out)
		}
		return
	}
	px, py := x0, y0
	for _, a := range anchors {
		match(x, y, px, a.x, py, a.y, out)
		*out = append(*out, a)
		px, py = a.x+1, a.y+1
	}
	match(x, y, px, x1, py, y1, out)
}

// unique returns the longest increasing run of pairs of lines that occur
// exactly once in x[x0:x1] and once in y[y0:y1] (patience sorting).
func unique(x, y []string, x0, x1, y0, y1 int) []pair {
	type seen struct{ nx, ny, ix, iy int }
	count := map[string]*seen{}
	for i := x0; i < x1; i++ {
		s := count[x[i]]
		if s == nil {
			s = &seen{}
			count[x[i]] = s
		}
		s.nx++
		s.ix = i
	}
	for i := y0; i < y1; i++ {
		if s := count[y[i]]; s != nil {
			s.ny++
			s.iy = i
		}
	}
	var ps []pair
	for i := x0; i < x1; i++ {
		if s := count[x[i]]; s.nx == 1 && s.ny == 1 {
			ps = append(ps, pair{s.ix, s.iy})
		}
	}
	if len(ps) == 0 {
		return nil
	}
	// The longest run increasing in y among pairs increasing in x: piles
	// hold the index of the pair ending the best run of each length.
	var piles []int
	prev := make([]int, len(ps))
	for i, p := range ps {
		k := sort.Search(len(piles), func(j int) bool { return ps[piles[j]].y > p.y })
		prev[i] = -1
		if k > 0 {
			prev[i] = piles[k-1]
		}
		if k == len(piles) {
			piles = append(piles, i)
		} else {
			piles[k] = i
		}
	}
	run := make([]pair, len(piles))
	for i, k := len(piles)-1, piles[len(piles)-1]; i >= 0; i, k = i-1, prev[k] {
		run[i] = ps[k]
	}
	return run
}

// lcs appends a longest common subsequence of x[x0:x1] and y[y0:y1].
func lcs(x, y []string, x0, x1, y0, y1 int, out *[]pair) {
	n, m := x1-x0, y1-y0
	// t[i][j] is the LCS length of x[x0+i:x1] and y[y0+j:y1].
	t := make([][]int32, n+1)
	for i := range t {
		t[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case x[x0+i] == y[y0+j]:
				t[i][j] = t[i+1][j+1] + 1
			case t[i+1][j] >= t[i][j+1]:
				t[i][j] = t[i+1][j]
			default:
				t[i][j] = t[i][j+1]
			}
		}
	}
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case x[x0+i] == y[y0+j]:
			*out = append(*out, pair{x0 + i, y0 + j})
			i, j = i+1, j+1
		case t[i+1][j] >= t[i][j+1]:
			i++
		default:
			j++
		}
	}
}

// hunk is a range of x and of y shown together: [x0,x1) and [y0,y1).
type hunk struct{ x0, x1, y0, y1 int }

// hunks groups the changes between the matches m into hunks with their
// context; changes closer than twice the context share a hunk.
func hunks(m []pair, nx, ny int) []hunk {
	// The changes: each gap between consecutive matches (and before the
	// first and after the last) that is not empty on both sides.
	type change struct{ x0, x1, y0, y1 int }
	var cs []change
	px, py := 0, 0
	for _, p := range append(m, pair{nx, ny}) {
		if p.x > px || p.y > py {
			cs = append(cs, change{px, p.x, py, p.y})
		}
		px, py = p.x+1, p.y+1
	}
	var hs []hunk
	for _, c := range cs {
		h := hunk{max(c.x0-context, 0), min(c.x1+context, nx), max(c.y0-context, 0), min(c.y1+context, ny)}
		if n := len(hs); n > 0 && h.x0 <= hs[n-1].x1 {
			hs[n-1].x1, hs[n-1].y1 = h.x1, h.y1
			continue
		}
		hs = append(hs, h)
	}
	return hs
}

// writeHunk writes h: its header, then each line with ' ', '-' or '+'.
func writeHunk(b *bytes.Buffer, h hunk, x, y []string, m []pair) {
	start := func(from, n int) int {
		if n == 0 {
			return from
		}
		return from + 1
	}
	fmt.Fprintf(b, "@@ -%d,%d +%d,%d @@\n", start(h.x0, h.x1-h.x0), h.x1-h.x0, start(h.y0, h.y1-h.y0), h.y1-h.y0)
	i := sort.Search(len(m), func(k int) bool { return m[k].x >= h.x0 })
	px, py := h.x0, h.y0
	emit := func(mark byte, line string) {
		b.WriteByte(mark)
		b.WriteString(line)
		if len(line) == 0 || line[len(line)-1] != '\n' {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
	for ; ; i++ {
		nx, ny := h.x1, h.y1
		if i < len(m) && m[i].x < h.x1 {
			nx, ny = m[i].x, m[i].y
		}
		for ; px < nx; px++ {
			emit('-', x[px])
		}
		for ; py < ny; py++ {
			emit('+', y[py])
		}
		if i >= len(m) || m[i].x >= h.x1 {
			return
		}
		emit(' ', x[px])
		px, py = px+1, py+1
	}
}
