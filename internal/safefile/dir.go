package safefile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// Marker is the file in a folder written by WriteDir that lists what it
// wrote there, each file with its SHA-256, so a later write replaces only
// those files, and only while they are as written.
const Marker = ".chock-written"

const markerHeader = "# chock wrote the files below; it replaces them only while they hold what it wrote.\n"

// ForeignError is a refusal to write into a folder that holds something
// chock did not write, or a file of chock's that was changed since.
type ForeignError struct {
	Dir  string
	Path string // relative to Dir, slash-separated
	// Changed is true for a file chock wrote that was edited since.
	Changed bool
}

func (e *ForeignError) Error() string {
	if e.Changed {
		return fmt.Sprintf("%s: %s was changed since chock wrote it; nothing written (move it away, or give a new or empty folder)", e.Dir, e.Path)
	}
	return fmt.Sprintf("%s holds %s, which chock did not write; nothing written (give a new or empty folder, or one chock wrote)", e.Dir, e.Path)
}

// WriteDir writes files (slash-separated paths relative to dir) into dir
// and records them in its Marker. dir may be new, empty, or one WriteDir
// wrote before whose files are unchanged; anything else in it is refused
// with a *ForeignError before anything is written. Files of an earlier
// write that are not in files are removed. Every file is written to a
// temporary file first, and renamed into place only when all of them are
// complete.
func WriteDir(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for name := range files {
		if !fs.ValidPath(name) || name == "." || name == Marker {
			return fmt.Errorf("safefile: %q is not a relative file path", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, ok := files[d]; ok {
				return fmt.Errorf("safefile: %q is a file and the folder of %q", d, name)
			}
		}
	}
	real, created, err := prepareDir(dir)
	if err != nil {
		return err
	}
	old, err := checkOwned(dir, real)
	if err != nil {
		w := &stager{dirs: created}
		w.abort()
		return err
	}
	w := &stager{root: real, dirs: created}
	for _, name := range names {
		if err := w.stage(name, files[name]); err != nil {
			w.abort()
			return err
		}
	}
	// Before anything is renamed, the marker lists what the folder may
	// hold until the write is done (the old files, the new ones and the
	// staged ones), so a write cut short leaves a folder chock still owns.
	during := map[string][]string{}
	for name, sums := range old {
		during[name] = append(during[name], sums...)
	}
	for _, name := range names {
		during[name] = append(during[name], digest(files[name]))
	}
	for _, st := range w.temps {
		rel, _ := filepath.Rel(real, st.tmp)
		during[filepath.ToSlash(rel)] = []string{st.sum}
	}
	if err := writeMarker(real, during); err != nil {
		w.abort()
		return err
	}
	if err := w.commit(); err != nil {
		return err
	}
	for rel := range old {
		if _, keep := files[rel]; !keep {
			p := filepath.Join(real, filepath.FromSlash(rel))
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			removeEmptyParents(real, filepath.Dir(p))
		}
	}
	final := map[string][]string{}
	for _, name := range names {
		final[name] = []string{digest(files[name])}
	}
	return writeMarker(real, final)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// writeMarker writes the marker: one "sha256  path" line for each digest
// a file may have.
func writeMarker(real string, owned map[string][]string) error {
	names := make([]string, 0, len(owned))
	for name := range owned {
		names = append(names, name)
	}
	sort.Strings(names)
	var m bytes.Buffer
	m.WriteString(markerHeader)
	for _, name := range names {
		for _, sum := range owned[name] {
			fmt.Fprintf(&m, "%s  %s\n", sum, name)
		}
	}
	return replace(filepath.Join(real, Marker), m.Bytes(), 0o644, nil)
}

// prepareDir resolves dir's symlinks, making it (and the folders above
// it that are not there) when it is not there; created lists what it made.
func prepareDir(dir string) (real string, created []string, err error) {
	real, fi, err := Resolve(filepath.Clean(dir))
	if err != nil {
		return "", nil, err
	}
	if fi != nil {
		if !fi.IsDir() {
			return "", nil, fmt.Errorf("%s exists and is not a folder", dir)
		}
		return real, nil, nil
	}
	var missing []string
	for d := real; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil {
			(&stager{dirs: created}).abort()
			return "", nil, err
		}
		created = append(created, missing[i])
	}
	return real, created, nil
}

// maxMarker bounds the marker file read back.
const maxMarker = 1 << 20

// readMarker reads the marker of real: a regular file (never followed
// through a link, never a FIFO), at most maxMarker bytes. Each path may
// have several digests (a write that was cut short).
func readMarker(dir, real string) (map[string][]string, error) {
	owned := map[string][]string{}
	p := filepath.Join(real, Marker)
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return owned, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxMarker {
		return nil, &ForeignError{Dir: dir, Path: Marker}
	}
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMarker+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxMarker {
		return nil, &ForeignError{Dir: dir, Path: Marker}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 || !fs.ValidPath(name) || name == Marker {
			return nil, fmt.Errorf("%s: %s is not as chock writes it; nothing written", dir, Marker)
		}
		owned[name] = append(owned[name], sum)
	}
	return owned, nil
}

// checkOwned reads the marker of real and checks that everything in the
// folder is a file it lists, unchanged. It returns the listed files.
func checkOwned(dir, real string) (map[string][]string, error) {
	owned, err := readMarker(dir, real)
	if err != nil {
		return nil, err
	}
	parents := map[string]bool{}
	for name := range owned {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			parents[d] = true
		}
	}
	err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(real, p)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == "." || rel == Marker && d.Type().IsRegular():
			return nil
		case d.IsDir():
			if parents[rel] {
				return nil
			}
			return &ForeignError{Dir: dir, Path: rel + "/"}
		}
		sums, ok := owned[rel]
		if !ok || !d.Type().IsRegular() {
			return &ForeignError{Dir: dir, Path: rel}
		}
		data, err := readRegular(p)
		if err != nil {
			return err
		}
		if !slices.Contains(sums, digest(data)) {
			return &ForeignError{Dir: dir, Path: rel, Changed: true}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return owned, nil
}

// stager writes complete temporary files and renames them all at the end.
type stager struct {
	root  string
	dirs  []string // folders it made, removed again on abort
	temps []staged
}

type staged struct{ tmp, final, sum string }

func (w *stager) stage(name string, data []byte) error {
	final := filepath.Join(w.root, filepath.FromSlash(name))
	if err := w.mkdirs(filepath.Dir(final)); err != nil {
		return err
	}
	f, err := tempBeside(final)
	if err != nil {
		return err
	}
	w.temps = append(w.temps, staged{f.Name(), final, digest(data)})
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (w *stager) mkdirs(dir string) error {
	if dir == w.root || len(dir) < len(w.root) {
		return nil
	}
	if fi, err := os.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a folder", dir)
		}
		return nil
	}
	if err := w.mkdirs(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	w.dirs = append(w.dirs, dir)
	return nil
}

// readRegular reads a file WriteDir listed, never through a link.
func readRegular(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func (w *stager) abort() {
	for _, s := range w.temps {
		os.Remove(s.tmp)
	}
	for i := len(w.dirs) - 1; i >= 0; i-- {
		os.Remove(w.dirs[i]) // only if empty: it was made here
	}
}

func (w *stager) commit() error {
	for i, s := range w.temps {
		if err := os.Rename(s.tmp, s.final); err != nil {
			for _, rest := range w.temps[i:] {
				os.Remove(rest.tmp)
			}
			return err
		}
	}
	return nil
}

// removeEmptyParents removes dir and its parents up to root while empty.
func removeEmptyParents(root, dir string) {
	for dir != root && len(dir) > len(root) {
		if os.Remove(dir) != nil {
			return
		}
		dir = filepath.Dir(dir)
	}
}
