package region

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chockhq/chock/compile/action"
)

// TestWalkPathGlobs: over path globs and literals, the regions of a whole
// walk partition the sample paths (each lies in exactly one), every
// pattern matches all of a region's paths or none, each witness lies in
// its region, and a region's text parses back to the same region.
func TestWalkPathGlobs(t *testing.T) {
	pats := []string{"fs.read.~/.ssh/**", "fs.read.~/.ssh/known_hosts", "fs.read.**/.env", "fs.read.**/.env.*",
		"fs.read.a/**/b", "fs.read.*.pem", "fs.read.*", "fs.write..git/hooks/**", "fs.write..git/config", "fs.*"}
	var tr action.Trie[string]
	var ps []action.Pattern
	for _, p := range pats {
		pp := action.MustPattern(p)
		ps = append(ps, pp)
		tr.Insert(pp, p)
	}
	var regions []Region
	_, err := Walk([]action.Shape{tr.Shape()}, Options{Whole: true}, func(r Region, w action.Action) error {
		if !r.Contains(w) {
			t.Errorf("witness %s is not in %s", w, r)
		}
		back, err := Parse(r.String())
		if err != nil || back.String() != r.String() {
			t.Errorf("%s parses back as %v (%v)", r, back, err)
		}
		regions = append(regions, r.Clone())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var samples []action.Action
	for _, verb := range []string{"read", "write"} {
		for _, p := range []string{"x", ".env", "a/.env", "a/.env.local", ".env.x", "~/.env", "/x/.env", "~/.ssh", "~/.ssh/id", "~/.ssh/known_hosts",
			"~/.ssh/a/b", "a/b", "a/x/b", "a/x/y/b", "b", "x.pem", "a/x.pem", ".git/config", ".git/hooks/pre-commit", ".git/hooks", "~", "/", "/etc/hosts"} {
			a, err := action.ParseAction("fs." + verb + "." + p)
			if err != nil {
				t.Fatal(err)
			}
			samples = append(samples, a)
		}
	}
	vector := func(a action.Action) string {
		var v []bool
		for _, p := range ps {
			v = append(v, p.Matches(a))
		}
		return fmt.Sprint(v)
	}
	in := map[int]string{}
	for _, a := range samples {
		var hits []int
		for i, r := range regions {
			if r.Contains(a) {
				hits = append(hits, i)
			}
		}
		if len(hits) != 1 {
			t.Errorf("%s lies in %d regions: %v", a, len(hits), hits)
			continue
		}
		if v, ok := in[hits[0]]; ok && v != vector(a) {
			t.Errorf("%s: the patterns tell apart the paths of region %s", a, regions[hits[0]])
		}
		in[hits[0]] = vector(a)
		if w := regions[hits[0]].Witness(); vector(w) != vector(a) {
			t.Errorf("region %s: its witness %s and %s are matched apart", regions[hits[0]], w, a)
		}
	}
	if !slices.ContainsFunc(regions, func(r Region) bool { return len(r.Segs) == 3 && len(r.Segs[2].In) > 0 }) {
		t.Error("no region is a cell of globs")
	}
}
