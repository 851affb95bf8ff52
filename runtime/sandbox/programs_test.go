package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	bin, work := t.TempDir(), t.TempDir()
	b, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bin, "gh"), b, 0o755)
	os.WriteFile(filepath.Join(work, "gh"), b, 0o755)
	os.Symlink(filepath.Join(bin, "gh"), filepath.Join(bin, "hub"))
	os.Symlink("/usr/bin/true", filepath.Join(work, "ls"))
	os.WriteFile(filepath.Join(bin, "notexec"), b, 0o644)
	p, err := Scan(bin+":relative::/usr/bin", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Dirs) != 2 {
		t.Errorf("dirs %v: a relative or empty PATH entry is ignored", p.Dirs)
	}
	for _, tc := range []struct {
		argv0, dir, name, err string
	}{
		{"gh", "", "gh", ""},
		{"hub", "", "hub", ""}, // a link on the PATH: its own name means its target
		{filepath.Join(bin, "gh"), "", "gh", ""},
		{filepath.Join(bin, "hub"), "", "hub", ""},
		{"./gh", work, "", "but exec.path.gh means " + filepath.Join(bin, "gh")},
		{"./ls", work, "true", ""}, // decided under its target's name
		{"nope", "", "", "nope is not on the session's PATH"},
		{"notexec", "", "", "not on the session's PATH"},
		{filepath.Join(bin, "notexec"), "", "", "it is not executable"},
		{"/nonexistent/x", "", "", "no such file"},
	} {
		r, err := p.Resolve(tc.argv0, tc.dir)
		var ie *IdentityError
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.argv0, err)
		case tc.err == "" && r.Name != tc.name:
			t.Errorf("%s: decided as %s, want %s", tc.argv0, r.Name, tc.name)
		case tc.err != "" && (!errors.As(err, &ie) || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an IdentityError with %q", tc.argv0, err, tc.err)
		}
	}
}

func TestPins(t *testing.T) {
	bin := t.TempDir()
	b, _ := os.ReadFile("/usr/bin/true")
	os.WriteFile(filepath.Join(bin, "gh"), b, 0o755)
	p, _ := Scan(bin, []Pin{{Name: "gh", Paths: []string{"/usr/bin/true"}}, {Name: "ghost", Paths: []string{"/nonexistent"}}})
	if _, err := p.Resolve("gh", ""); err == nil || !strings.Contains(err.Error(), "exec.path.gh means /usr/bin/true") {
		t.Errorf("a PATH gh beside a pin: %v", err)
	}
	r, err := p.Resolve("/usr/bin/true", "")
	if err != nil || r.Name != "true" && r.Name != "gh" {
		t.Errorf("the pinned file: %+v %v", r, err)
	}
	if _, err := p.Resolve("ghost", ""); err == nil {
		t.Error("a program pinned to no file ran")
	}
}

// FuzzInterpreter: whatever a program file holds, reading its interpreter
// does not panic.
func FuzzInterpreter(f *testing.F) {
	f.Add([]byte("#!/bin/sh -e\necho"))
	f.Add([]byte("#!"))
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	if b, err := os.ReadFile("/usr/bin/true"); err == nil {
		f.Add(b[:min(len(b), 4096)])
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "prog")
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
		Interpreter(p)
	})
}

func TestSharedAreTheFilesOfSeveralNames(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"dash", "git"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("dash", filepath.Join(dir, "sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "dash"), filepath.Join(dir, "ash")); err != nil {
		t.Fatal(err)
	}
	p, err := Scan(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Shared()
	if len(got) != 1 || !slices.Equal(got[0].Names, []string{"ash", "dash", "sh"}) {
		t.Fatalf("Shared() = %+v, want one file named ash, dash and sh", got)
	}
}

// TestScanResolvesLinksAsEvalSymlinks: every file Scan finds on this
// machine's PATH (and on a folder of the test's own links: chains, a
// loop, a dangling link, links through folders) is where
// filepath.EvalSymlinks says the name leads.
func TestScanResolvesLinksAsEvalSymlinks(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "real"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"a": "b", "b": "c", "c": filepath.Join(other, "real"), // a chain ending elsewhere
		"loop1": "loop2", "loop2": "loop1", "dangling": "nothere",
		"rel": "../" + filepath.Base(other) + "/real", "dot": "./c",
	}
	for n, to := range links {
		if err := os.Symlink(to, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(dir, filepath.Join(other, "viadir")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(other, "viadir") + ":" + os.Getenv("PATH")
	p, err := Scan(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, n := range p.Names() {
		want, err := filepath.EvalSymlinks(filepath.Join(firstDir(path, n), n))
		if err != nil {
			t.Errorf("%s found by Scan, but EvalSymlinks: %v", n, err)
			continue
		}
		if got := p.Means(n)[0].Path; got != want {
			t.Errorf("%s: Scan says %s, EvalSymlinks %s", n, got, want)
		}
		checked++
	}
	for _, n := range []string{"a", "b", "c", "rel", "dot"} {
		if fs := p.Means(n); len(fs) != 1 || fs[0].Path != filepath.Join(other, "real") {
			t.Errorf("%s means %+v", n, fs)
		}
	}
	for _, n := range []string{"loop1", "dangling"} {
		if fs := p.Means(n); len(fs) != 0 {
			t.Errorf("%s means %+v", n, fs)
		}
	}
	if checked < 10 {
		t.Fatalf("only %d names checked", checked)
	}
}

// firstDir is the first folder of path holding name as a program.
func firstDir(path, name string) string {
	for _, d := range filepath.SplitList(path) {
		if _, ok := executable(filepath.Join(d, name)); ok && filepath.IsAbs(d) {
			return d
		}
	}
	return ""
}

// TestPathScanOnceThenAgain: a PathScan's first Programs is Scan's, and a
// second scans the folders again rather than share the first one's state.
func TestPathScanOnceThenAgain(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gh"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pins := []Pin{{Name: "git", Paths: []string{filepath.Join(dir, "gh")}}}
	s := ScanPath(dir)
	first := s.Programs(pins)
	want, _ := Scan(dir, pins)
	if !slices.Equal(first.Names(), want.Names()) || first.Means("git")[0] != want.Means("git")[0] {
		t.Fatalf("first = %v, Scan = %v", first.Names(), want.Names())
	}
	if err := os.WriteFile(filepath.Join(dir, "jq"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	second := s.Programs(nil)
	if second == first || len(second.Means("jq")) != 1 || len(first.Means("jq")) != 0 {
		t.Fatalf("the second Programs is not a scan of its own: %v", second.Names())
	}
}
