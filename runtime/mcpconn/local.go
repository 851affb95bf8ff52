package mcpconn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Local is a server this host runs, spoken to over stdio.
type Local struct {
	Name string
	// Argv is the command; Argv[0] is the program's path.
	Argv []string
	// Env is the whole environment of the server: nothing of this
	// process's own reaches it.
	Env []string
	Dir string
	// NoNetwork runs the server in an empty network namespace (a new user
	// and network namespace); where one cannot be made the server does
	// not start.
	NoNetwork bool
	// Start, when set, starts the prepared command in place of its own
	// Start (runtime puts the server in its sandbox this way: the mounts,
	// the network namespace and the egress proxy's listeners in it are
	// made by the sandbox init before the server runs). A failure does not
	// start the server, with no fallback.
	Start func(cmd *exec.Cmd) error
}

// stopGrace is how long a server has to exit after its stdin closes.
const stopGrace = 2 * time.Second

// OpenLocal starts a local server and reads its tool list within the
// discover budget.
func OpenLocal(ctx context.Context, l Local, o Options) (*Server, error) {
	if len(l.Argv) == 0 {
		return nil, errors.New("the command is empty")
	}
	o.defaults()
	d := &stdioDialer{l: l, bound: o.MaxReply}
	return open(ctx, l.Name, d, o)
}

// stdioDialer starts the process once; a local server is one session.
type stdioDialer struct {
	l     Local
	bound int64

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   *os.File
	stdout  *os.File
	stderr  *tailBuffer
	exited  chan struct{}
	started bool
}

func (d *stdioDialer) begin()           {}
func (d *stdioDialer) status() int      { return 0 }
func (d *stdioDialer) host() string     { return "" }
func (d *stdioDialer) reconnects() bool { return false }

func (d *stdioDialer) sessionLost(error) bool { return false }

func (d *stdioDialer) transport(ctx context.Context) (mcp.Transport, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return nil, &Error{Outcome: NoAnswer, Msg: "the server's session ended, and a local server is started once a session" + d.why()}
	}
	d.started = true
	if err := d.startProcess(); err != nil {
		return nil, &Error{Outcome: NoAnswer, Msg: err.Error(), Err: err}
	}
	return &mcp.IOTransport{Reader: d.stdout, Writer: d.stdin, MaxLineLength: int(d.bound)}, nil
}

// why says what the server's exit or stderr tells, for an error.
func (d *stdioDialer) why() string {
	if d.exited == nil {
		return ""
	}
	select {
	case <-d.exited:
		msg := "; it exited"
		if st := d.cmd.ProcessState; st != nil {
			msg = "; it exited: " + st.String()
		}
		if tail := d.stderr.lastLine(); tail != "" {
			msg += " (stderr: " + tail + ")"
		}
		return msg
	default:
		return ""
	}
}

func (d *stdioDialer) startProcess() error {
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return err
	}
	env := d.l.Env
	if env == nil {
		env = []string{} // never nil: nil would hand the server this process's environment
	}
	d.stderr = &tailBuffer{max: 4 << 10}
	mk := func(attr *syscall.SysProcAttr) *exec.Cmd {
		cmd := exec.Command(d.l.Argv[0], d.l.Argv[1:]...)
		cmd.Env, cmd.Dir = env, d.l.Dir
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, d.stderr
		cmd.SysProcAttr = attr
		return cmd
	}
	// The server is pid 1 of a pid namespace of its own (in a user
	// namespace, so no privilege is needed): when it is stopped, the
	// kernel kills everything it started, a daemon that called setsid
	// and holds its output open included. It has no session or terminal
	// of its own to reach ours through.
	uid, gid := os.Getuid(), os.Getgid()
	attr := &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false}
	if d.l.NoNetwork {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	cmd := mk(attr)
	if d.l.Start != nil {
		err = d.l.Start(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil && d.l.Start == nil && os.Geteuid() == 0 && errors.Is(err, syscall.EPERM) {
		// Some hosts refuse user namespaces; root can still make the others.
		flags := uintptr(syscall.CLONE_NEWPID)
		if d.l.NoNetwork {
			flags |= syscall.CLONE_NEWNET
		}
		cmd = mk(&syscall.SysProcAttr{Setsid: true, Cloneflags: flags})
		err = cmd.Start()
	}
	inR.Close()
	outW.Close()
	if err != nil && d.l.Start != nil {
		inW.Close()
		outR.Close()
		return fmt.Errorf("the server's sandbox could not be made (%v), so it does not start", err)
	}
	if err != nil {
		inW.Close()
		outR.Close()
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.EACCES) {
			if d.l.NoNetwork {
				return fmt.Errorf("the server may not reach the network, and an empty network namespace could not be made for it (%v), so it does not start", err)
			}
			return fmt.Errorf("a pid namespace of its own could not be made for the server (%v), so it does not start", err)
		}
		return fmt.Errorf("starting %s: %v", d.l.Argv[0], err)
	}
	d.cmd, d.stdin, d.stdout = cmd, inW, outR
	d.exited = make(chan struct{})
	go func() {
		cmd.Wait()
		close(d.exited)
	}()
	return nil
}

func (d *stdioDialer) classify(about string, err error) *Error {
	msg := oneLine(err.Error())
	// The go-sdk keeps its frame-size error unexported; TestLocalReplyBound
	// pins the text.
	if strings.Contains(msg, "maximum line length") {
		msg = fmt.Sprintf("a reply passed the %s bound, so it was refused", bytesHuman(d.bound))
	}
	return &Error{Outcome: NoAnswer, Msg: msg + d.why(), Err: err}
}

// close gives the server stopGrace to exit once its stdin is closed, then
// kills its whole process group, whatever it started.
func (d *stdioDialer) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil {
		return nil
	}
	d.stdin.Close()
	select {
	case <-d.exited:
	case <-time.After(stopGrace):
	}
	syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.exited
	d.stdout.Close()
	d.cmd = nil
	return nil
}

// Pid is the local server's process id (0 for a remote server or one
// that did not start).
func (s *Server) Pid() int {
	if d, ok := s.d.(*stdioDialer); ok {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.cmd != nil && d.cmd.Process != nil {
			return d.cmd.Process.Pid
		}
	}
	return 0
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// lastLine is the last non-empty line, bounded.
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	return oneLine(lines[len(lines)-1])
}
