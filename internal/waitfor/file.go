package waitfor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// File waits up to timeout for path to exist, woken by its directory's
// changes (the directory must exist).
func File(path string, timeout time.Duration) (bool, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return false, fmt.Errorf("watching for %s: %w", path, err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		return false, fmt.Errorf("watching for %s: %w", path, err)
	}
	exists := func() bool {
		_, err := os.Stat(path)
		return !errors.Is(err, fs.ErrNotExist)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !exists() {
		select {
		case <-w.Events:
		case err := <-w.Errors:
			return false, fmt.Errorf("watching for %s: %w", path, err)
		case <-deadline.C:
			return exists(), nil
		}
	}
	return true, nil
}
