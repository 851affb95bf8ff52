package action

import (
	"errors"
	"testing"
)

func TestPathActions(t *testing.T) {
	for _, c := range []struct {
		in   string
		tail string
		err  error
	}{
		{"fs.read.~/.aws/config", "~/.aws/config", nil},
		{"fs.write..git/hooks/pre-commit", ".git/hooks/pre-commit", nil},
		{"fs.read./etc/hosts", "/etc/hosts", nil},
		{"fs.read./", "/", nil},
		{"fs.read.~", "~", nil},
		{"fs.read.a.b.c/d.e", "a.b.c/d.e", nil},
		{"fs.read.", "", ErrEmptySeg},
		{"fs.read.a//b", "", ErrEmptySeg},
		{"fs.read.a/", "", ErrEmptySeg},
		{"fs.read.a/../b", "", ErrEmptySeg},
		{"fs.read./a/./b", "", ErrEmptySeg},
		{"fs.read.a/*", "", ErrPartialGlob},
		{"fs.read.a b", "", ErrBadChar},
	} {
		a, err := ParseAction(c.in)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: err %v, want %v", c.in, err, c.err)
			}
			if _, ok := Valid(c.in); ok {
				t.Errorf("%s: Valid says yes", c.in)
			}
			continue
		}
		if err != nil || len(a) != 3 || a[2] != c.tail || a.String() != c.in {
			t.Errorf("%s: %q, %v", c.in, a, err)
		}
		if n, ok := Valid(c.in); !ok || n != 3 {
			t.Errorf("%s: Valid %d %v", c.in, n, ok)
		}
	}
}

func TestPathGlobs(t *testing.T) {
	for _, c := range []struct {
		pat string
		yes []string
		no  []string
	}{
		{"fs.read.~/.ssh/**", []string{"~/.ssh/id_ed25519", "~/.ssh/a/b"}, []string{"~/.ssh", "~/.sshx/a", "/home/u/.ssh/a", ".ssh/a"}},
		{"fs.read.**/.env", []string{".env", "a/.env", "a/b/.env"}, []string{"~/.env", "/x/.env", "a/.envx", "a.env", "~/a/.env"}},
		{"fs.read.**/.env.*", []string{".env.local", "a/.env.prod"}, []string{".env", "~/.env.x"}},
		{"fs.write..git/hooks/**", []string{".git/hooks/pre-commit"}, []string{".git/hooks", ".git/hooksx"}},
		{"fs.read.a/**/b", []string{"a/b", "a/x/b", "a/x/y/b"}, []string{"a/xb", "b"}},
		{"fs.read.*.pem", []string{"x.pem", ".pem"}, []string{"a/x.pem", "~"}},
		{"fs.read.*", []string{"x", "~/a", "/a/b"}, nil},
		{"fs.read.**", []string{"x", "a/b"}, []string{"~/a", "/a", "~"}},
	} {
		p, err := ParsePattern(c.pat)
		if err != nil {
			t.Fatalf("%s: %v", c.pat, err)
		}
		head := c.pat[:pathTail(c.pat)]
		for _, y := range c.yes {
			if !p.Matches(MustAction(t, head+y)) {
				t.Errorf("%s does not match %s", c.pat, y)
			}
		}
		for _, n := range c.no {
			if p.Matches(MustAction(t, head+n)) {
				t.Errorf("%s matches %s", c.pat, n)
			}
		}
	}
	for _, bad := range []string{"fs.read.a**", "fs.read.a/***/b", "fs.read.a//*"} {
		if _, err := ParsePattern(bad); err == nil {
			t.Errorf("%s parsed", bad)
		}
	}
}

func MustAction(t *testing.T, s string) Action {
	t.Helper()
	a, err := ParseAction(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return a
}

// TestPathRanking: a literal path beats a glob, more literal characters
// beat fewer, and a glob beats '*'.
func TestPathRanking(t *testing.T) {
	order := []string{"fs.read.~/.aws/config", "fs.read.~/.aws/conf*", "fs.read.~/.aws/**", "fs.read.*", "fs.*"}
	for i := range order {
		for j := range order {
			c := Compare(MustPattern(order[i]), MustPattern(order[j]))
			if (i < j) != (c < 0) || (i == j) != (c == 0) {
				t.Errorf("Compare(%s, %s) = %d", order[i], order[j], c)
			}
		}
	}
	var tr Trie[string]
	for _, p := range order {
		tr.Insert(MustPattern(p), p)
	}
	for act, want := range map[string]string{"fs.read.~/.aws/config": order[0], "fs.read.~/.aws/confx": order[1], "fs.read.~/.aws/x": order[2], "fs.read.x": order[3], "fs.write.x": order[4]} {
		if got := tr.Lookup(MustAction(t, act)); len(got) != 1 || got[0].Value != want {
			t.Errorf("%s: %v, want %s", act, got, want)
		}
	}
	// Two globs of as many literal characters tie: both are returned.
	tr.Insert(MustPattern("fs.read.~/.aws/*fig"), "tie")
	tr.Insert(MustPattern("fs.read.~/.aws/con*"), "tie2")
	if got := tr.Lookup(MustAction(t, "fs.read.~/.aws/confxg")); len(got) != 1 {
		t.Errorf("confxg: %v", got)
	}
}

func TestPathOverlapCover(t *testing.T) {
	for _, c := range []struct {
		p, q           string
		overlap, cover bool
	}{
		{"fs.read.~/.ssh/**", "fs.read.~/.ssh/id_rsa", true, true},
		{"fs.read.~/.ssh/**", "fs.read.~/.ssh/a/**", true, true},
		{"fs.read.~/.ssh/a/**", "fs.read.~/.ssh/**", true, false},
		{"fs.read.**/.env", "fs.read.**/.env.*", false, false},
		{"fs.read.**/.env", "fs.read.~/.env", false, false},
		{"fs.read.**", "fs.read.**/.env", true, true},
		{"fs.read.*", "fs.read.**/.env", true, true},
		{"fs.read.**/.env", "fs.read.*", true, false},
		{"fs.read.*.pem", "fs.read.a*", true, false},
	} {
		p, q := MustPattern(c.p), MustPattern(c.q)
		if got := Overlaps(p, q); got != c.overlap {
			t.Errorf("Overlaps(%s, %s) = %v", c.p, c.q, got)
		}
		if got := Covers(p, q); got != c.cover {
			t.Errorf("Covers(%s, %s) = %v", c.p, c.q, got)
		}
	}
}

// FuzzPathGlob: a glob's regular expression and its automaton agree on
// every path, and a parsed pattern prints as it was written.
func FuzzPathGlob(f *testing.F) {
	f.Add("~/.ssh/**", "~/.ssh/id")
	f.Add("**/.env.*", "a/.env.x")
	f.Add("a/*b*/c", "a/xbx/c")
	f.Fuzz(func(t *testing.T, glob, path string) {
		p, err := ParsePattern("fs.read." + glob)
		if err != nil || p.String() != "fs.read."+glob {
			return
		}
		a, err := ParseAction("fs.read." + path)
		if err != nil {
			return
		}
		want := p.Matches(a)
		var got bool
		if err := Explore([]PathLang{LangOf(p, 2), LiteralLang(path)}, func(in []bool, _ string) bool {
			if in[1] {
				got = in[0]
				return false
			}
			return true
		}); err != nil {
			return
		}
		if got != want {
			t.Errorf("%s on %s: regexp %v, automaton %v", glob, path, want, got)
		}
	})
}
