package safefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// entries lists a folder, so a test can see no temporary file was left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteNewAndReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	if err := Write(p, []byte("one"), 0o640); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("new file mode %v, want 0640", fi.Mode().Perm())
	}
	os.Chmod(p, 0o600)
	if err := Write(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read(t, p); got != "two" {
		t.Errorf("got %q", got)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want the old 0600", fi.Mode().Perm())
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Errorf("folder holds %v", es)
	}
}

func TestWriteThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	target := filepath.Join(dir, "real", "file.zon")
	os.WriteFile(target, []byte("old"), 0o600)
	// a chain: link1 -> link2 -> real/file.zon, relative links
	os.Symlink("link2", filepath.Join(dir, "link1"))
	os.Symlink("real/file.zon", filepath.Join(dir, "link2"))
	if err := Write(filepath.Join(dir, "link1"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read(t, target); got != "new" {
		t.Errorf("target holds %q", got)
	}
	for _, l := range []string{"link1", "link2"} {
		fi, err := os.Lstat(filepath.Join(dir, l))
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink: %v %v", l, fi, err)
		}
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Errorf("target mode %v, want 0600 kept", fi.Mode().Perm())
	}
	// a dangling link is refused: no file is made through a link
	os.Symlink("../elsewhere/.bash_aliases", filepath.Join(dir, "dangling"))
	if err := Write(filepath.Join(dir, "dangling"), []byte("x"), 0o644); !errors.Is(err, ErrDanglingLink) {
		t.Fatalf("a write through a dangling link: %v", err)
	}
	if err := Check(filepath.Join(dir, "dangling"), func(io.Reader) bool { return true }, "x"); !errors.Is(err, ErrDanglingLink) {
		t.Errorf("Check passed a dangling link: %v", err)
	}
	// a loop is an error, not a hang
	os.Symlink("loop", filepath.Join(dir, "loop"))
	if err := Write(filepath.Join(dir, "loop"), []byte("x"), 0o644); err == nil {
		t.Error("a symlink loop was written")
	}
}

// TestRelativeLinkInLinkedFolder: a relative link is read from the real
// folder it is in, as the kernel reads it, not from the path's text.
func TestRelativeLinkInLinkedFolder(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "victim"), []byte("a/victim"), 0o644)
	os.WriteFile(filepath.Join(dir, "victim"), []byte("user file"), 0o644)
	os.Symlink("a/b", filepath.Join(dir, "lnk"))
	os.Symlink("../victim", filepath.Join(dir, "a", "b", "out"))
	if err := Write(filepath.Join(dir, "lnk", "out"), []byte("written"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, "a", "victim")); got != "written" {
		t.Errorf("a/victim holds %q", got)
	}
	if got := read(t, filepath.Join(dir, "victim")); got != "user file" {
		t.Errorf("the wrong file was written: victim holds %q", got)
	}
}

func TestWriteFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	if err := Write(p, []byte("through the pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through the pipe" {
		t.Errorf("reader got %q", s)
	}
	fi, _ := os.Lstat(p)
	if fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the FIFO became %v", fi.Mode())
	}
}

func TestWriteDevice(t *testing.T) {
	if err := Write(os.DevNull, []byte("discarded"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(os.DevNull)
	if err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a device: %v %v", os.DevNull, fi.Mode(), err)
	}
}

func TestWriteRefusesFolder(t *testing.T) {
	dir := t.TempDir()
	err := Write(dir, []byte("x"), 0o644)
	if !errors.Is(err, ErrNotWritable) {
		t.Errorf("got %v", err)
	}
}

// TestWriteErrorLeavesNothing fails the write of the temporary file
// itself (a file size limit of 4 bytes, as a full disk would): the old
// file is untouched and no temporary file is left.
func TestWriteErrorLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	os.WriteFile(p, []byte("kept"), 0o644)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	signal.Ignore(syscall.SIGXFSZ)
	defer signal.Reset(syscall.SIGXFSZ)
	lim := syscall.Rlimit{Cur: 4, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	err := Write(p, []byte("a great deal more than four bytes"), 0o644)
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
	if err == nil {
		t.Fatal("the write passed the file size limit")
	}
	if got := read(t, p); got != "kept" {
		t.Errorf("the old file holds %q", got)
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Errorf("left behind: %v", es)
	}
	if err := Write(filepath.Join(dir, "missing", "out"), []byte("x"), 0o644); err == nil {
		t.Error("wrote into a folder that is not there")
	}
}
