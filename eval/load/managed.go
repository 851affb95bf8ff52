package load

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
)

// ManagedDir is where the machine's managed org ceilings are: org sources
// (*.zon) and org bundles (*.tar.gz) that every command that decides
// applies, before any --org, and that no flag or variable can drop. It is
// a constant on purpose: a path an agent could set (an environment
// variable in a file it writes) would let it drop the ceiling.
const ManagedDir = "/etc/chock/org.d"

// maxManaged bounds one managed file.
const maxManaged = 64 << 20

// ErrManaged is a managed ceiling chock cannot trust or read: it then
// decides nothing (a decision that cannot be made is a deny).
var ErrManaged = errors.New("the managed org ceilings cannot be used")

// Managed reads the managed org ceilings in dir (ManagedDir): none when dir
// does not exist. The folder, the folders above it and every file in it
// must be owned by root and not writable by group or others, and each file a regular file (not
// a link); anything else is ErrManaged, naming the file and why.
func Managed(dir string) ([]Source, error) {
	// The folders above it must be root's too: one another user may write
	// could have the ceiling moved away, or replaced.
	for up := filepath.Dir(dir); ; up = filepath.Dir(up) {
		st, err := os.Lstat(up)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("%w: %v", ErrManaged, err)
		default:
			if err := trusted(up, st, true); err != nil {
				return nil, err
			}
		}
		if up == filepath.Dir(up) {
			break
		}
	}
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrManaged, err)
	}
	if err := trusted(dir, st, true); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrManaged, err)
	}
	var out []Source
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".zon") && !strings.HasSuffix(name, ".tar.gz") {
			continue
		}
		path := filepath.Join(dir, name)
		b, err := readTrusted(path)
		if err != nil {
			return nil, err
		}
		out = append(out, Source{Name: path, Data: b})
	}
	return out, nil
}

// readTrusted reads a managed file, checking what it opened (not the name
// again): a regular file owned by root, not writable by group or others.
func readTrusted(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v (a managed ceiling is a regular file, not a link)", ErrManaged, path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrManaged, err)
	}
	if err := trusted(path, st, false); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxManaged+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrManaged, path, err)
	}
	if len(b) > maxManaged {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrManaged, path, maxManaged)
	}
	return b, nil
}

// trusted says why st (of path) is not a managed folder or file anyone
// but root could have written, or nil.
func trusted(path string, st fs.FileInfo, dir bool) error {
	switch {
	case dir && !st.IsDir():
		return fmt.Errorf("%w: %s is not a folder", ErrManaged, path)
	case !dir && !st.Mode().IsRegular():
		return fmt.Errorf("%w: %s is not a regular file", ErrManaged, path)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Uid != 0 {
		return fmt.Errorf("%w: %s is not owned by root", ErrManaged, path)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %04o)", ErrManaged, path, st.Mode().Perm())
	}
	return nil
}

// ErrMissingOrg is a policy without an org ceiling it must have: one the
// machine manages, or one the project's .orgs names.
var ErrMissingOrg = errors.New("a required org ceiling is missing")

// RequireOrgs checks that the policy p decides under a ceiling of each
// name in need, and of each the policy itself expects (.orgs, kept in a
// bundle's meta): ErrMissingOrg naming the first that is not there.
func RequireOrgs(p *Policy, need []string) error {
	m := p.Engine.Meta()
	var have []string
	for _, l := range m.Layers {
		if l.Kind == "org" {
			have = append(have, l.Name)
		}
	}
	have = append(have, m.Orgs...)
	all := append(append([]string(nil), need...), m.Expects...)
	if p.Config != nil {
		for _, o := range p.Config.Orgs.Value {
			all = append(all, o.Value)
		}
	}
	for _, n := range all {
		if !slices.Contains(have, n) {
			return fmt.Errorf("%w: the policy has no org ceiling %q (it has %s), so chock decides nothing under it", ErrMissingOrg, n, orgList(have))
		}
	}
	return nil
}

func orgList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// OrgNames are the names of the org ceilings in srcs (org sources and org
// bundles), as their files give them.
func OrgNames(srcs []Source, ro compile.ReadOptions) ([]string, error) {
	var out []string
	for _, s := range srcs {
		if IsBundle(s.Data) {
			o, err := compile.ReadOrgBundle(s.Name, strings.NewReader(string(s.Data)), ro)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrManaged, err)
			}
			out = append(out, o.Name.Value)
			continue
		}
		o, ds := config.LoadOrg(s.Name, s.Data)
		if o == nil || ds.HasErrors() {
			return nil, fmt.Errorf("%w: %s does not decode as an org source", ErrManaged, s.Name)
		}
		out = append(out, o.Name.Value)
	}
	return out, nil
}
