package udiff

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestUnifiedGolden(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n"
	new := "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl"
	want := `diff x.zon.orig x.zon
--- x.zon.orig
+++ x.zon
@@ -1,5 +1,5 @@
 a
-b
+B
 c
 d
 e
@@ -9,3 +9,4 @@
 i
 j
 k
+l
\ No newline at end of file
`
	if got := string(Unified("x.zon.orig", "x.zon", []byte(old), []byte(new))); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := Unified("a", "b", []byte(old), []byte(old)); got != nil {
		t.Errorf("equal texts: %q", got)
	}
}

// apply applies a unified diff from Unified to old, checking every
// context and removed line against old.
func apply(t *testing.T, old []byte, d []byte) []byte {
	t.Helper()
	x := lines(old)
	dl := lines(d)
	if len(dl) < 3 || !strings.HasPrefix(dl[0], "diff ") || !strings.HasPrefix(dl[1], "--- ") || !strings.HasPrefix(dl[2], "+++ ") {
		t.Fatalf("no header:\n%s", d)
	}
	var out []string
	at := 0
	for i := 3; i < len(dl); {
		var x0, nx, y0, ny int
		if _, err := fmt.Sscanf(dl[i], "@@ -%d,%d +%d,%d @@\n", &x0, &nx, &y0, &ny); err != nil {
			t.Fatalf("line %d: %q: %v", i+1, dl[i], err)
		}
		if nx > 0 {
			x0--
		}
		if x0 < at {
			t.Fatalf("hunk at %d overlaps the one before", x0)
		}
		out = append(out, x[at:x0]...)
		at = x0
		i++
		gotX, gotY := 0, 0
		for i < len(dl) && !strings.HasPrefix(dl[i], "@@") {
			mark, line := dl[i][0], dl[i][1:]
			i++
			if i < len(dl) && dl[i] == "\\ No newline at end of file\n" {
				line = strings.TrimSuffix(line, "\n")
				i++
			}
			switch mark {
			case ' ', '-':
				if at >= len(x) || x[at] != line {
					t.Fatalf("diff line %d: %q does not match old line %d %q", i, line, at+1, get(x, at))
				}
				at++
				gotX++
				if mark == ' ' {
					out = append(out, line)
					gotY++
				}
			case '+':
				out = append(out, line)
				gotY++
			default:
				t.Fatalf("diff line %d: %q", i, dl[i-1])
			}
		}
		if gotX != nx || gotY != ny {
			t.Fatalf("hunk counts %d,%d; header says %d,%d", gotX, gotY, nx, ny)
		}
	}
	out = append(out, x[at:]...)
	return []byte(strings.Join(out, ""))
}

func get(x []string, i int) string {
	if i < len(x) {
		return x[i]
	}
	return "<end>"
}

// randomText is a few lines from a small alphabet, so lines repeat.
func randomText(r *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for range n {
		b.WriteString(strconv.Itoa(r.IntN(8)))
		b.WriteByte('\n')
	}
	if r.IntN(4) == 0 && b.Len() > 0 {
		b.Truncate(b.Len() - 1)
	}
	return b.Bytes()
}

// mutate changes some lines of s: removes, adds, replaces.
func mutate(r *rand.Rand, s []byte) []byte {
	ls := lines(s)
	for range r.IntN(6) {
		switch i := r.IntN(len(ls) + 1); r.IntN(3) {
		case 0:
			if i < len(ls) {
				ls = append(ls[:i], ls[i+1:]...)
			}
		case 1:
			ls = append(ls[:i], append([]string{strconv.Itoa(r.IntN(20)) + "\n"}, ls[i:]...)...)
		default:
			if i < len(ls) {
				ls[i] = "x" + ls[i]
			}
		}
	}
	out := strings.Join(ls, "")
	if r.IntN(5) == 0 {
		out = strings.TrimSuffix(out, "\n")
	}
	return []byte(out)
}

// TestApplyRoundTrip: applying the diff to the old text gives the new one,
// for random texts with repeated lines and missing final newlines.
func TestApplyRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		old := randomText(r, r.IntN(40))
		var new []byte
		if i%2 == 0 {
			new = mutate(r, old)
		} else {
			new = randomText(r, r.IntN(40))
		}
		d := Unified("a", "b", old, new)
		if bytes.Equal(old, new) {
			if d != nil {
				t.Fatalf("equal texts gave a diff")
			}
			continue
		}
		if got := apply(t, old, d); !bytes.Equal(got, new) {
			t.Fatalf("case %d: applying\n%s\nto %q gives %q, want %q", i, d, old, got, new)
		}
	}
}

// TestPatchAccepts: patch(1), where there is one, applies the diff too.
func TestPatchAccepts(t *testing.T) {
	patch, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("no patch(1) on PATH")
	}
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	for i := range 50 {
		old := randomText(r, 10+r.IntN(40))
		new := mutate(r, old)
		if bytes.Equal(old, new) {
			continue
		}
		f := filepath.Join(dir, "f")
		if err := os.WriteFile(f, old, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(patch, "-s", "--no-backup-if-mismatch", f)
		cmd.Stdin = bytes.NewReader(Unified("f.orig", "f", old, new))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("case %d: patch: %v\n%s", i, err, out)
		}
		if got, _ := os.ReadFile(f); !bytes.Equal(got, new) {
			t.Fatalf("case %d: patch gives %q, want %q", i, got, new)
		}
	}
}

// TestLargeIsCheap: a large text with every line changed is diffed in
// bounded work (no quadratic matching).
func TestLargeIsCheap(t *testing.T) {
	var a, b bytes.Buffer
	for i := range 200000 {
		fmt.Fprintf(&a, "    .x = %d,\n", i%7)
		fmt.Fprintf(&b, ".x = %d,\n", i%5)
	}
	allocs := testing.AllocsPerRun(1, func() { Unified("a", "b", a.Bytes(), b.Bytes()) })
	if allocs > 2e6 {
		t.Errorf("%v allocations", allocs)
	}
}
