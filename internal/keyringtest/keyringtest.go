// Package keyringtest runs a private Secret Service for tests of the
// keyring store: a D-Bus session bus of its own (dbus-daemon with a config
// that activates nothing) and gnome-keyring-daemon, whose login keyring is
// created and unlocked with a password given on its standard input, all
// under a fresh temporary HOME, XDG_DATA_HOME and XDG_RUNTIME_DIR, so the
// machine's own bus and keyring are never touched.
//
// The bus also carries a stand-in for gcr's system prompter that accepts a
// prompt and never answers it, as an unlock dialog that nobody is in front
// of would. A client that asks for an unlock prompt therefore waits for
// ever, as it would on a desktop; Prompted says whether anything asked.
//go:build unix

package keyringtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/chockhq/chock/internal/secretservice"
	"github.com/godbus/dbus/v5"
)

// Install is what to install on Debian to run these tests.
const Install = "apt-get install gnome-keyring dbus"

// StartTimeout bounds how long Start waits for the daemons to come up.
const StartTimeout = 30 * time.Second

// StopTimeout is how long Stop lets a daemon end on SIGTERM before it
// sends SIGKILL.
const StopTimeout = 10 * time.Second

const (
	prompterName   = "org.gnome.keyring.SystemPrompter"
	prompterPath   = dbus.ObjectPath("/org/gnome/keyring/Prompter")
	prompterIface  = "org.gnome.keyring.internal.Prompter"
	internalIface  = "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface"
	promptsFile    = "prompts"
	keyringLogFile = "gnome-keyring.log"
)

// busConfig is a session bus that listens on one socket and has no
// service directories: nothing is started on demand, not the machine's
// gnome-keyring nor its real prompter.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// Check reports which of the programs the service needs are missing, with
// what to install; nil when both are there.
func Check() error {
	var missing []string
	for _, p := range []string{"dbus-daemon", "gnome-keyring-daemon"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("the keyring tests run a Secret Service of their own and need dbus-daemon and gnome-keyring-daemon; not installed: %s (%s; .ci/run installs them)", strings.Join(missing, ", "), Install)
}

// Service is a running private Secret Service.
type Service struct {
	dir     string
	address string
	conn    *dbus.Conn
	daemons []daemon
}

// daemon is a started process and a channel closed once it has exited.
type daemon struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func (s *Service) start(c *exec.Cmd) (daemon, error) {
	// Each daemon leads its own process group, so Stop ends it and
	// anything it started.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		return daemon{}, fmt.Errorf("starting %s: %w", filepath.Base(c.Path), err)
	}
	d := daemon{c, make(chan struct{})}
	go func() {
		c.Wait()
		close(d.exited)
	}()
	s.daemons = append(s.daemons, d)
	return d, nil
}

// Start runs dbus-daemon and gnome-keyring-daemon in a new temporary
// directory, with a login keyring unlocked by password. Stop ends them
// and removes the directory.
func Start(password string) (s *Service, err error) {
	if err := Check(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chock-keyring-")
	if err != nil {
		return nil, err
	}
	s = &Service{dir: dir}
	defer func() {
		if err != nil {
			if log := s.keyringLog(); log != "" {
				err = fmt.Errorf("%w; gnome-keyring-daemon said: %s", err, log)
			}
			s.Stop()
			s = nil
		}
	}()
	for _, d := range []string{"home", "data", "config", "run"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			return s, err
		}
	}
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, filepath.Join(dir, "run", "bus")), 0o600); err != nil {
		return s, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := s.startBus(ctx, conf); err != nil {
		return s, err
	}
	// Not dbus.WithContext(ctx): that would close the connection, and so
	// the prompter, when Start returns.
	if s.conn, err = dbus.Connect(s.address); err != nil {
		return s, fmt.Errorf("connecting to the private bus: %w", err)
	}
	if err := s.servePrompter(); err != nil {
		return s, err
	}
	keyring, err := s.startKeyring(password)
	if err != nil {
		return s, err
	}
	if err := s.waitLogin(ctx, keyring); err != nil {
		return s, err
	}
	return s, nil
}

func (s *Service) startBus(ctx context.Context, conf string) error {
	c := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=3")
	c.Env = s.baseEnv()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	c.ExtraFiles = []*os.File{w}
	_, err = s.start(c)
	w.Close()
	if err != nil {
		return err
	}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(r).ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	select {
	case s.address = <-line:
	case <-ctx.Done():
		return fmt.Errorf("dbus-daemon printed no address within %v", StartTimeout)
	}
	if !strings.HasPrefix(s.address, "unix:") {
		return fmt.Errorf("dbus-daemon printed no address (%q)", s.address)
	}
	return nil
}

func (s *Service) startKeyring(password string) (daemon, error) {
	log, err := os.Create(filepath.Join(s.dir, keyringLogFile))
	if err != nil {
		return daemon{}, err
	}
	defer log.Close()
	c := exec.Command("gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets")
	c.Env = s.Env()
	c.Dir = filepath.Join(s.dir, "home")
	// --unlock reads the password to the end of standard input.
	c.Stdin = strings.NewReader(password)
	c.Stdout, c.Stderr = log, log
	return s.start(c)
}

// waitLogin waits until the daemon serves an unlocked login collection.
func (s *Service) waitLogin(ctx context.Context, keyring daemon) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var v dbus.Variant
		err := s.conn.Object(secretservice.Name, secretservice.Path).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, secretservice.ServiceIface, "Collections").Store(&v)
		if err == nil {
			if paths, ok := v.Value().([]dbus.ObjectPath); ok && slices.Contains(paths, secretservice.LoginCollection) {
				if locked, err := collectionLocked(ctx, s.conn, secretservice.LoginCollection); err != nil || locked {
					return fmt.Errorf("gnome-keyring-daemon did not unlock its login keyring (locked %v, %v)", locked, err)
				}
				return nil
			}
		}
		select {
		case <-keyring.exited:
			return errors.New("gnome-keyring-daemon exited while starting")
		case <-ctx.Done():
			return fmt.Errorf("gnome-keyring-daemon served no login keyring within %v (last: %v)", StartTimeout, err)
		case <-tick.C:
		}
	}
}

// baseEnv is the environment of both daemons: the temporary directories in
// place of the machine's, and nothing of the caller's D-Bus session.
func (s *Service) baseEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(s.dir, "home"),
		"XDG_DATA_HOME=" + filepath.Join(s.dir, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(s.dir, "config"),
		"XDG_RUNTIME_DIR=" + filepath.Join(s.dir, "run"),
	}
}

// Env is the environment a client of the service needs: the private bus's
// address and the temporary HOME and XDG directories (PATH included).
func (s *Service) Env() []string {
	return append(s.baseEnv(), "DBUS_SESSION_BUS_ADDRESS="+s.address)
}

// Dir is the temporary directory the service lives in.
func (s *Service) Dir() string { return s.dir }

// Stop ends both daemons, waiting for them to exit, and removes the
// service's directory; it may be called more than once.
func (s *Service) Stop() error {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	// The keyring first, then its bus.
	for _, d := range slices.Backward(s.daemons) {
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(StopTimeout):
			syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
			<-d.exited
		}
	}
	s.daemons = nil
	if s.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.dir)
	s.dir = ""
	return err
}

func (s *Service) keyringLog() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, keyringLogFile))
	return strings.Join(strings.Fields(string(b)), " ")
}

// prompter stands in for gcr's system prompter: it takes a prompt, notes
// it in the service's prompts file, and never shows or answers it.
type prompter struct{ file string }

// BeginPrompting is gcr's org.gnome.keyring.internal.Prompter method.
func (p prompter) BeginPrompting(callback dbus.ObjectPath) *dbus.Error {
	f, err := os.OpenFile(p.file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return dbus.MakeFailedError(err)
	}
	defer f.Close()
	fmt.Fprintln(f, callback)
	return nil
}

// PerformPrompt is gcr's org.gnome.keyring.internal.Prompter method.
func (prompter) PerformPrompt(dbus.ObjectPath, string, map[string]dbus.Variant, string) *dbus.Error {
	return nil
}

// StopPrompting is gcr's org.gnome.keyring.internal.Prompter method.
func (prompter) StopPrompting(dbus.ObjectPath) *dbus.Error { return nil }

func (s *Service) servePrompter() error {
	if err := s.conn.Export(prompter{filepath.Join(s.dir, promptsFile)}, prompterPath, prompterIface); err != nil {
		return err
	}
	r, err := s.conn.RequestName(prompterName, dbus.NameFlagDoNotQueue)
	if err != nil {
		return fmt.Errorf("owning %s: %w", prompterName, err)
	}
	if r != dbus.RequestNameReplyPrimaryOwner {
		return fmt.Errorf("owning %s: reply %v", prompterName, r)
	}
	return nil
}

// Prompted counts the prompts that clients caused the service living in
// dir (see Service.Dir) to begin.
func Prompted(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, promptsFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strings.Count(string(b), "\n"), nil
}

// Lock locks the login collection of the service on the bus at address.
func Lock(ctx context.Context, address string) error {
	return withConn(ctx, address, func(c *dbus.Conn) error { return lock(ctx, c) })
}

// Unlock unlocks the login collection of the service on the bus at
// address with its password, without a prompt.
func Unlock(ctx context.Context, address, password string) error {
	return withConn(ctx, address, func(c *dbus.Conn) error { return unlock(ctx, c, password) })
}

// Has reports whether the service on the bus at address holds an item
// with these attributes; it reads no value.
func Has(ctx context.Context, address string, attrs map[string]string) (ok bool, err error) {
	err = withConn(ctx, address, func(c *dbus.Conn) error {
		ok, err = has(ctx, c, attrs)
		return err
	})
	return ok, err
}

func withConn(ctx context.Context, address string, f func(*dbus.Conn) error) error {
	c, err := dbus.Connect(address, dbus.WithContext(ctx))
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
}

func collectionLocked(ctx context.Context, c *dbus.Conn, path dbus.ObjectPath) (bool, error) {
	var v dbus.Variant
	if err := c.Object(secretservice.Name, path).CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, secretservice.CollectionIface, "Locked").Store(&v); err != nil {
		return false, err
	}
	locked, ok := v.Value().(bool)
	if !ok {
		return false, fmt.Errorf("Locked is a %s", v.Signature())
	}
	return locked, nil
}

func lock(ctx context.Context, c *dbus.Conn) error {
	var locked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := c.Object(secretservice.Name, secretservice.Path).CallWithContext(ctx, secretservice.ServiceIface+".Lock", 0, []dbus.ObjectPath{secretservice.LoginCollection}).Store(&locked, &prompt); err != nil {
		return fmt.Errorf("locking the login keyring: %w", err)
	}
	if prompt != "/" || !slices.Contains(locked, secretservice.LoginCollection) {
		return fmt.Errorf("locking the login keyring: locked %v, prompt %s", locked, prompt)
	}
	return nil
}

// secret is the Secret Service's (oayays) secret struct.
type secret struct {
	Session     dbus.ObjectPath
	Parameters  []byte
	Value       []byte
	ContentType string
}

// unlock uses gnome-keyring's own interface, which takes the password over
// the bus (a "plain" session: the bus is private) instead of prompting.
func unlock(ctx context.Context, c *dbus.Conn, password string) error {
	svc := c.Object(secretservice.Name, secretservice.Path)
	var out dbus.Variant
	var session dbus.ObjectPath
	if err := svc.CallWithContext(ctx, secretservice.ServiceIface+".OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&out, &session); err != nil {
		return fmt.Errorf("unlocking the login keyring: %w", err)
	}
	defer c.Object(secretservice.Name, session).CallWithContext(ctx, "org.freedesktop.Secret.Session.Close", 0)
	master := secret{Session: session, Parameters: []byte{}, Value: []byte(password), ContentType: "text/plain"}
	if err := svc.CallWithContext(ctx, internalIface+".UnlockWithMasterPassword", 0, secretservice.LoginCollection, master).Err; err != nil {
		return fmt.Errorf("unlocking the login keyring: %w", err)
	}
	return nil
}

func has(ctx context.Context, c *dbus.Conn, attrs map[string]string) (bool, error) {
	var unlocked, locked []dbus.ObjectPath
	if err := c.Object(secretservice.Name, secretservice.Path).CallWithContext(ctx, secretservice.ServiceIface+".SearchItems", 0, attrs).Store(&unlocked, &locked); err != nil {
		return false, fmt.Errorf("searching the keyring: %w", err)
	}
	return len(unlocked)+len(locked) > 0, nil
}
