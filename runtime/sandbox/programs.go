package sandbox

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
)

// FileID is a file's identity: its device and inode, and its inode's
// change time, so that a file deleted and another made that reuses its
// inode number is not taken for it.
type FileID struct {
	Dev, Ino uint64
	Ctime    int64
}

func idOf(st *syscall.Stat_t) FileID {
	return FileID{Dev: uint64(st.Dev), Ino: st.Ino, Ctime: st.Ctim.Nano()}
}

// Identify stats path, symlinks followed, and returns the identity of the
// regular file it names.
func Identify(path string) (FileID, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return FileID{}, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return FileID{}, fmt.Errorf("%s is not a regular file", path)
	}
	return idOf(&st), nil
}

// File is one program file: where it is (symlinks resolved) and what it is.
type File struct {
	Path string
	ID   FileID
}

// Programs is the session's PATH, resolved once when the session starts:
// which file each exec.path.NAME means. It is read-only after Scan.
type Programs struct {
	// Dirs are the PATH's directories that exist, in order.
	Dirs []string
	// means is the file exec.path.NAME means, and what a bare NAME runs:
	// the first PATH entry of that name, symlinks followed.
	means map[string]File
	// pins are the programs chock.zon pins to files: they mean only those.
	pins map[string][]File
}

// Pin is a program chock.zon pins to files (.programs).
type Pin struct {
	Name  string
	Paths []string
}

// Scan resolves path (a PATH value) and the pins. A relative or empty
// PATH entry is ignored: it would name a different directory in every
// call's working directory, so nothing could mean one file by it.
func Scan(path string, pins []Pin) (*Programs, error) {
	return ScanPath(path).Programs(pins), nil
}

// PathScan is what a PATH's folders hold, before any pin: the part of Scan
// that reads the file system folder by folder, which a caller may start
// early (beside loading the policy that names the pins).
type PathScan struct {
	// Path is the PATH value scanned.
	Path string
	p    *Programs
}

// Programs are the scan's programs with the pins. The first call takes
// what was scanned; a later one scans the folders again, so no two
// sessions share one scan's state.
func (s *PathScan) Programs(pins []Pin) *Programs {
	p := s.p
	s.p = nil
	if p == nil {
		p = ScanPath(s.Path).p
	}
	p.pin(pins)
	return p
}

// ScanPath scans the folders of path (a PATH value), as Scan does.
func ScanPath(path string) *PathScan {
	p := &Programs{means: map[string]File{}, pins: map[string][]File{}}
	seen, mounted := map[string]bool{}, map[string]bool{}
	for _, dir := range strings.Split(path, ":") {
		if !filepath.IsAbs(dir) || seen[dir] {
			continue
		}
		seen[dir] = true
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		// A directory is mounted read-only once, where it really is (/bin
		// is /usr/bin on a merged-/usr system).
		if real, err := filepath.EvalSymlinks(dir); err == nil && !mounted[real] {
			mounted[real] = true
			p.Dirs = append(p.Dirs, real)
		}
		for _, e := range ents {
			name := e.Name()
			if _, ok := p.means[name]; ok {
				continue
			}
			full := filepath.Join(dir, name)
			f, ok := executable(full)
			if !ok {
				continue
			}
			if e.Type()&os.ModeSymlink != 0 {
				real, err := filepath.EvalSymlinks(full)
				if err != nil {
					continue
				}
				f.Path = real
			}
			p.means[name] = f
		}
	}
	return &PathScan{Path: path, p: p}
}

// pin resolves the pins.
func (p *Programs) pin(pins []Pin) {
	for _, pin := range pins {
		for _, path := range pin.Paths {
			f, ok := executable(path)
			if !ok {
				continue // a pinned file that is not there runs nothing
			}
			if real, err := filepath.EvalSymlinks(path); err == nil {
				f.Path = real
			}
			p.pins[pin.Name] = append(p.pins[pin.Name], f)
		}
		if _, ok := p.pins[pin.Name]; !ok {
			p.pins[pin.Name] = nil // pinned to nothing that exists: runs nowhere
		}
	}
}

func executable(path string) (File, bool) {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Mode&0o111 == 0 {
		return File{}, false
	}
	return File{Path: path, ID: idOf(&st)}, true
}

// Names are the program names the session knows, sorted: every name
// exec.path.NAME can mean a file by.
func (p *Programs) Names() []string {
	out := make([]string, 0, len(p.means)+len(p.pins))
	for n := range p.means {
		if _, pinned := p.pins[n]; !pinned {
			out = append(out, n)
		}
	}
	for n := range p.pins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Means is the files exec.path.name means (none when the name is neither
// on the PATH nor pinned).
func (p *Programs) Means(name string) []File {
	if fs, ok := p.pins[name]; ok {
		return fs
	}
	if f, ok := p.means[name]; ok {
		return []File{f}
	}
	return nil
}

// Resolved is the program a call runs.
type Resolved struct {
	// Name is what the policy decides it under: exec.path.<Name>.
	Name string
	File File
	// OnPath says the file is what Name resolves to on the session's PATH:
	// only such a program can be given a secret.
	OnPath bool
}

// IdentityError is an argv[0] that does not run the file its name means.
type IdentityError struct {
	Argv0 string
	Name  string
	// Given is the file argv[0] names ("" when it names none); Means the
	// files exec.path.<Name> means (none when Name is not on the PATH).
	Given string
	Means []File
	Err   error
}

func (e *IdentityError) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("%s is not a program file: %v", e.Argv0, e.Err)
	case e.Given == "":
		return fmt.Sprintf("%s is not on the session's PATH", e.Argv0)
	case len(e.Means) == 0:
		return fmt.Sprintf("%s is %s, and no program named %s is on the session's PATH (only a program on it, or one chock.zon pins, runs)", e.Argv0, e.Given, e.Name)
	}
	paths := make([]string, len(e.Means))
	for i, f := range e.Means {
		paths[i] = f.Path
	}
	return fmt.Sprintf("%s is %s, but exec.path.%s means %s", e.Argv0, e.Given, e.Name, strings.Join(paths, " or "))
}

// Resolve finds the file argv0 runs and the name the policy decides it
// under. A bare name runs what it means on the session's PATH (or its pin).
// A path (from dir, when relative) must be a file its base name means, or,
// for a symlink, a file its target's name means; else *IdentityError,
// which names the file the policy means.
func (p *Programs) Resolve(argv0, dir string) (Resolved, error) {
	if !strings.Contains(argv0, "/") {
		means := p.Means(argv0)
		f, ok := p.means[argv0]
		switch {
		case !ok && len(means) == 0:
			return Resolved{}, &IdentityError{Argv0: argv0, Name: argv0}
		case !ok:
			f = means[0] // pinned, and not on the PATH
		}
		for _, m := range means {
			if m.ID == f.ID {
				return Resolved{Name: argv0, File: f, OnPath: ok}, nil
			}
		}
		return Resolved{}, &IdentityError{Argv0: argv0, Name: argv0, Given: f.Path, Means: means}
	}
	path := argv0
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	f, ok := executable(path)
	if !ok {
		_, err := Identify(path)
		if err == nil {
			err = errors.New("it is not executable")
		}
		return Resolved{}, &IdentityError{Argv0: argv0, Err: err}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return Resolved{}, &IdentityError{Argv0: argv0, Err: err}
	}
	f.Path = real
	base := filepath.Base(path)
	names := []string{base}
	if t := filepath.Base(real); t != base {
		names = append(names, t) // a symlink is decided under its target's name
	}
	for pn, fs := range p.pins {
		for _, pf := range fs {
			if pf.ID == f.ID {
				names = append(names, pn) // a file chock.zon pins runs under the pin's name
			}
		}
	}
	for _, name := range names {
		for _, m := range p.Means(name) {
			if m.ID == f.ID {
				pf, on := p.means[name]
				return Resolved{Name: name, File: f, OnPath: on && pf.ID == f.ID}, nil
			}
		}
	}
	name := names[min(len(names)-1, 1)]
	return Resolved{}, &IdentityError{Argv0: argv0, Name: name, Given: real, Means: p.Means(name)}
}

// NamesOf is every name that means the file: under any of them the
// policy may let it run.
func (p *Programs) NamesOf(id FileID) []string {
	var out []string
	for n, f := range p.means {
		if _, pinned := p.pins[n]; !pinned && f.ID == id {
			out = append(out, n)
		}
	}
	for n, fs := range p.pins {
		for _, f := range fs {
			if f.ID == id {
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Shared is one file the programs mean under more than one name (sh and
// dash, where /usr/bin/sh is dash), with its names sorted.
type Shared struct {
	File  File
	Names []string
}

// Shared is every file the PATH and the pins mean under more than one
// name, sorted by path: the files a policy decides under each of their
// names, the strictest decision winning.
func (p *Programs) Shared() []Shared {
	byID := map[FileID]*Shared{}
	for _, n := range p.Names() {
		for _, f := range p.Means(n) {
			sh := byID[f.ID]
			if sh == nil {
				sh = &Shared{File: f}
				byID[f.ID] = sh
			}
			if !slices.Contains(sh.Names, n) {
				sh.Names = append(sh.Names, n)
			}
		}
	}
	var out []Shared
	for _, sh := range byID {
		if len(sh.Names) > 1 {
			out = append(out, *sh)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File.Path < out[j].File.Path })
	return out
}

// Interpreter is the file the kernel runs a program with: an ELF's
// PT_INTERP or a script's #! interpreter ("" for a static ELF). The
// kernel needs the execute right on it too.
func Interpreter(path string) (string, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if strings.HasPrefix(string(head), "#!") {
		line := string(head[2:])
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return "", true, fmt.Errorf("%s has an empty #! line", path)
		}
		return fields[0], true, nil
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return "", false, nil // neither: the kernel refuses it itself
	}
	defer ef.Close()
	for _, prog := range ef.Progs {
		if prog.Type == elf.PT_INTERP {
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return "", false, err
			}
			return strings.TrimRight(string(b), "\x00"), false, nil
		}
	}
	return "", false, nil
}
