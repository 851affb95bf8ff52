package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// execFilter is the seccomp program:
//   - a system call through another ABI (i386's int $0x80, x32) fails
//     with ENOSYS: nothing a call runs needs one, and each would be a way
//     around the rest of this filter;
//   - execve and execveat go to the listener;
//   - memfd_create is refused unless it asks for a sealed non-executable
//     file (Landlock does not govern the private inodes memfds are, so an
//     executable one would run any program's bytes);
//   - every other call is allowed.
func execFilter() []unix.SockFilter {
	const (
		ldAbs   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jgeK    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jsetK   = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		retK    = unix.BPF_RET | unix.BPF_K
		offNr   = 0 // struct seccomp_data: nr, arch, instruction pointer, args
		offArch = 4
		offArg1 = 24 // args[1], its low 32 bits on a little-endian machine
		x32Bit  = 0x40000000
	)
	return []unix.SockFilter{
		/* 0 */ {Code: ldAbs, K: offArch},
		/* 1 */ {Code: jeqK, Jt: 1, Jf: 0, K: auditArch}, // this ABI: 3
		/* 2 */ {Code: retK, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		/* 3 */ {Code: ldAbs, K: offNr},
		/* 4 */ {Code: jgeK, Jt: 7, Jf: 0, K: x32Bit}, // x32: 12
		/* 5 */ {Code: jeqK, Jt: 7, Jf: 0, K: uint32(unix.SYS_EXECVE)}, // 13
		/* 6 */ {Code: jeqK, Jt: 6, Jf: 0, K: uint32(unix.SYS_EXECVEAT)}, // 13
		/* 7 */ {Code: jeqK, Jt: 0, Jf: 3, K: uint32(unix.SYS_MEMFD_CREATE)}, // else 11
		/* 8 */ {Code: ldAbs, K: offArg1},
		/* 9 */ {Code: jsetK, Jt: 1, Jf: 0, K: unix.MFD_NOEXEC_SEAL}, // 11
		/* 10 */ {Code: retK, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)},
		/* 11 */ {Code: retK, K: unix.SECCOMP_RET_ALLOW},
		/* 12 */ {Code: retK, K: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)},
		/* 13 */ {Code: retK, K: unix.SECCOMP_RET_USER_NOTIF},
	}
}

// seccompData is struct seccomp_data.
type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// seccompNotif is struct seccomp_notif.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

const (
	notifFlagContinue = 1          // SECCOMP_USER_NOTIF_FLAG_CONTINUE
	ioctlNotifIDValid = 0x40082102 // SECCOMP_IOCTL_NOTIF_ID_VALID
)

// Exec is one execve a sandboxed process made: the file it names,
// resolved as that process sees it. Path is what was read from the
// process's memory, so a racing thread can make it wrong; the kernel's
// Landlock check, not this report, decides what runs.
type Exec struct {
	Pid  int
	Path string
	// File is Path resolved inside the sandbox ("" when it could not be).
	File string
	ID   FileID
	Err  error
	// Refused says the watch refused the execve (EACCES): it named one
	// of Spec.Interpreters, or Cmd.Verdict refused it (Why says why).
	Refused bool
	Why     string
	// Argv are the execve's arguments, read for a file of Spec.Decided
	// (nil otherwise).
	Argv []string
	// gone: the process went away before it could be described.
	gone bool
}

// watch reads the listener until every process of the call is gone,
// reporting each execve to report and letting it proceed: the kernel's
// Landlock domain decides it, but for an execve naming a file of refuse
// (an ELF interpreter run as a program), which fails with EACCES. The
// first one is the init's exec of the program, which is not reported.
//
// The path is read from the process's memory before the kernel reads it
// again, so a second thread rewriting it in between can name another
// file than the one refused: the refusal stops a program that runs ld.so
// as any program would; Landlock still bounds what such a race can run
// to the call's executable files.
// verdicts are the files whose execs are decided by their arguments.
type verdicts struct {
	files map[Inode]bool
	ask   func(Exec) string
}

func watch(listener *os.File, report func(Exec), refuse map[Inode]bool, decided *verdicts) {
	defer listener.Close()
	fd := int(listener.Fd())
	first := true
	for {
		var n seccompNotif
		if err := ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			// ENOENT is one notification lost (its thread was killed, or
			// its call interrupted, as it was made): the call's other
			// processes go on, and so does the watch, until the filter
			// has no process left (the listener hangs up). Stopping
			// here left every later exec of the call failing with ENOSYS.
			if errors.Is(err, unix.ENOENT) && !hungUp(fd) {
				continue
			}
			return
		}
		resp := seccompNotifResp{ID: n.ID, Flags: notifFlagContinue}
		if !first {
			e := describe(fd, &n)
			switch {
			case e.gone:
			case e.Err != nil:
				// What chock cannot resolve does not run: the kernel
				// would fail it too, or it names the file by a way
				// chock cannot follow (/proc/self in the call's /proc).
				resp = seccompNotifResp{ID: n.ID, Error: answer(e.Err)}
			case refuse[InodeOf(e.ID)]:
				e.Refused = true
				resp = seccompNotifResp{ID: n.ID, Error: -int32(unix.EACCES)}
			case decided != nil && decided.files[InodeOf(e.ID)]:
				argv, err := readArgv(e.Pid, argvAddr(&n))
				if err != nil {
					argv = nil // not readable: decided as arguments not known
					e.Why = "its arguments could not be read (" + err.Error() + "), so they cannot be decided"
				} else {
					e.Argv = argv
					e.Why = decided.ask(e)
				}
				if e.Why != "" {
					e.Refused = true
					resp = seccompNotifResp{ID: n.ID, Error: -int32(unix.EACCES)}
				}
			}
			if report != nil {
				report(e)
			}
		}
		first = false
		ioctl(fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
	}
}

// hungUp waits until the listener has a notification or has hung up (no
// process is left under its filter), and says which.
func hungUp(fd int) bool {
	for {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		_, err := unix.Poll(p, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return true
		}
		// A notification still pending is read first, hung up or not.
		return p[0].Revents&unix.POLLIN == 0 && p[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
	}
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// describe reads the path an execve names and resolves it as the process
// does: inside its root (absolute symlinks and ".." stay in it), from its
// working directory or dirfd. What cannot be resolved so, chock cannot
// tell what it names: Err says why, and the watch answers the execve
// with that error rather than let the kernel run it. /proc/self inside
// the call's /proc is such a path (chock has no pid in the call's pid
// namespace), and with it /dev/fd/N: a program execs a file through
// them only by the descriptor-less form of fexecve, which answers
// ENOENT; execveat with AT_EMPTY_PATH works.
func describe(lfd int, n *seccompNotif) Exec {
	e := Exec{Pid: int(n.Pid)}
	addr, dirfd := n.Data.Args[0], int32(unix.AT_FDCWD)
	if n.Data.Nr == int32(unix.SYS_EXECVEAT) {
		dirfd, addr = int32(n.Data.Args[0]), n.Data.Args[1]
	}
	path, err := readString(e.Pid, addr)
	id := n.ID
	if ioctl(lfd, ioctlNotifIDValid, unsafe.Pointer(&id)) != nil {
		e.Err, e.gone = errors.New("the process went away"), true
		return e
	}
	if err != nil {
		e.Err = err
		return e
	}
	e.Path = path
	proc := "/proc/" + strconv.Itoa(e.Pid)
	if path == "" && n.Data.Nr == int32(unix.SYS_EXECVEAT) {
		// AT_EMPTY_PATH: the file the descriptor is.
		full := proc + "/fd/" + strconv.Itoa(int(dirfd))
		if e.ID, e.Err = Identify(full); e.Err == nil {
			e.File, _ = filepath.EvalSymlinks(full)
		}
		return e
	}
	inRoot := path
	if !strings.HasPrefix(path, "/") {
		base := proc + "/cwd"
		if dirfd != unix.AT_FDCWD {
			base = proc + "/fd/" + strconv.Itoa(int(dirfd))
		}
		dir, err := os.Readlink(base)
		if err != nil || !strings.HasPrefix(dir, "/") {
			e.Err = fmt.Errorf("the folder the path is relative to cannot be resolved: %w", unix.ENOENT)
			return e
		}
		inRoot = dir + "/" + path // not cleaned: ".." after a symlink is the kernel's to resolve
	}
	root, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		e.Err = err
		return e
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, inRoot, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT})
	if err != nil {
		e.Err = &os.PathError{Op: "resolve", Path: path, Err: err}
		return e
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		e.Err = err
		return e
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		e.Err = &os.PathError{Op: "exec", Path: path, Err: unix.EACCES}
		return e
	}
	e.ID = FileID{Dev: uint64(st.Dev), Ino: st.Ino, Ctime: unix.TimespecToNsec(st.Ctim)}
	if r, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil {
		e.File = r
	}
	return e
}

// answer is the error an execve chock could not resolve gets instead of
// running: what resolving it failed with (ENOENT for a PATH search's
// miss, as the kernel would say), else EACCES.
func answer(err error) int32 {
	var errno unix.Errno
	if errors.As(err, &errno) && errno != 0 {
		return -int32(errno)
	}
	return -int32(unix.EACCES)
}

// argvAddr is where an execve's (or execveat's) argv array is.
func argvAddr(n *seccompNotif) uint64 {
	if n.Data.Nr == int32(unix.SYS_EXECVEAT) {
		return n.Data.Args[2]
	}
	return n.Data.Args[1]
}

// Bounds of an argv the watch reads: the kernel's own (MAX_ARG_STRINGS is
// larger, but ARG_MAX bounds the whole).
const (
	maxArgv    = 32768
	maxArgLen  = 128 << 10 // MAX_ARG_STRLEN
	maxArgvLen = 2 << 20
)

// readArgv reads the NULL-terminated argv array at addr in process pid.
func readArgv(pid int, addr uint64) ([]string, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	total := 0
	var ptr [8]byte
	for i := 0; ; i++ {
		if i == maxArgv {
			return nil, errors.New("more arguments than the kernel takes")
		}
		if _, err := f.ReadAt(ptr[:], int64(addr)+int64(8*i)); err != nil {
			return nil, err
		}
		p := binary.NativeEndian.Uint64(ptr[:])
		if p == 0 {
			return out, nil
		}
		s, err := readStringMax(f, p, maxArgLen)
		if err != nil {
			return nil, err
		}
		if total += len(s) + 1; total > maxArgvLen {
			return nil, errors.New("the arguments are longer than the kernel takes")
		}
		out = append(out, s)
	}
}

// readString reads a NUL-terminated string of at most PATH_MAX bytes at
// addr in process pid.
func readString(pid int, addr uint64) (string, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return "", err
	}
	defer f.Close()
	s, err := readStringMax(f, addr, unix.PathMax)
	if err != nil && len(s) == 0 && errors.Is(err, errTooLong) {
		return "", errors.New("the path is longer than PATH_MAX")
	}
	return s, err
}

// errTooLong is a string past its bound.
var errTooLong = errors.New("the string is longer than its bound")

// readStringMax reads a NUL-terminated string of at most max bytes at
// addr of the process memory f.
func readStringMax(f *os.File, addr uint64, max int) (string, error) {
	var out []byte
	buf := make([]byte, 256)
	for len(out) < max {
		// Stop at a page boundary: the next page may not be mapped.
		room := 4096 - int((addr+uint64(len(out)))%4096)
		k, err := f.ReadAt(buf[:min(len(buf), room)], int64(addr)+int64(len(out)))
		if k > 0 {
			if i := bytes.IndexByte(buf[:k], 0); i >= 0 {
				return string(append(out, buf[:i]...)), nil
			}
			out = append(out, buf[:k]...)
		}
		if err != nil {
			return "", err
		}
	}
	return "", errTooLong
}
