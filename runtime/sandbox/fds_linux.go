package sandbox

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeInherited marks every descriptor past stderr close-on-exec, so the
// program starts with its three and nothing else: Go's exec passes on
// whatever chock itself holds without close-on-exec (one its parent, the
// client, left open), and through such a descriptor a program reads a
// file or reaches a socket past every mount and namespace. Without
// close_range's CLOEXEC (Linux 5.11) each one in /proc/self/fd is marked;
// a list that cannot be read refuses the call.
func closeInherited() error {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return nil
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
