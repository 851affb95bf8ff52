package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCreateNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "chock.zon")
	if err := Create(p, []byte(".{}\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if got := read(t, p); got != ".{}\n" {
		t.Errorf("got %q", got)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Errorf("folder holds %v; want only the file", es)
	}
}

// TestCreateRefuses: whatever is at the name, a file, a folder, a link to
// a file or a link to nowhere, stays as it was and nothing else appears.
func TestCreateRefuses(t *testing.T) {
	for _, kind := range []string{"file", "dir", "link", "dangling"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "chock.zon")
			other := filepath.Join(dir, "other")
			switch kind {
			case "file":
				os.WriteFile(p, []byte("mine"), 0o644)
			case "dir":
				os.Mkdir(p, 0o755)
			case "link":
				os.WriteFile(other, []byte("mine"), 0o644)
				os.Symlink(other, p)
			case "dangling":
				os.Symlink(other, p)
			}
			before := entries(t, dir)
			err := Create(p, []byte("new"), 0o644)
			if !errors.Is(err, ErrExists) {
				t.Fatalf("Create over a %s: %v, want ErrExists", kind, err)
			}
			if got := entries(t, dir); len(got) != len(before) {
				t.Errorf("folder holds %v, had %v", got, before)
			}
			if kind == "file" || kind == "link" {
				if got := read(t, p); got != "mine" {
					t.Errorf("the file holds %q", got)
				}
			}
			if kind == "dangling" {
				if _, err := os.Lstat(other); err == nil {
					t.Errorf("a file was created through the dangling link")
				}
			}
		})
	}
}
