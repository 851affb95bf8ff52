package region

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/action"
)

// words are the literals of the random patterns; actions also draw fresh
// segments, which no pattern names.
var words = []string{"exec", "path", "gh", "mcp", "tool", "x", "x2"}

func randPattern(r *rand.Rand) action.Pattern {
	for {
		n := 1 + r.IntN(5)
		segs := make([]string, n)
		for i := range segs {
			if r.IntN(3) == 0 {
				segs[i] = "*"
			} else {
				segs[i] = words[r.IntN(len(words))]
			}
		}
		if p, err := action.ParsePattern(strings.Join(segs, ".")); err == nil {
			return p
		}
	}
}

func randAction(r *rand.Rand) action.Action {
	a := make(action.Action, 1+r.IntN(7))
	for i := range a {
		if r.IntN(4) == 0 {
			a[i] = "fresh" + string(rune('a'+r.IntN(3)))
		} else {
			a[i] = words[r.IntN(len(words))]
		}
	}
	return a
}

// patternSet is random patterns spread over a few tries.
func patternSet(r *rand.Rand) ([]action.Pattern, []action.Shape) {
	tries := make([]action.Trie[int], 1+r.IntN(3))
	var pats []action.Pattern
	for i := 0; i < 1+r.IntN(14); i++ {
		p := randPattern(r)
		pats = append(pats, p)
		tries[r.IntN(len(tries))].Insert(p, i)
	}
	shapes := make([]action.Shape, len(tries))
	for i := range tries {
		shapes[i] = tries[i].Shape()
	}
	return pats, shapes
}

func matchVector(pats []action.Pattern, a action.Action) string {
	var b strings.Builder
	for _, p := range pats {
		if p.Matches(a) {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	return b.String()
}

type visited struct {
	r   Region
	wit action.Action
}

func walkAll(t *testing.T, shapes []action.Shape, o Options) []visited {
	t.Helper()
	var out []visited
	n, err := Walk(shapes, o, func(r Region, wit action.Action) error {
		out = append(out, visited{r.Clone(), slices.Clone(wit)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(out) {
		t.Fatalf("Walk counted %d regions, visited %d", n, len(out))
	}
	return out
}

// TestPartitionAgainstBruteForce: on random pattern sets, the whole walk's
// regions are disjoint and cover every action, each witness lies in its
// region, and every action matches exactly the patterns its region's
// witness matches.
func TestPartitionAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for round := 0; round < 300; round++ {
		pats, shapes := patternSet(r)
		regions := walkAll(t, shapes, Options{Whole: true})
		for _, v := range regions {
			if !v.r.Contains(v.wit) {
				t.Fatalf("%v: witness %s is not in region %s", pats, v.wit, v.r)
			}
			if got := v.r.Witness(); got.String() != v.wit.String() {
				t.Fatalf("region %s: Witness() %s, walk gave %s", v.r, got, v.wit)
			}
		}
		for k := 0; k < 500; k++ {
			a := randAction(r)
			var in []visited
			for _, v := range regions {
				if v.r.Contains(a) {
					in = append(in, v)
				}
			}
			if len(in) != 1 {
				t.Fatalf("%v: action %s lies in %d regions", pats, a, len(in))
			}
			if got, want := matchVector(pats, in[0].wit), matchVector(pats, a); got != want {
				t.Fatalf("%v: action %s matches %s, its region %s's witness %s matches %s", pats, a, want, in[0].r, in[0].wit, got)
			}
		}
	}
}

// TestFocusAgainstBruteForce: a walk bounded by focus patterns visits
// exactly regions of the whole walk (the same witnesses' match), and
// every action a focus pattern matches lies in one of them.
func TestFocusAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	for round := 0; round < 300; round++ {
		pats, shapes := patternSet(r)
		var focus []action.Pattern
		for _, p := range pats {
			if r.IntN(3) == 0 {
				focus = append(focus, p)
			}
		}
		if r.IntN(5) == 0 {
			focus = append(focus, randPattern(r)) // a focus pattern no shape holds
		}
		regions := walkAll(t, shapes, Options{Focus: focus})
		for k := 0; k < 500; k++ {
			a := randAction(r)
			inFocus := false
			for _, f := range focus {
				inFocus = inFocus || f.Matches(a)
			}
			var in []visited
			for _, v := range regions {
				if v.r.Contains(a) {
					in = append(in, v)
				}
			}
			if len(in) > 1 {
				t.Fatalf("%v focus %v: action %s lies in %d regions", pats, focus, a, len(in))
			}
			if inFocus && len(in) == 0 {
				t.Fatalf("%v focus %v: action %s is in focus and in no region", pats, focus, a)
			}
			if len(in) == 1 && matchVector(pats, in[0].wit) != matchVector(pats, a) {
				t.Fatalf("%v focus %v: action %s and its region %s's witness match apart", pats, focus, a, in[0].r)
			}
			if len(in) == 1 && matchVector(focus, in[0].wit) != matchVector(focus, a) {
				t.Fatalf("%v focus %v: action %s and its region %s's witness match the focus apart", pats, focus, a, in[0].r)
			}
		}
	}
}

func shapesOf(pats ...string) []action.Shape {
	var t action.Trie[int]
	for i, p := range pats {
		t.Insert(action.MustPattern(p), i)
	}
	return []action.Shape{t.Shape()}
}

func TestRegionsOfExample(t *testing.T) {
	shapes := shapesOf("exec.path.gh", "exec.path.curl", "exec.*")
	var got []string
	if _, err := Walk(shapes, Options{Whole: true}, func(r Region, wit action.Action) error {
		got = append(got, r.String()+" "+wit.String())
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"<not exec> x",
		"<not exec>.* x.x",
		"exec exec",
		"exec.<not path> exec.x",
		"exec.<not path>.* exec.x.x",
		"exec.path exec.path",
		"exec.path.<not curl,gh> exec.path.x",
		"exec.path.<not curl,gh>.* exec.path.x.x",
		"exec.path.curl exec.path.curl",
		"exec.path.curl.* exec.path.curl.x",
		"exec.path.gh exec.path.gh",
		"exec.path.gh.* exec.path.gh.x",
	}
	if !slices.Equal(got, want) {
		t.Errorf("regions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Focused on one literal, the walk goes straight to it.
	got = nil
	n, err := Walk(shapes, Options{Focus: []action.Pattern{action.MustPattern("exec.path.gh")}}, func(r Region, _ action.Action) error {
		got = append(got, r.String())
		return nil
	})
	if err != nil || n != 1 || !slices.Equal(got, []string{"exec.path.gh"}) {
		t.Errorf("focused walk: %d %v %v", n, got, err)
	}
}

func TestJSONAndFormat(t *testing.T) {
	r := Region{Segs: []Seg{{Lit: "exec"}, {Lit: "path"}, {Other: true, Not: []string{"curl", "gh"}}}}
	b, err := json.Marshal(r)
	if err != nil || string(b) != `{"segments":["exec","path",{"not":["curl","gh"]}],"more":false}` {
		t.Errorf("JSON %s %v", b, err)
	}
	r.More = true
	if s := r.Format(1); s != "exec.path.<not curl,… 1 more>.*" {
		t.Errorf("Format(1) = %q", s)
	}
	any1 := Region{Segs: []Seg{{Lit: "mcp"}, {Other: true}}}
	if b, _ := json.Marshal(any1); string(b) != `{"segments":["mcp",{"not":[]}],"more":false}` || any1.String() != "mcp.<any>" {
		t.Errorf("any: %s %s", b, any1)
	}
	if w := (Region{Segs: []Seg{{Other: true, Not: []string{"x", "x2"}}}}).Witness(); w.String() != "x3" {
		t.Errorf("witness %s", w)
	}
}

// TestLimit: patterns that each fix one of k positions multiply regions;
// the walk stops at the limit with a LimitError.
func TestLimit(t *testing.T) {
	var pats []string
	const k = 6
	for pos := 0; pos < k; pos++ {
		for _, lit := range []string{"a", "b", "c"} {
			segs := slices.Repeat([]string{"*"}, k)
			segs[pos] = lit
			segs = append([]string{"p"}, segs...)
			pats = append(pats, strings.Join(segs, "."))
		}
	}
	shapes := shapesOf(pats...)
	n, err := Walk(shapes, Options{Whole: true}, func(Region, action.Action) error { return nil })
	if err != nil || n < 4096 {
		t.Fatalf("k=%d: %d regions, %v", k, n, err)
	}
	n, err = Walk(shapes, Options{Whole: true, Max: 1000}, func(Region, action.Action) error { return nil })
	var le *LimitError
	if !errors.As(err, &le) || le.Max != 1000 || n != 1000 {
		t.Fatalf("with Max 1000: %d regions, %v", n, err)
	}
	stopped := 0
	n, err = Walk(shapes, Options{Whole: true}, func(Region, action.Action) error {
		stopped++
		if stopped == 3 {
			return SkipAll
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("SkipAll: %d regions, %v", n, err)
	}
}

// TestMaxSegments: no region reaches past action.MaxSegments.
func TestMaxSegments(t *testing.T) {
	long := strings.TrimSuffix(strings.Repeat("a.", action.MaxSegments), ".")
	regions := walkAll(t, shapesOf(long), Options{Whole: true})
	for _, v := range regions {
		if len(v.wit) > action.MaxSegments {
			t.Fatalf("region %s has a witness of %d segments", v.r, len(v.wit))
		}
	}
	if last := regions[len(regions)-1]; last.r.More || len(last.r.Segs) != action.MaxSegments {
		t.Fatalf("last region %s", last.r)
	}
}

func TestEmptyFocus(t *testing.T) {
	n, err := Walk(shapesOf("exec.*"), Options{}, func(Region, action.Action) error {
		t.Fatal("visited a region with no focus")
		return nil
	})
	if n != 0 || err != nil {
		t.Fatal(n, err)
	}
}

// TestMapAgainstBruteForce: a function given on the regions of a walk
// reads back, from Map's coarsest regions, as the same function; and a
// walk split further by patterns the function ignores gives the very
// same regions.
func TestMapAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 8))
	for round := 0; round < 300; round++ {
		pats, shapes := patternSet(r)
		// f: a value from the match vector, few values so that many
		// regions share one.
		f := func(a action.Action) int {
			v := 0
			for i, p := range pats {
				if p.Matches(a) {
					v = (v + i + 1) % 3
				}
			}
			return v
		}
		read := func(shapes []action.Shape, focus []action.Pattern) []visited {
			var m Map[int]
			_, err := Walk(shapes, Options{Whole: focus == nil, Focus: focus}, func(reg Region, w action.Action) error {
				m.Set(reg, f(w))
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			var out []visited
			for reg, v := range m.Regions {
				out = append(out, visited{reg.Clone(), action.Action{strings.Repeat("v", v)}})
			}
			return out
		}
		got := read(shapes, nil)
		var m Map[int]
		Walk(shapes, Options{Whole: true}, func(reg Region, w action.Action) error {
			m.Set(reg, f(w))
			return nil
		})
		for k := 0; k < 300; k++ {
			a := randAction(r)
			want := f(a)
			if v := m.Get(a); v != want {
				t.Fatalf("%v: Get(%s) = %d, want %d", pats, a, v, want)
			}
			// The map's own shape, walked beside nothing else, splits the
			// space into regions of one value each.
			if k == 0 {
				Walk([]action.Shape{m.Shape()}, Options{Whole: true}, func(reg Region, w action.Action) error {
					for j := 0; j < 20; j++ {
						b := randAction(r)
						if reg.Contains(b) && m.Get(b) != m.Get(w) {
							t.Fatalf("%v: %s and %s lie in the map's region %s with values %d, %d", pats, b, w, reg, m.Get(b), m.Get(w))
						}
					}
					return nil
				})
			}
			var in []visited
			for _, v := range got {
				if v.r.Contains(a) {
					in = append(in, v)
				}
			}
			switch {
			case len(in) > 1:
				t.Fatalf("%v: %s lies in %d regions", pats, a, len(in))
			case len(in) == 0 && want != 0:
				t.Fatalf("%v: %s has value %d and no region", pats, a, want)
			case len(in) == 1 && len(in[0].wit[0]) != want:
				t.Fatalf("%v: %s has value %d, its region %s says %d", pats, a, want, in[0].r, len(in[0].wit[0]))
			}
		}
		// More patterns split the walk further; the function, and so the
		// regions, are the same.
		_, more := patternSet(r)
		again := read(append(slices.Clone(shapes), more...), nil)
		if len(again) != len(got) {
			t.Fatalf("%v: %d regions, %d with more patterns", pats, len(got), len(again))
		}
		for i := range got {
			if got[i].r.String() != again[i].r.String() || got[i].wit[0] != again[i].wit[0] {
				t.Fatalf("%v: region %d is %s=%d, with more patterns %s=%d", pats, i, got[i].r, len(got[i].wit[0]), again[i].r, len(again[i].wit[0]))
			}
		}
	}
}

func TestMapMerges(t *testing.T) {
	// exec.path.gh and exec.path.curl take what the other programs do:
	// one region, exec.path.* less the nothing it names.
	shapes := shapesOf("exec.path.gh", "exec.path.curl", "exec.*")
	var m Map[bool]
	Walk(shapes, Options{Whole: true}, func(r Region, w action.Action) error {
		m.Set(r, len(w) >= 2 && w[0] == "exec" && !(len(w) == 2 && w[1] == "path"))
		return nil
	})
	var got []string
	for r := range m.Regions {
		got = append(got, r.String())
	}
	want := []string{"exec.<not path>", "exec.<not path>.*", "exec.path.*"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{
		"exec.path.<not curl,gh>",
		"exec.path.<not curl,gh>.*",
		"mcp.<any>.tool.*",
		`x.\<any\>.a\,b.<not \<\>,\\>`,
		"secret.use.GITHUB_TOKEN",
	} {
		r, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		if r.String() != s {
			t.Errorf("Parse(%q).String() = %q", s, r.String())
		}
	}
	r, err := Parse(`a.\<any\>`)
	if err != nil || r.Segs[1].Other || r.Segs[1].Lit != "<any>" {
		t.Errorf("an escaped literal: %+v %v", r, err)
	}
	for _, bad := range []string{"", ".*", "a..b", "a.<not >", "a.<not b", "a.b>c", `a.\q`, "a.<not a.b>", "a b", strings.Repeat("a.", 32) + "*"} {
		if r, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %s, want an error", bad, r)
		}
	}
	// Every region of a walk reads back as itself.
	rr := rand.New(rand.NewPCG(1, 1))
	for round := 0; round < 50; round++ {
		_, shapes := patternSet(rr)
		for _, v := range walkAll(t, shapes, Options{Whole: true}) {
			back, err := Parse(v.r.String())
			if err != nil || back.String() != v.r.String() || !back.Contains(v.wit) {
				t.Fatalf("%s: %s %v", v.r, back, err)
			}
		}
	}
}

// FuzzParse: a region that parses writes out as text that parses to the
// same region, and its witness lies in it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"exec.path.<not curl,gh>.*", "mcp.<any>.tool.x", `a.\<\>.<not \,>`, "x.*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		text := r.String()
		back, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(%q) = %q, which does not parse: %v", s, text, err)
		}
		if back.String() != text {
			t.Fatalf("%q -> %q -> %q", s, text, back.String())
		}
		if w := r.Witness(); !r.Contains(w) {
			t.Fatalf("%q: witness %s is not in it", s, w)
		}
	})
}
