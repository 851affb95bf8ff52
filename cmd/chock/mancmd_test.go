package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// manDate is the date field of a page's .TH line: the month the pages were
// made, the one part of them that is not the command tree's.
var manDate = regexp.MustCompile(`(?m)^(\.TH "[^"]*" "[^"]*" )"[^"]*"`)

// TestManPages: docs/man holds the pages chock __man writes, page for page
// and byte for byte but for the month on each .TH line; make man
// rewrites them.
func TestManPages(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "0") // the date is ignored; a value from outside must not break the run
	dir := t.TempDir()
	code, out, errs := runBuffered(t, "__man", dir)
	if code != exitOK || out != "" || errs != "" {
		t.Fatalf("chock __man: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	const committed = "../../docs/man"
	want, err := filepath.Glob(filepath.Join(committed, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		t.Fatal(err)
	}
	base := func(paths []string) []string {
		out := make([]string, len(paths))
		for i, p := range paths {
			out[i] = filepath.Base(p)
		}
		slices.Sort(out)
		return out
	}
	if g, w := base(got), base(want); !slices.Equal(g, w) {
		t.Fatalf("docs/man has pages %v; the command tree makes %v: run make man", w, g)
	}
	if len(got) < 20 {
		t.Fatalf("%d pages; want one for chock and each of its commands", len(got))
	}
	for _, name := range base(got) {
		g, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		if !manDate.Match(g) {
			t.Fatalf("%s has no dated .TH line:\n%.300s", name, g)
		}
		g = manDate.ReplaceAll(g, []byte(`$1"DATE"`))
		w = manDate.ReplaceAll(w, []byte(`$1"DATE"`))
		if !bytes.Equal(g, w) {
			t.Errorf("docs/man/%s is out of step with the command tree: run make man\n%s", name, firstDiff(string(w), string(g)))
		}
	}
}

// firstDiff shows the first line where want and got differ.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(wl), len(gl)) {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\n  docs/man: %s\n  tree:     %s", i+1, w, g)
		}
	}
	return ""
}
