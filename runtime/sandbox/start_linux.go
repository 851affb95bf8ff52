package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Cmd is a sandboxed call: an exec.Cmd whose process is the init, then
// the program, as pid 1 of its own pid namespace. Set Stdin, Stdout and
// Stderr on Cmd.Cmd before Start; Wait and Process.Kill as for exec.Cmd
// (killing pid 1 kills the call's whole process tree).
type Cmd struct {
	*exec.Cmd
	spec *Spec
	// Report receives each nested execve (Spec.Notify), from a goroutine
	// of its own, until the call's last process is gone.
	Report func(Exec)
	// Verdict is asked, from the watch's goroutine, about each execve of
	// a file of Spec.Decided, its Argv read: a reason refuses it (EACCES),
	// "" lets it run. Best effort: a second thread of the process can
	// rewrite the arguments between the read and the kernel's own.
	Verdict func(Exec) string
	// Net are the listeners inside the call's network namespace (Spec.Net),
	// set once Start returns nil; the caller serves and closes them.
	Net *NetListeners
}

// Command prepares spec to run in a sandbox made by the init binary at
// initPath (a binary whose main calls MaybeInit first).
func Command(spec *Spec, initPath string) *Cmd {
	c := exec.Command(initPath)
	c.Args = []string{InitArg}
	// The init is one thread's work: a Go runtime with one P starts fastest.
	c.Env = []string{"GOMAXPROCS=1"}
	// Root inside, this uid outside: the init may mount, and the
	// program's files look owned by whoever owns them outside. The init
	// writes the maps itself (Spec.IDs), holding its user namespace's
	// capabilities across its exec as ambient ones, so that the clone can
	// share this process's memory until that exec (CLONE_VM|CLONE_VFORK,
	// as os/exec's clone is without a new user namespace): with the
	// namespace, Go's own clone copies this process's page tables, which
	// cost milliseconds a call for a heap of a hundred megabytes.
	spec.IDs = &IDMap{UID: os.Getuid(), GID: os.Getgid()}
	c.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_VM | syscall.CLONE_VFORK,
		AmbientCaps: allCaps(),
		Pdeathsig:   syscall.SIGKILL,
		// A session of its own: no controlling terminal, so no call reads
		// what is typed at chock's, draws on it, or pushes input into it
		// (TIOCSTI) for the shell that runs after chock.
		Setsid: true,
	}
	if spec.Net {
		c.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
	}
	return &Cmd{Cmd: c, spec: spec}
}

// Confine makes cmd, a command prepared to run spec's program (its pipes
// set), start the init at initPath instead, which makes spec's sandbox in
// namespaces of its own (user, pid, mount, and network when spec.Net) and
// then execs the program: the same sandbox as Command's, for a process
// the caller keeps as cmd (a local MCP server). Start it with Start.
func Confine(cmd *exec.Cmd, spec *Spec, initPath string) *Cmd {
	made := Command(spec, initPath)
	cmd.Path, cmd.Args, cmd.Env, cmd.Err = made.Path, made.Args, made.Env, nil
	cmd.SysProcAttr = made.SysProcAttr
	return &Cmd{Cmd: cmd, spec: spec}
}

// Start starts the init, hands it the spec and waits until the program
// is exec'd (or the sandbox could not be made: an *Error, and nothing
// ran). ctx bounds the wait.
func (c *Cmd) Start(ctx context.Context) error {
	specR, specW, err := os.Pipe()
	if err != nil {
		return &Error{Step: "pipe", Err: err}
	}
	defer specR.Close()
	defer specW.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return &Error{Step: "socketpair", Err: err}
	}
	ctl, child := os.NewFile(uintptr(fds[0]), "ctl"), os.NewFile(uintptr(fds[1]), "ctl-child")
	defer ctl.Close()
	c.ExtraFiles = []*os.File{specR, child}
	if err := c.Cmd.Start(); err != nil {
		child.Close()
		return &Error{Step: "namespaces", Err: err}
	}
	child.Close()
	specR.Close()
	stop := context.AfterFunc(ctx, func() { c.Process.Kill() })
	defer stop()
	if err := json.NewEncoder(specW).Encode(c.spec); err != nil {
		c.Process.Kill()
		c.Wait()
		return &Error{Step: "handing over the spec", Err: err}
	}
	specW.Close()
	var listener *os.File
	var failure error
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*2))
	for {
		n, oobn, _, _, err := unix.Recvmsg(fds[0], buf, oob, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break // EOF: the program was exec'd, or the init is gone
		}
		msg := string(buf[:n])
		if msg == netMsg && oobn > 0 && c.Net == nil && c.spec.Net {
			c.Net = netRights(oob[:oobn])
			continue
		}
		if msg == "listener" && oobn > 0 {
			if l := rights(oob[:oobn]); l != nil && listener == nil {
				// Watched at once: the program's own exec waits for it.
				listener = l
				go watch(listener, c.Report, c.refused(), c.decided())
			}
			continue
		}
		failure = errors.New(msg)
	}
	if failure == nil && ctx.Err() != nil {
		failure = context.Cause(ctx)
	}
	if failure == nil && c.spec.Net && c.Net == nil {
		failure = errors.New("network namespace\x00the init sent no proxy listeners")
	}
	if failure != nil {
		c.Net.Close()
		c.Net = nil
		c.Process.Kill()
		c.Wait()
		var e *Error
		if step, why, ok := strings.Cut(failure.Error(), "\x00"); ok {
			e = &Error{Step: step, Err: errors.New(why)}
		} else {
			e = &Error{Step: "init", Err: failure}
		}
		return e
	}
	if listener == nil && c.spec.Notify {
		c.Process.Kill()
		c.Wait()
		return &Error{Step: "seccomp", Err: errors.New("the init sent no listener")}
	}
	return nil
}

// refused are the identities of Spec.Interpreters, as pinned (Pins) or
// as they are now.
func (c *Cmd) refused() map[Inode]bool { return c.inodes(c.spec.Interpreters) }

// decided is what the watch asks Verdict about: the identities of
// Spec.Decided, with Verdict.
func (c *Cmd) decided() *verdicts {
	if c.Verdict == nil || len(c.spec.Decided) == 0 {
		return nil
	}
	return &verdicts{files: c.inodes(c.spec.Decided), ask: c.Verdict}
}

// inodes are the identities of paths, as pinned (Pins) or as they are.
func (c *Cmd) inodes(paths []string) map[Inode]bool {
	out := make(map[Inode]bool, len(paths))
	for _, p := range paths {
		if in, ok := c.spec.Pins[p]; ok {
			out[in] = true
		} else if id, err := Identify(p); err == nil {
			out[InodeOf(id)] = true
		}
	}
	return out
}

func rights(oob []byte) *os.File {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err == nil && len(fds) > 0 {
			for _, fd := range fds[1:] {
				unix.Close(fd)
			}
			return os.NewFile(uintptr(fds[0]), "seccomp-listener")
		}
	}
	return nil
}

// allCaps are the capabilities this kernel has (0 to cap_last_cap): the
// init holds every one of its user namespace's, as it would as root there,
// until it drops them all before the program runs.
var allCaps = sync.OnceValue(func() []uintptr {
	last := unix.CAP_LAST_CAP
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 && n < last {
			last = n
		}
	}
	out := make([]uintptr, 0, last+1)
	for c := 0; c <= last; c++ {
		out = append(out, uintptr(c))
	}
	return out
})
