package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// secretFilePrefix names the files of file-bound secrets: chock-secret-
// <pid>-<random>, so a later session can tell a crashed one's left-overs.
const secretFilePrefix = "chock-secret-"

// writeSecretFile writes value to a new file under dir, mode 0600, and
// returns its path and the function that deletes it.
func writeSecretFile(dir, session, value string) (string, func(), error) {
	f, err := os.CreateTemp(dir, fmt.Sprintf("%s%d-*", secretFilePrefix, os.Getpid()))
	if err != nil {
		return "", nil, err
	}
	path := f.Name()
	remove := func() { os.Remove(path) }
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		remove()
		return "", nil, err
	}
	if _, err := f.WriteString(value); err != nil {
		f.Close()
		remove()
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		remove()
		return "", nil, err
	}
	return path, remove, nil
}

// SweepSecretFiles deletes the secret files in dir whose process is gone:
// the left-overs of a session that crashed before it could delete them.
func SweepSecretFiles(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, secretFilePrefix) {
			continue
		}
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(name, secretFilePrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if err == nil && pid != os.Getpid() && processAlive(pid) {
			continue
		}
		if err == nil && pid == os.Getpid() {
			continue
		}
		// A directory is a sandbox's mount point, empty outside it: Remove
		// takes it only when it is.
		if os.Remove(filepath.Join(dir, name)) == nil {
			n++
		}
	}
	return n
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
