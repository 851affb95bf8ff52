package safefile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

func TestWriteDirNewThenAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rego")
	files := map[string][]byte{"chock/main.rego": []byte("package chock\n"), "data.json": []byte("{}\n")}
	if err := WriteDir(dir, files); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, "chock", "main.rego")); got != "package chock\n" {
		t.Errorf("got %q", got)
	}
	// Again, with one file fewer and one changed: the old one goes.
	files2 := map[string][]byte{"data.json": []byte("{\"a\":1}\n"), "chock/other.rego": []byte("x")}
	if err := WriteDir(dir, files2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "chock", "main.rego")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file of the earlier write stayed: %v", err)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{".chock-written", "chock", "data.json"}) {
		t.Errorf("folder holds %v", got)
	}
}

func TestWriteDirEmptyFolder(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, map[string][]byte{"a.rego": []byte("x")}); err != nil {
		t.Fatal(err)
	}
}

func TestWriteDirRefusesForeign(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		want  string
	}{
		{"a hand-written file", func(dir string) { os.WriteFile(filepath.Join(dir, "README.md"), []byte("mine"), 0o644) }, "README.md"},
		{"a folder of sources", func(dir string) { os.MkdirAll(filepath.Join(dir, "src", "x"), 0o755) }, "src/"},
		{"an added file beside chock's", func(dir string) {
			WriteDir(dir, map[string][]byte{"a.rego": []byte("x")})
			os.WriteFile(filepath.Join(dir, "mine.rego"), []byte("mine"), 0o644)
		}, "mine.rego"},
		{"chock's file edited by hand", func(dir string) {
			WriteDir(dir, map[string][]byte{"a.rego": []byte("x")})
			os.WriteFile(filepath.Join(dir, "a.rego"), []byte("edited"), 0o644)
		}, "a.rego"},
		{"a symlink", func(dir string) { os.Symlink("/etc/passwd", filepath.Join(dir, "a.rego")) }, "a.rego"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(dir)
			before := entries(t, dir)
			err := WriteDir(dir, map[string][]byte{"a.rego": []byte("new"), "b.rego": []byte("new")})
			var fe *ForeignError
			if !errors.As(err, &fe) || fe.Path != tc.want {
				t.Fatalf("got %v, want a ForeignError naming %s", err, tc.want)
			}
			if after := entries(t, dir); !slices.Equal(before, after) {
				t.Errorf("the folder changed: %v -> %v", before, after)
			}
		})
	}
}

// TestWriteDirParentOfProject is the report that started this: -o .. from
// a policy/ folder must not touch the project above it.
func TestWriteDirParentOfProject(t *testing.T) {
	project := t.TempDir()
	os.WriteFile(filepath.Join(project, "README.md"), []byte("mine"), 0o644)
	os.Mkdir(filepath.Join(project, "policy"), 0o755)
	err := WriteDir(filepath.Join(project, "policy", ".."), map[string][]byte{"a.rego": []byte("x")})
	var fe *ForeignError
	if !errors.As(err, &fe) {
		t.Fatalf("got %v", err)
	}
	if got := read(t, filepath.Join(project, "README.md")); got != "mine" {
		t.Errorf("README holds %q", got)
	}
}

func TestWriteDirFailureLeavesNothing(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "rego")
	// "a" is a file in files and a folder in "a/b".
	err := WriteDir(dir, map[string][]byte{"a": []byte("x"), "a/b": []byte("y")})
	if err == nil {
		t.Fatal("no error")
	}
	// "z" is a folder already: staged files are taken away again.
	os.MkdirAll(filepath.Join(dir, "z", "zz"), 0o755)
	err = WriteDir(dir, map[string][]byte{"a": []byte("x"), "z": []byte("y")})
	if err == nil {
		t.Fatal("no error")
	}
	os.RemoveAll(dir)
	err = WriteDir(dir, map[string][]byte{"a": []byte("x"), "a/b": []byte("y")})
	if err == nil {
		t.Fatal("no error")
	}
	if got := entries(t, parent); len(got) != 0 {
		t.Errorf("left behind: %v", got)
	}
}

// TestWriteDirMarkerNotAFile: a marker that is a FIFO, a link or huge is
// refused at once (no hang, no read of /dev/zero).
func TestWriteDirMarkerNotAFile(t *testing.T) {
	for name, setup := range map[string]func(p string){
		"fifo":    func(p string) { syscall.Mkfifo(p, 0o600) },
		"symlink": func(p string) { os.Symlink("/dev/zero", p) },
		"huge":    func(p string) { os.WriteFile(p, bytes.Repeat([]byte("#\n"), maxMarker), 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			setup(filepath.Join(dir, Marker))
			err := WriteDir(dir, map[string][]byte{"a.rego": []byte("x")})
			var fe *ForeignError
			if !errors.As(err, &fe) || fe.Path != Marker {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// TestWriteDirAfterCutShort: a folder left by a write cut short between
// its two markers (temporary files staged, some renamed) is still chock's:
// the next write completes and removes the left-overs.
func TestWriteDirAfterCutShort(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDir(dir, map[string][]byte{"a.rego": []byte("old")}); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".b.rego.tmp123")
	os.WriteFile(tmp, []byte("new b"), 0o644)
	os.WriteFile(filepath.Join(dir, "a.rego"), []byte("new a"), 0o644)
	during := map[string][]string{"a.rego": {digest([]byte("old")), digest([]byte("new a"))}, ".b.rego.tmp123": {digest([]byte("new b"))}}
	if err := writeMarker(dir, during); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(dir, map[string][]byte{"a.rego": []byte("new a"), "b.rego": []byte("new b")}); err != nil {
		t.Fatal(err)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{".chock-written", "a.rego", "b.rego"}) {
		t.Errorf("folder holds %v", got)
	}
}

// TestWriteDirRefusesDanglingLink: a rego folder that is a link to
// nowhere is not made at the link's target.
func TestWriteDirRefusesDanglingLink(t *testing.T) {
	dir := t.TempDir()
	os.Symlink("../../somewhere/else", filepath.Join(dir, "rego"))
	if err := WriteDir(filepath.Join(dir, "rego"), map[string][]byte{"a": []byte("x")}); !errors.Is(err, ErrDanglingLink) {
		t.Fatalf("got %v", err)
	}
}
