package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// The ports inside a call's network namespace at which its listeners wait
// (127.0.0.1, on the call's own loopback): the egress proxy's HTTP and
// SOCKS5 sides. Each call has a namespace of its own, so they are the
// same in every call.
const (
	HTTPProxyPort  = 3128
	SOCKSProxyPort = 1080
)

// netMsg is the control message that carries a call's listeners to chock.
const netMsg = "net"

// NetListeners are the listening sockets a call's init made inside its
// network namespace, handed to chock: every connection accepted on one
// comes from that call (the socket's namespace is a kernel fact).
type NetListeners struct {
	HTTP, SOCKS *os.File
}

// Close closes both.
func (n *NetListeners) Close() {
	if n == nil {
		return
	}
	for _, f := range []*os.File{n.HTTP, n.SOCKS} {
		if f != nil {
			f.Close()
		}
	}
}

// netInit runs inside the call's new network namespace, where the init is
// root of the call's user namespace: it brings lo up (the namespace's
// only interface: nothing routes out) and listens on 127.0.0.1 at the
// proxy ports, and hands both listeners to chock over the control socket.
// They are close-on-exec: the program never holds them, so it cannot
// accept a connection meant for the proxy.
func netInit() error {
	if err := loUp(); err != nil {
		return &Error{Step: "bringing up loopback", Err: err}
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, port := range []int{HTTPProxyPort, SOCKSProxyPort} {
		fd, err := listenLoopback(port)
		if err != nil {
			return &Error{Step: fmt.Sprintf("listening on 127.0.0.1:%d", port), Err: err}
		}
		fds = append(fds, fd)
	}
	if err := unix.Sendmsg(ctlFD, []byte(netMsg), unix.UnixRights(fds...), nil, 0); err != nil {
		return &Error{Step: "handing over the proxy listeners", Err: err}
	}
	return nil
}

// loUp sets IFF_UP on lo.
func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

func listenLoopback(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	sa := &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := unix.Listen(fd, 128); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// netRights are the two listeners of a "net" message, or nil.
func netRights(oob []byte) *NetListeners {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err == nil {
			fds = append(fds, got...)
		}
	}
	if len(fds) != 2 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
	return &NetListeners{HTTP: os.NewFile(uintptr(fds[0]), "proxy-http"), SOCKS: os.NewFile(uintptr(fds[1]), "proxy-socks")}
}

// Wrap makes cmd, a command prepared to run spec's program in namespaces
// of the caller's choosing (cmd.SysProcAttr, which must make a user
// namespace), start the init at initPath instead, in a network namespace
// of its own too, which execs the program once the listeners are handed
// over (spec.NetOnly: nothing else is made). spec's Path, Argv, Env and Dir
// are the program's; cmd keeps its pipes.
func Wrap(cmd *exec.Cmd, spec *Spec, initPath string) *Cmd {
	spec.Net, spec.NetOnly = true, true
	cmd.Path, cmd.Args, cmd.Env, cmd.Err = initPath, []string{InitArg}, []string{"GOMAXPROCS=1"}, nil
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNET
	return &Cmd{Cmd: cmd, spec: spec}
}

// netOnlyInit is the init of a wrapped command: the network namespace's
// loopback and listeners, then the program, as the caller's namespaces
// made it. Capabilities in the user namespace end at the exec (unless the
// program is its root).
func netOnlyInit(spec *Spec) error {
	runtime.LockOSThread()
	if err := netInit(); err != nil {
		return err
	}
	if spec.Dir != "" {
		if err := unix.Chdir(spec.Dir); err != nil {
			return &Error{Step: "entering " + spec.Dir, Err: err}
		}
	}
	unix.CloseOnExec(ctlFD)
	err := syscall.Exec(spec.Path, spec.Argv, spec.Env)
	return &Error{Step: "exec " + spec.Path, Err: err}
}
