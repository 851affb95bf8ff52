package sandbox

// The init's steps for the file rules (Spec.FileRules) and the
// capabilities the program runs without.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxStubs bounds the entries an Unreadable folder's cover stubs: past
// it, the rest are simply absent under the cover.
const maxStubs = 4096

// fileRulePaths are the rules' paths: those under a session's private
// folder are bound back in from the real file system, as the spec's
// other paths are, and then protected.
func fileRulePaths(rules []FileRule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.Path)
	}
	return out
}

// fileRules makes the file rules' mounts, in order.
func fileRules(rules []FileRule) error {
	if len(rules) == 0 {
		return nil
	}
	var cover *coverFile
	defer func() {
		if cover != nil {
			cover.close()
		}
	}()
	for _, r := range rules {
		if err := fileRule(r, &cover); err != nil {
			return err
		}
	}
	return nil
}

// fileRule makes one rule's mount, onto the path it opened (O_PATH, its
// last name no symlink) and found to be the file planned: nothing moved
// into its place between the plan and the mount is protected instead.
func fileRule(r FileRule, cover **coverFile) error {
	fd, err := unix.Open(r.Path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &Error{Step: staleStep + r.Path, Err: fmt.Errorf("it is gone since the call was planned (moved by another call?): %w", err)}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &Error{Step: staleStep + r.Path, Err: err}
	}
	if r.Ino != 0 && (uint64(st.Dev) != r.Dev || st.Ino != r.Ino) {
		return &Error{Step: staleStep + r.Path, Err: errors.New("it is not the file the call was planned for (moved and replaced by another call?)")}
	}
	at := fmt.Sprintf("/proc/self/fd/%d", fd)
	dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	switch {
	case r.Op == Unreadable && dir:
		err = unreadableDir(r.Path, at, r.Keep)
	case r.Op == Unreadable:
		if *cover == nil {
			if *cover, err = newCoverFile(); err != nil {
				break
			}
		}
		err = (*cover).over(fd)
	case r.Op == ReadOnly || r.Op == Pinned && !dir: // a file pinned is a file kept as it is
		if err = unix.Mount(at, at, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			break
		}
		ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err = unix.MountSetattr(-1, r.Path, unix.AT_RECURSIVE, &ro); err != nil {
			break
		}
		for _, k := range r.Keep {
			p := filepath.Join(r.Path, k)
			kfd, kerr := openKept(p)
			if kerr != nil {
				continue // gone, or a symlink now: it stays read-only
			}
			var kst unix.Stat_t
			if err = unix.Fstat(kfd, &kst); err == nil {
				// Bound onto itself from what was opened, then made
				// writable: a path swapped since is not followed.
				kat := fmt.Sprintf("/proc/self/fd/%d", kfd)
				if err = unix.Mount(kat, kat, "", unix.MS_BIND|unix.MS_REC, ""); err == nil {
					rw := unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
					err = unix.MountSetattr(-1, p, unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW, &rw)
				}
			}
			unix.Close(kfd)
			if err != nil {
				break
			}
		}
	case r.Op == Pinned:
		err = unix.Mount(at, at, "", unix.MS_BIND|unix.MS_REC, "")
	default:
		err = fmt.Errorf("unknown file rule %q", r.Op)
	}
	if err != nil {
		return &Error{Step: fmt.Sprintf("making %s %s", r.Path, r.Op), Err: err}
	}
	return nil
}

// unreadableDir covers dir with a tmpfs holding a stub of mode 000 for
// each entry it had and, bound back in from the real folder, each path
// of keep; the folders on the way to those are enterable but not
// listable (0111), the cover's root too when it keeps any (else 000).
func unreadableDir(dir, at string, keep []string) error {
	type kept struct {
		rel string
		fd  int
		dir bool
	}
	var ks []kept
	defer func() {
		for _, k := range ks {
			unix.Close(k.fd)
		}
	}()
	for _, rel := range keep {
		fd, err := openKept(filepath.Join(dir, rel))
		if err != nil {
			continue // gone, or a symlink now: nothing to let through
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return err
		}
		ks = append(ks, kept{rel, fd, st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	entries, _ := os.ReadDir(at) // unreadable to chock too: no stubs
	if err := unix.Mount("tmpfs", at, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=65536,nr_inodes=8192,mode=0700"); err != nil {
		return err
	}
	top := map[string]bool{}
	for _, k := range ks {
		top[strings.SplitN(k.rel, "/", 2)[0]] = true
	}
	for i, e := range entries {
		if i >= maxStubs {
			break
		}
		if top[e.Name()] {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			if err := unix.Mkdir(p, 0); err != nil {
				return err
			}
			continue
		}
		fd, err := unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		unix.Close(fd)
	}
	var ways []string
	for _, k := range ks {
		p := filepath.Join(dir, k.rel)
		for d := filepath.Dir(p); d != dir; d = filepath.Dir(d) {
			ways = append(ways, d)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if k.dir {
			if err := unix.Mkdir(p, 0o700); err != nil && err != unix.EEXIST {
				return err
			}
		} else {
			fd, err := unix.Open(p, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
			if err != nil {
				return err
			}
			unix.Close(fd)
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", k.fd), p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("letting %s through: %w", p, err)
		}
	}
	for _, d := range ways {
		if err := unix.Chmod(d, 0o111); err != nil {
			return err
		}
	}
	mode := uint32(0)
	if len(ks) > 0 {
		mode = 0o111
	}
	if err := unix.Chmod(dir, mode); err != nil {
		return err
	}
	return unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
}

// openKept opens (O_PATH) a path a rule lets through a cover, refusing
// one that is or passes through a symlink: the plan named real paths, so
// a symlink there now was put there since (by another call), and would
// lead the bind to what it points at.
func openKept(p string) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err == unix.ENOSYS {
		// Before Linux 5.6: the last name at least is not followed.
		if fd, err = unix.Open(p, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0); err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			return -1, unix.ELOOP
		}
	}
	return fd, err
}

// coverFile is an empty file of mode 000 on a detached read-only tmpfs,
// bound over each unreadable file.
type coverFile struct{ mnt int }

func newCoverFile() (*coverFile, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fs)
	for k, v := range map[string]string{"size": "4096", "nr_inodes": "4", "mode": "0700"} {
		if err := unix.FsconfigSetString(fs, k, v); err != nil {
			return nil, err
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return nil, err
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Openat(mnt, "cover", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(mnt)
		return nil, err
	}
	unix.Close(fd)
	ro := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(mnt, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &ro); err != nil {
		unix.Close(mnt)
		return nil, err
	}
	return &coverFile{mnt: mnt}, nil
}

// over binds the cover onto the file open at fd (O_PATH).
func (c *coverFile) over(fd int) error {
	t, err := unix.OpenTree(c.mnt, "cover", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(t)
	return unix.MoveMount(t, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
}

func (c *coverFile) close() { unix.Close(c.mnt) }

// dropCapabilities leaves the program, root of its user namespace, no
// capability: none now, none from an exec (SECBIT_NOROOT, locked), none
// in the bounding or ambient sets. The mode of a cover (000) then holds
// against it, and it can change nothing the mounts decided.
func dropCapabilities() error {
	// linux/securebits.h: noroot, no_setuid_fixup, keep_caps (off) and
	// no_cap_ambient_raise, each locked.
	const bits = 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<5 | 1<<6 | 1<<7
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, bits, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("ambient set: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	return unix.Capset(&hdr, &data[0])
}
