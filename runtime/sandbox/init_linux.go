package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// The init's file descriptors: the spec to read, and the control socket
// that carries the seccomp listener and any failure back to chock.
const (
	specFD = 3
	ctlFD  = 4
)

// initFailed is the init's exit code when the sandbox could not be made
// (chock reads the reason from the control socket).
const initFailed = 125

// MaybeInit runs the sandbox init and never returns when this process was
// started as one (argv[0] is InitArg); otherwise it returns at once. Call
// it first thing in main (and in TestMain of a test binary that starts
// sandboxes).
func MaybeInit() {
	if len(os.Args) == 0 || os.Args[0] != InitArg {
		return
	}
	err := runInit()
	// Only a failure returns: report it, and exit.
	msg := err.Error()
	var e *Error
	if errors.As(err, &e) {
		msg = e.Step + "\x00" + e.Err.Error()
	}
	unix.Sendmsg(ctlFD, []byte(msg), nil, nil, 0)
	os.Exit(initFailed)
}

func runInit() error {
	spec, err := readSpec()
	if err != nil {
		return &Error{Step: "reading the spec", Err: err}
	}
	if spec.IDs != nil {
		if err := mapIDs(spec.IDs); err != nil {
			return &Error{Step: "mapping the user namespace's root", Err: err}
		}
	}
	if spec.NetOnly {
		return netOnlyInit(spec)
	}
	// Nothing this process does from here may move to another thread: the
	// Landlock domain and the seccomp filter are set on this one, and the
	// program is exec'd from it.
	runtime.LockOSThread()
	// The working directory is entered by its path once every mount is
	// made: the one inherited sits on the original root mount, under every
	// later mount, so a relative path from it would walk past the hiding
	// and the writable binds.
	dir := spec.Dir
	if dir == "" {
		wd, err := unix.Getwd()
		if err != nil {
			return &Error{Step: "finding the working directory", Err: err}
		}
		dir = wd
	}
	if !filepath.IsAbs(dir) {
		return &Error{Step: "entering " + dir, Err: fmt.Errorf("the working directory %q is not an absolute path", dir)}
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return &Error{Step: "making mounts private", Err: err}
	}
	// Everything read-only, then the writable folders rw again, then the
	// protected paths read-only over those.
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(-1, "/", unix.AT_RECURSIVE, &ro); err != nil {
		return &Error{Step: "making the file system read-only", Err: err}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return &Error{Step: "mounting /proc", Err: err}
	}
	backs, err := privateDirs(spec)
	if err != nil {
		return &Error{Step: "mounting the session's temporary folders", Err: err}
	}
	for _, d := range spec.Writable {
		if err := bindWritable(d); err != nil {
			return &Error{Step: "mounting " + d + " writable", Err: err}
		}
	}
	if err := boundBackReadOnly(spec, backs); err != nil {
		return err
	}
	for _, d := range spec.ReadOnly {
		if err := bindReadOnly(d, spec.Pins); err != nil {
			return &Error{Step: "mounting " + d + " read-only", Err: err}
		}
	}
	for _, h := range spec.Hide {
		if err := hide(h, spec.Pins); err != nil {
			return &Error{Step: "hiding " + h, Err: err}
		}
	}
	if err := fileRules(spec.FileRules); err != nil {
		return err
	}
	if len(spec.Files) > 0 {
		if err := secretFiles(spec.FileDir, spec.Files); err != nil {
			return &Error{Step: "mounting the secret files", Err: err}
		}
	}
	// After every mount, before Landlock: relative and absolute paths see
	// the same file system.
	if err := unix.Chdir(dir); err != nil {
		return &Error{Step: "entering " + dir, Err: err}
	}
	if spec.Net {
		if err := netInit(); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return &Error{Step: "no_new_privs", Err: err}
	}
	if !spec.AnyExec {
		if err := restrictExec(spec.Exec, spec.Pins); err != nil {
			return &Error{Step: "landlock", Err: err}
		}
	}
	if spec.Notify && !spec.AnyExec {
		lfd, err := installFilter()
		if err != nil {
			return &Error{Step: "seccomp", Err: err}
		}
		if err := unix.Sendmsg(ctlFD, []byte("listener"), unix.UnixRights(lfd), nil, 0); err != nil {
			return &Error{Step: "handing over the seccomp listener", Err: err}
		}
		unix.Close(lfd)
	}
	if err := dropCapabilities(); err != nil {
		return &Error{Step: "dropping capabilities", Err: err}
	}
	// The control socket closes as the program starts: chock reads that as
	// "the sandbox is made".
	unix.CloseOnExec(ctlFD)
	if err := closeInherited(); err != nil {
		return &Error{Step: "closing inherited descriptors", Err: err}
	}
	err = syscall.Exec(spec.Path, spec.Argv, spec.Env)
	return &Error{Step: "exec " + spec.Path, Err: err}
}

func readSpec() (*Spec, error) {
	f := os.NewFile(specFD, "spec")
	defer f.Close()
	var s Spec
	if err := json.NewDecoder(f).Decode(&s); err != nil {
		return nil, err
	}
	if s.Path == "" || len(s.Argv) == 0 {
		return nil, fmt.Errorf("the spec names no program")
	}
	return &s, nil
}

// privateDirs mounts the session's temporary folders over /tmp, /var/tmp
// and /dev/shm, and binds back in, from the real file system, every path
// of the spec under one of them: each is opened (O_PATH) before the
// folders are covered and mounted from its descriptor after. A path that
// is not there is left to the later steps, which refuse a hidden or
// read-only one that is gone.
func privateDirs(spec *Spec) ([]string, error) {
	if len(spec.Private) == 0 {
		return nil, nil
	}
	under := func(p string) bool {
		for _, d := range spec.Private {
			if strings.HasPrefix(p, d.At+"/") {
				return true
			}
		}
		return false
	}
	var keep []string
	add := func(p string) {
		if p != "" && filepath.IsAbs(p) && under(p) {
			keep = append(keep, filepath.Clean(p))
		}
	}
	for _, l := range [][]string{spec.Writable, spec.ReadOnly, spec.Hide, fileRulePaths(spec.FileRules)} {
		for _, p := range l {
			add(p)
		}
	}
	add(spec.Dir)
	add(spec.FileDir)
	for _, f := range append([]string{spec.Path}, spec.Exec...) {
		add(filepath.Dir(f))
	}
	// The outermost of them: one inside another comes with it.
	var outer []string
	for _, p := range keep {
		inside := false
		for _, q := range keep {
			if q != p && strings.HasPrefix(p, q+"/") {
				inside = true
				break
			}
		}
		if !inside && !slices.Contains(outer, p) {
			outer = append(outer, p)
		}
	}
	type kept struct {
		path string
		fd   int
		dir  bool
	}
	var ks []kept
	var backs []string
	for _, p := range outer {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		ks = append(ks, kept{p, fd, st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	defer func() {
		for _, k := range ks {
			unix.Close(k.fd)
		}
	}()
	// The session's folders by descriptor too: one may lie under another's At.
	hosts := make([]int, len(spec.Private))
	for i, d := range spec.Private {
		fd, err := unix.Open(d.Host, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("the session's folder for %s: %w", d.At, err)
		}
		hosts[i] = fd
		defer unix.Close(fd)
	}
	rw := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	for i, d := range spec.Private {
		if _, err := os.Stat(d.At); err != nil {
			continue // a folder the host does not have
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", hosts[i]), d.At, "", unix.MS_BIND, ""); err != nil {
			return nil, fmt.Errorf("%s: %w", d.At, err)
		}
		if err := unix.MountSetattr(-1, d.At, 0, &rw); err != nil {
			return nil, fmt.Errorf("%s writable: %w", d.At, err)
		}
	}
	for _, k := range ks {
		if k.dir {
			if err := os.MkdirAll(k.path, 0o700); err != nil {
				return nil, err
			}
		} else {
			if err := os.MkdirAll(filepath.Dir(k.path), 0o700); err != nil {
				return nil, err
			}
			fd, err := unix.Open(k.path, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k.path, err)
			}
			unix.Close(fd)
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", k.fd), k.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return nil, fmt.Errorf("binding %s back in: %w", k.path, err)
		}
		backs = append(backs, k.path)
	}
	return backs, nil
}

// boundBackReadOnly makes read-only again each path privateDirs bound
// back in that no writable folder of the person's holds: it came in
// writable as the host has it, and a session folder's writable mount
// (/tmp) made it so again. A file rule's path kept through a cover
// (~/.aws/config under ~/.aws/**, with HOME under /tmp as CI images
// often have it) is then read as allowed and written nowhere.
func boundBackReadOnly(spec *Spec, backs []string) error {
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	near := func(p, w string) bool { // one holds the other
		w = filepath.Clean(w)
		return p == w || strings.HasPrefix(p, w+"/") || strings.HasPrefix(w, p+"/")
	}
	rules := fileRulePaths(spec.FileRules)
	for _, p := range backs {
		if !slices.ContainsFunc(rules, func(r string) bool { return filepath.Clean(r) == p }) {
			continue // the spec's other paths: as they were
		}
		writable := spec.Dir != "" && near(p, spec.Dir)
		for _, w := range spec.Writable {
			private := false
			for _, d := range spec.Private {
				private = private || filepath.Clean(w) == d.At
			}
			writable = writable || !private && near(p, w)
		}
		if writable {
			continue
		}
		if err := unix.MountSetattr(-1, p, unix.AT_RECURSIVE, &ro); err != nil {
			return &Error{Step: "binding " + p + " back in read-only", Err: err}
		}
	}
	return nil
}

// Scopes are what this kernel's Landlock gives a call: its ABI version
// (0 without Landlock) and the scopes restrictExec sets.
func Scopes() (abi int, scoped []string) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0, nil
	}
	if v >= 6 {
		scoped = []string{"abstract-unix-socket", "signal"}
	}
	return v, scoped
}

// bindReadOnly mounts, onto dir (or a file) as opened, a read-only copy
// of its tree (mount_setattr changes only that flag, so the mounts the
// kernel locks stay as they were). A pinned dir must open the same file
// it was when the session started.
func bindReadOnly(dir string, pins map[string]Inode) error {
	fd, err := openPinned(dir, pins)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &ro); err != nil {
		return err
	}
	return unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

// bindWritable makes dir (and the mounts under it) writable again under
// the read-only root: a bind mount of its own, read-only cleared. A
// folder that is not there is left out (a temporary folder a host does
// not have).
func bindWritable(dir string) error {
	rw := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	var stx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, dir, 0, 0, &stx) == nil && stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		// A mount of its own (/dev/shm, a tmpfs /tmp): clear read-only on
		// it and what it holds, no bind needed.
		if unix.MountSetattr(-1, dir, unix.AT_RECURSIVE, &rw) == nil {
			return nil
		}
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		if err == unix.ENOENT {
			return nil
		}
		return err
	}
	if err := unix.MountSetattr(-1, dir, unix.AT_RECURSIVE, &rw); err != nil {
		// A mount under it that the kernel keeps read-only stays so.
		return unix.MountSetattr(-1, dir, 0, &rw)
	}
	return nil
}

// hide covers path: a directory with an empty read-only tmpfs, a file or
// socket with /dev/null. It must still be there: one gone since the
// session started refuses the call.
func hide(path string, pins map[string]Inode) error {
	if _, pinned := pins[path]; !pinned {
		// A socket or file (only folders are pinned) gone since the
		// session started, as a daemon's socket goes when it stops:
		// nothing is there to reach, so nothing to cover. A pinned folder
		// gone is an error: it may have been moved, with what it holds.
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err == unix.ENOENT {
			return nil
		}
	}
	fd, err := openPinned(path, pins)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	// Onto what was opened: a path renamed since then is not followed.
	at := fmt.Sprintf("/proc/self/fd/%d", fd)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return unix.Mount("tmpfs", at, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4096,mode=0500")
	}
	return unix.Mount("/dev/null", at, "", unix.MS_BIND, "")
}

// secretFiles mounts a small tmpfs at dir (an empty directory chock made),
// writes the files into it and makes it read-only: the values exist in
// this mount namespace only, and go when the call's last process does.
func secretFiles(dir string, files []SecretFile) error {
	size := 0
	for _, f := range files {
		size += len(f.Value) + 4096
	}
	opts := fmt.Sprintf("size=%d,mode=0500", size)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return err
	}
	for _, f := range files {
		fd, err := unix.Open(dir+"/"+f.Name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o400)
		if err != nil {
			return err
		}
		_, err = unix.Write(fd, []byte(f.Value))
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// restrictExec lets this thread (and every process it becomes or starts)
// execute only the files named: Landlock's execute right, handled alone,
// so reading and writing stay as the mounts allow. The kernel also checks
// the right for an ELF interpreter and a script's #! interpreter. Where
// the kernel has them (ABI 6), abstract unix sockets and signals are
// scoped to the call too: no connecting to a bus or agent chock's side
// listens on, no signalling a process outside the call.
//
// A pinned file is granted as it was opened, and only when it is the file
// the session started with: one a call replaced (a folder above it moved,
// another put in its place) is not executable, even by its old path.
func restrictExec(files []string, pins map[string]Inode) error {
	cfg := landlock.Config{HandledAccessFS: ll.AccessFSExecute}
	if abi, err := ll.LandlockGetABIVersion(); err == nil && abi >= 6 {
		cfg.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	}
	var byPath []string
	var opened []int
	defer func() {
		for _, fd := range opened {
			unix.Close(fd)
		}
	}()
	for _, f := range files {
		if _, ok := pins[f]; !ok {
			byPath = append(byPath, f)
			continue
		}
		if fd, err := openPinned(f, pins); err == nil {
			opened = append(opened, fd)
		}
	}
	fd, flags, err := cfg.NewRulesetFD(landlock.PathAccess(ll.AccessFSExecute, byPath...))
	if err != nil {
		return err
	}
	if fd < 0 {
		return fmt.Errorf("the kernel does not enforce Landlock")
	}
	defer unix.Close(fd)
	for _, f := range opened {
		if err := ll.LandlockAddPathBeneathRule(fd, &ll.PathBeneathAttr{AllowedAccess: ll.AccessFSExecute, ParentFd: f}, 0); err != nil {
			return err
		}
	}
	return ll.LandlockRestrictSelf(fd, flags)
}

// installFilter installs the seccomp filter that reports every execve and
// execveat to a listener, and returns the listener's descriptor.
func installFilter() (int, error) {
	prog := execFilter()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return -1, errno
	}
	fd := int(r)
	unix.CloseOnExec(fd)
	return fd, nil
}

// mapIDs makes ids root of this process's new user namespace: setgroups
// denied, then the one group and the one user (what an unprivileged
// process may map: its own).
func mapIDs(ids *IDMap) error {
	for _, w := range []struct{ file, line string }{
		{"/proc/self/setgroups", "deny"},
		{"/proc/self/gid_map", fmt.Sprintf("0 %d 1", ids.GID)},
		{"/proc/self/uid_map", fmt.Sprintf("0 %d 1", ids.UID)},
	} {
		if err := os.WriteFile(w.file, []byte(w.line), 0); err != nil {
			return err
		}
	}
	return nil
}
