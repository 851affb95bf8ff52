package waitfor

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Exit waits up to timeout for the process pid to exit, any process, not
// only a child: its pidfd becomes readable when it does. A process that
// is already gone (or was never there) has exited.
func Exit(pid int, timeout time.Duration) (bool, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left < 0 {
			left = 0
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return false, fmt.Errorf("polling the pidfd of %d: %w", pid, err)
		case n > 0:
			return true, nil
		case left == 0:
			return false, nil
		}
	}
}
