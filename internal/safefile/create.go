package safefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists is wrapped by Create's refusal of a name that is already
// there: a file, a folder, a symbolic link (one that leads nowhere too).
var ErrExists = errors.New("already exists")

// Create writes data to a new file name with perm, and never replaces
// anything: a name that exists in any form, a dangling symlink included,
// is refused with ErrExists. The file appears whole or not at all: data
// goes to a temporary file in the same folder, which is then linked to
// name (link(2) fails rather than replace) and removed, so a second
// writer racing for the same name cannot be overwritten either.
func Create(name string, data []byte, perm fs.FileMode) (err error) {
	if _, err := os.Lstat(name); err == nil {
		return fmt.Errorf("%s %w; nothing written", name, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(name)
	tmp, err := tempBeside(name)
	if err != nil {
		return err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if err := finish(tmp, data); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s %w; nothing written", name, ErrExists)
		}
		return err
	}
	syncDir(dir)
	return nil
}
