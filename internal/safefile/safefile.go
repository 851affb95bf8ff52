// Package safefile writes a command's output file without ever replacing
// what the user owns by mistake: a symlink is written through to its
// target, a FIFO or a device is written into rather than replaced, a
// regular file is replaced whole through a temporary file in its own
// folder (its mode and owner kept), and nothing partial is left behind on
// any error. Every chock command that writes a file writes it here.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// maxLinks bounds a chain of symlinks, as the kernel's ELOOP does.
const maxLinks = 40

// ErrNotWritable is wrapped by a refusal to write a kind of file chock
// does not write into: a directory, a socket.
var ErrNotWritable = errors.New("not a file chock writes")

// ErrDanglingLink is wrapped by a refusal to write through a symbolic
// link whose target is not there: a link in a repository can point
// anywhere (../.bash_aliases), and chock creates no file through one.
var ErrDanglingLink = errors.New("a symbolic link to a file that is not there")

// Resolve follows name's symlinks to the file a write lands in. A name
// that is not there is returned as it is, with fi nil: a new file. A
// symlink must lead to a file that exists: each link is read relative to
// the real folder it is in (its own folder's links resolved first), and
// one that leads nowhere is refused with ErrDanglingLink.
func Resolve(name string) (target string, fi fs.FileInfo, err error) {
	target = name
	for hop := 0; ; hop++ {
		fi, err = os.Lstat(target)
		if errors.Is(err, fs.ErrNotExist) {
			if hop > 0 {
				return "", nil, fmt.Errorf("%s is %w (%s); nothing written", name, ErrDanglingLink, target)
			}
			return target, nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return target, fi, nil
		}
		if hop == maxLinks {
			return "", nil, fmt.Errorf("%s: more than %d symbolic links", name, maxLinks)
		}
		link, err := os.Readlink(target)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(link) {
			dir, err := filepath.EvalSymlinks(filepath.Dir(target))
			if err != nil {
				return "", nil, err
			}
			link = filepath.Join(dir, link)
		}
		target = link
	}
}

// Write puts data in the file name: through a symlink to its target;
// into a FIFO or a device as it is; over a regular file by renaming a
// complete temporary file onto it, keeping its mode and owner. A new file
// gets perm. A directory or a socket is refused.
func Write(name string, data []byte, perm fs.FileMode) error {
	return write(name, data, perm, false)
}

// WritePrivate is Write for a file that must have exactly perm (0600 for
// credentials), whatever mode the file it replaces had. A FIFO or a
// device is refused: a private file is a regular one.
func WritePrivate(name string, data []byte, perm fs.FileMode) error {
	return write(name, data, perm, true)
}

func write(name string, data []byte, perm fs.FileMode, private bool) error {
	target, fi, err := Resolve(name)
	if err != nil {
		return err
	}
	if fi != nil {
		m := fi.Mode()
		switch {
		case m.IsDir():
			return fmt.Errorf("%s is a directory: %w", name, ErrNotWritable)
		case m&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeCharDevice) != 0 && !private:
			return writeInto(target, data)
		case !m.IsRegular():
			return fmt.Errorf("%s is a %s: %w", name, kind(m), ErrNotWritable)
		}
		if !private {
			perm = m.Perm()
		}
	}
	return replace(target, data, perm, fi)
}

func kind(m fs.FileMode) string {
	if m&fs.ModeSocket != 0 {
		return "socket"
	}
	return "special file"
}

// writeInto writes into a FIFO or a device, which stays what it is.
func writeInto(target string, data []byte) error {
	f, err := os.OpenFile(target, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// tempBeside creates the temporary file a write of target goes through,
// in target's own folder; a folder that is not there is said so, by its
// name, not the temporary file's.
func tempBeside(target string) (*os.File, error) {
	dir := filepath.Dir(target)
	f, err := os.CreateTemp(dir, "."+filepath.Base(target)+".tmp*")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cannot write %s: the folder %s is not there; nothing written: %w", target, dir, fs.ErrNotExist)
	}
	return f, err
}

// replace writes a complete temporary file beside target and renames it
// over target; the temporary file is gone whatever fails.
func replace(target string, data []byte, perm fs.FileMode, old fs.FileInfo) (err error) {
	dir := filepath.Dir(target)
	tmp, err := tempBeside(target)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if st, ok := statOf(old); ok && (int(st.Uid) != os.Geteuid() || int(st.Gid) != os.Getegid()) {
		// Keep the owner of the file replaced; only root can give a file
		// away, and otherwise the file was ours to begin with.
		if err := tmp.Chown(int(st.Uid), int(st.Gid)); err != nil && !errors.Is(err, fs.ErrPermission) {
			return err
		}
	}
	if err := finish(tmp, data); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	done = true
	syncDir(dir)
	return nil
}

func statOf(fi fs.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// syncDir makes a rename durable; a folder that cannot be synced is no
// reason to fail a write that already happened.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// ErrNotOurs is wrapped by Check's refusal of a file that is not what the
// command writes.
var ErrNotOurs = errors.New("not a file chock wrote")

// Check refuses to let a command replace a regular file that is not its
// own kind of output (ours says, reading the file), so a mistyped -o cannot
// replace the user's chock.zon. A file that is not there, an empty one, a
// FIFO and a device pass; a link to nowhere does not (ErrDanglingLink).
func Check(name string, ours func(r io.Reader) bool, what string) error {
	target, fi, err := Resolve(name)
	if err != nil || fi == nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
		return err
	}
	f, err := os.Open(target)
	if err != nil {
		return err
	}
	defer f.Close()
	if !ours(f) {
		return fmt.Errorf("%s exists and is not %s, so it is not replaced; nothing written: %w", name, what, ErrNotOurs)
	}
	return nil
}

// finish writes data to a temporary file, syncs and closes it: the file is
// whole on disk before it takes a name.
func finish(tmp *os.File, data []byte) error {
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	return tmp.Close()
}
