package runtime

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPrescanOnlyForItsPath: a session takes a prescan's programs when it
// scanned the session's PATH, and scans for itself when it did not.
func TestPrescanOnlyForItsPath(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	pre := StartPrescan([]string{"PATH=" + dir})
	p, err := pre.programs(dir, nil)
	if err != nil || len(p.Means("tool")) != 1 {
		t.Fatalf("%v %v", p, err)
	}
	other, err := StartPrescan([]string{"PATH=" + dir}).programs("/usr/bin", nil)
	if err != nil || len(other.Means("tool")) != 0 || len(other.Means("true")) != 1 {
		t.Fatalf("a prescan of another PATH was used: %v", err)
	}
	if p, err := (*Prescan)(nil).programs(dir, nil); err != nil || len(p.Means("tool")) != 1 {
		t.Fatalf("no prescan: %v %v", p, err)
	}
}
