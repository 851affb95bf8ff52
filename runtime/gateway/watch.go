package gateway

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// settle is how long the files must stay quiet after a change before it is
// acted on: an editor's save is several events (a temporary file, a
// rename, a chmod), and the policy is read once they are done.
const settle = 150 * time.Millisecond

// Watch calls changed whenever one of files is written, created, renamed
// over or removed, once the changes settle, until ctx ends. It watches the
// folders that hold the files (and, for a symlink, its target's), since
// an editor saves by renaming a new file over the old one, which a watch
// on the file itself would lose. ready, when not nil, is closed once the
// watches are in place.
func Watch(ctx context.Context, files []string, changed func(), ready chan<- struct{}) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the policy's files: %w", err)
	}
	defer w.Close()
	want := map[string]bool{}
	dirs := map[string]bool{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		want[abs] = true
		dirs[filepath.Dir(abs)] = true
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			want[real] = true
			dirs[filepath.Dir(real)] = true
		}
	}
	for d := range dirs {
		if err := w.Add(d); err != nil {
			return fmt.Errorf("watching %s: %w", d, err)
		}
	}
	if ready != nil {
		close(ready)
	}
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("the file watch ended")
			}
			if !want[filepath.Clean(ev.Name)] || ev.Op == fsnotify.Chmod {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(settle)
			} else {
				timer.Reset(settle)
			}
			fire = timer.C
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("the file watch ended")
			}
			return fmt.Errorf("watching the policy's files: %w", err)
		case <-fire:
			fire = nil
			changed()
		}
	}
}
