package action

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestParsePatternErrors(t *testing.T) {
	tests := []struct {
		in   string
		kind error
		off  int
	}{
		{"*", ErrStarAlone, 0},
		{"", ErrEmptySeg, 0},
		{"exec..gh", ErrEmptySeg, 5},
		{".exec", ErrEmptySeg, 0},
		{"exec.", ErrEmptySeg, 5},
		{"exec.path.py*", ErrPartialGlob, 12},
		{"exec.*x", ErrPartialGlob, 5},
		{"exec.path.g h", ErrBadChar, 11},
		{"exec.path.gh\n", ErrBadChar, 12},
		{"exec\x00", ErrBadChar, 4},
	}
	for _, tt := range tests {
		_, err := ParsePattern(tt.in)
		var pe *PatternError
		if !errors.As(err, &pe) || !errors.Is(err, tt.kind) || pe.Offset != tt.off {
			t.Errorf("ParsePattern(%q) = %v, want %v at %d", tt.in, err, tt.kind, tt.off)
		}
	}
	for _, ok := range []string{"exec.*", "mcp.*.tool.x", "exec.path.gh", "mcp.s.host.[::1]", "secret.use.GITHUB_TOKEN", "a.*.*"} {
		if _, err := ParsePattern(ok); err != nil {
			t.Errorf("ParsePattern(%q): %v", ok, err)
		}
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		pat, act string
		want     bool
	}{
		{"exec.*", "exec.path.gh", true},
		{"exec.*", "exec", false},
		{"exec.*", "exec.path", true},
		{"mcp.notion.host.com.notion.*", "mcp.notion.host.com.notion", false},
		{"mcp.notion.host.com.notion.*", "mcp.notion.host.com.notion.mcp", true},
		{"mcp.notion.host.com.notion.*", "mcp.notion.host.com.notion.a.b", true},
		{"mcp.*.tool.search", "mcp.notion.tool.search", true},
		{"mcp.*.tool.search", "mcp.a.b.tool.search", false},
		{"exec.path.gh", "exec.path.gh", true},
		{"exec.path.gh", "exec.path.gh.x", false},
	}
	for _, tt := range tests {
		a, err := ParseAction(tt.act)
		if err != nil {
			t.Fatal(err)
		}
		if got := MustPattern(tt.pat).Matches(a); got != tt.want {
			t.Errorf("%s matches %s = %v, want %v", tt.pat, tt.act, got, tt.want)
		}
	}
}

func TestCompare(t *testing.T) {
	// Each pattern is more specific than the next, for actions both match.
	chains := [][]string{
		{"exec.path.gh", "exec.path.*", "exec.*"},
		{"mcp.notion.tool.x", "mcp.notion.*", "mcp.*"},
		{"mcp.notion.tool.x", "mcp.*.tool.x", "mcp.*"},
		{"a.*.c", "a.*"},
		{"a.*.*", "a.*"},
	}
	for _, c := range chains {
		for i := 0; i+1 < len(c); i++ {
			p, q := MustPattern(c[i]), MustPattern(c[i+1])
			if Compare(p, q) >= 0 || Compare(q, p) <= 0 {
				t.Errorf("want %s more specific than %s", p, q)
			}
		}
	}
	if Compare(MustPattern("exec.*"), MustPattern("exec.*")) != 0 {
		t.Error("identical patterns must tie")
	}
}

func TestHostSegments(t *testing.T) {
	tests := []struct{ in, want string }{
		{"mcp.notion.com", "com.notion.mcp"},
		{"MCP.Notion.COM.", "com.notion.mcp"},
		{"bücher.example", "example.xn--bcher-kva"},
		{"10.0.0.7", "10.0.0.7"},
		{"[2001:DB8::1]", "[2001:db8::1]"},
		{"2001:db8::1", "[2001:db8::1]"},
	}
	for _, tt := range tests {
		got, err := HostSegments(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("HostSegments(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", ".", "a..b", "[zz]", "a b.com", "*.example.com"} {
		if got, err := HostSegments(bad); err == nil {
			t.Errorf("HostSegments(%q) = %q, want an error", bad, got)
		}
	}
	if a, err := MCPHost("notion", "https://mcp.notion.com/mcp"); err != nil || a != "mcp.notion.host.com.notion.mcp" {
		t.Errorf("MCPHost = %q, %v", a, err)
	}
	if a, err := Fetch("https://[::1]:8443/x"); err != nil || a != "net.fetch.[::1]" {
		t.Errorf("Fetch = %q, %v", a, err)
	}
	if a, err := Exec("/usr/bin/python3.12"); err != nil || a != "exec.path.python3.12" {
		t.Errorf("Exec = %q, %v", a, err)
	}
}

// TestTrieMatchesBruteForce checks the trie against a linear scan that
// applies Compare over every matching pattern, on random rule sets and
// random actions drawn from the rules' own segments.
func TestTrieMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"exec", "path", "gh", "mcp", "notion", "tool", "x", "y"}
	randPattern := func() Pattern {
		n := 1 + r.IntN(4)
		segs := make([]string, n)
		for i := range segs {
			if r.IntN(3) == 0 && !(n == 1) {
				segs[i] = "*"
			} else {
				segs[i] = words[r.IntN(len(words))]
			}
		}
		return MustPattern(strings.Join(segs, "."))
	}
	for round := 0; round < 200; round++ {
		var trie Trie[int]
		var pats []Pattern
		for i := 0; i < 1+r.IntN(30); i++ {
			p := randPattern()
			pats = append(pats, p)
			trie.Insert(p, i)
		}
		for k := 0; k < 200; k++ {
			a := make(Action, 1+r.IntN(5))
			for i := range a {
				a[i] = words[r.IntN(len(words))]
			}
			var best *Pattern
			for i := range pats {
				if pats[i].Matches(a) && (best == nil || Compare(pats[i], *best) < 0) {
					best = &pats[i]
				}
			}
			got := trie.Lookup(a)
			switch {
			case best == nil && got != nil:
				t.Fatalf("%s: trie found %s, nothing matches", a, got[0].Pattern)
			case best != nil && got == nil:
				t.Fatalf("%s: trie found nothing, %s matches", a, best)
			case best != nil && got[0].Pattern.String() != best.String():
				t.Fatalf("%s: trie found %s, most specific is %s", a, got[0].Pattern, best)
			}
			for _, e := range got {
				if e.Pattern.String() != got[0].Pattern.String() {
					t.Fatalf("Lookup returned different patterns")
				}
			}
			// LookupExcept is Lookup over the rules it keeps.
			skip := r.IntN(len(pats))
			var next *Pattern
			for i := range pats {
				if i != skip && pats[i].Matches(a) && (next == nil || Compare(pats[i], *next) < 0) {
					next = &pats[i]
				}
			}
			got = trie.LookupExcept(a, func(e Entry[int]) bool { return e.Value == skip })
			switch {
			case next == nil && got != nil:
				t.Fatalf("%s without %d: trie found %s, nothing matches", a, skip, got[0].Pattern)
			case next != nil && got == nil:
				t.Fatalf("%s without %d: trie found nothing, %s matches", a, skip, next)
			case next != nil && got[0].Pattern.String() != next.String():
				t.Fatalf("%s without %d: trie found %s, most specific is %s", a, skip, got[0].Pattern, next)
			}
			for _, e := range got {
				if e.Value == skip || e.Pattern.String() != got[0].Pattern.String() {
					t.Fatalf("LookupExcept returned %v", got)
				}
			}
		}
	}
}

func FuzzParsePattern(f *testing.F) {
	for _, s := range []string{"exec.*", "*", "a..b", "exec.path.py*", "mcp.*.tool.x", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePattern(s)
		if err != nil {
			var pe *PatternError
			if !errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(s) {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		if p.String() != s || strings.Join(p.Segments(), ".") != s {
			t.Fatalf("round trip %q", s)
		}
		if Compare(p, p) != 0 {
			t.Fatal("a pattern must tie with itself")
		}
	})
}

func TestOverlapsAndCovers(t *testing.T) {
	tests := []struct {
		p, q             string
		overlaps, covers bool
	}{
		{"exec.*", "exec.path.gh", true, true},
		{"exec.path.gh", "exec.*", true, false},
		{"mcp.*.tool.x", "mcp.notion.*", true, false},
		{"mcp.notion.*", "mcp.*.tool.x", true, false},
		{"mcp.*", "mcp.notion.*", true, true},
		{"a.b", "a.c", false, false},
		{"a.*.c", "a.b.c", true, true},
		{"a.*.c", "a.*", true, false},
		{"a.b", "a.b.*", false, false},
	}
	for _, tt := range tests {
		p, q := MustPattern(tt.p), MustPattern(tt.q)
		if got := Overlaps(p, q); got != tt.overlaps {
			t.Errorf("Overlaps(%s, %s) = %v", p, q, got)
		}
		if got := Covers(p, q); got != tt.covers {
			t.Errorf("Covers(%s, %s) = %v", p, q, got)
		}
	}
}

// TestCharactersAndLength: actions and patterns refuse invisible and
// control characters, bytes that are not UTF-8, and more than MaxSegments
// segments, each at the byte where it starts.
func TestCharactersAndLength(t *testing.T) {
	long := strings.Repeat("a.", MaxSegments) + "a"
	for _, c := range []struct {
		in   string
		kind error
		at   int
	}{
		{"exec.path.g\u200bh", ErrBadChar, 11},
		{"exec.path.\u202egh", ErrBadChar, 10},
		{"exec.path.\u009bgh", ErrBadChar, 10},
		{"exec.path.\xffgh", ErrBadChar, 10},
		{"exec.path.\ufeff", ErrBadChar, 10},
		{"exec.path.\ufffd", ErrBadChar, 10},
		{long, ErrTooLong, 2 * MaxSegments},
	} {
		for _, parse := range []func(string) error{
			func(s string) error { _, err := ParseAction(s); return err },
			func(s string) error { _, err := ParsePattern(s); return err },
		} {
			err := parse(c.in)
			var pe *PatternError
			if !errors.Is(err, c.kind) || !errors.As(err, &pe) || pe.Offset != c.at {
				t.Errorf("%q: got %v (%+v), want %v at %d", c.in, err, pe, c.kind, c.at)
			}
		}
	}
	if _, err := ParseAction(strings.Repeat("a.", MaxSegments-1) + "a"); err != nil {
		t.Errorf("%d segments: %v", MaxSegments, err)
	}
	if _, err := ParseAction("exec.path.café"); err != nil {
		t.Errorf("a letter that is not ASCII: %v", err)
	}
}

// TestSegmentClass: the compiled policy's input check (SegmentClass) and
// ParseAction agree on which actions are well-formed.
func TestSegmentClass(t *testing.T) {
	c := SegmentClass()
	re := regexp.MustCompile(`^` + c + `+(\.` + c + `+){0,` + fmt.Sprint(MaxSegments-1) + `}$`)
	inputs := []string{"exec.path.gh", "a", "a..b", ".a", "a.", "exec.*", "a b", "a\x00", "a\x7f", "a\u0085", "a\u00a0",
		"a\u200b", "a\u2066", "a\xff", "a\ufffd", "é.ü", strings.Repeat("a.", MaxSegments) + "a", strings.Repeat("a.", MaxSegments-1) + "a"}
	for r := rune(0); r < 0x3000; r++ {
		inputs = append(inputs, "x"+string(r))
	}
	for _, r := range []rune{0xfe0f, 0xfeff, 0xffa0, 0xe0001, 0xe0041, 0xe01ef, 0x1d173, 0x10ffff} {
		inputs = append(inputs, "x"+string(r))
	}
	for _, in := range inputs {
		_, err := ParseAction(in)
		if (err == nil) != re.MatchString(in) {
			t.Errorf("%q: ParseAction %v, the policy's check %v", in, err, re.MatchString(in))
		}
	}
}
