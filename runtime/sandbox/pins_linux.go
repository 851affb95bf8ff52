package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// openPinned opens path (O_PATH) and, when pins has it, checks that it is
// the file the session started with (device and inode): the caller then
// works on the descriptor, never on what the path names later. A path
// that is gone, or is another file now, is an error naming it.
func openPinned(path string, pins map[string]Inode) (int, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR {
			return -1, fmt.Errorf("it is gone since the session started (moved by an earlier call?): %w", err)
		}
		return -1, err
	}
	want, ok := pins[path]
	if !ok {
		return fd, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if uint64(st.Dev) != want.Dev || st.Ino != want.Ino {
		unix.Close(fd)
		return -1, fmt.Errorf("it is not the file it was when the session started (a folder above it moved and another put in its place?)")
	}
	return fd, nil
}
