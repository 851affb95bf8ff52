// Package credstore holds credential values under the names chock.zon's
// secrets block gives them, in the store .credentials.store names: a file
// (the default), the environment, the OS keyring, or SecretSpec. No error
// from this package carries a value.
package credstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/safefile"
	"github.com/zalando/go-keyring"
)

// ErrNotFound means the store has no value under that name.
var ErrNotFound = errors.New("no value stored")

// ErrReadOnly means the store cannot be written by chock.
var ErrReadOnly = errors.New("the store is read-only")

// ErrLocked means the OS keyring is there but locked, and would have to
// prompt for its password; chock refuses instead of waiting on a prompt.
var ErrLocked = errors.New("the OS keyring is locked")

// DefaultKeyringTimeout bounds one request to the OS keyring, so a keyring
// that never answers (a Secret Service waiting on a dialog nobody sees,
// say) cannot hold chock for ever.
const DefaultKeyringTimeout = 20 * time.Second

// Store reads and writes credential values.
type Store interface {
	// Name is the store's name as .credentials.store writes it.
	Name() string
	Get(ctx context.Context, name string) (string, error)
	Set(ctx context.Context, name, value string) error
	Delete(ctx context.Context, name string) error
}

// HowToStore says how a secret missing from st is put there: chock login
// for the stores it writes, an export for the environment, the profile for
// SecretSpec.
func HowToStore(st Store, name string) string {
	switch st.Name() {
	case "env":
		return fmt.Sprintf("export %s where chock runs", name)
	case "secretspec":
		return fmt.Sprintf("add %s to the SecretSpec profile", name)
	}
	return "chock login --tool-secret " + name
}

func checkName(name string) error {
	if !action.ValidSecretName(name) {
		return fmt.Errorf("secret name %q: %s", name, action.SecretNameRule)
	}
	return nil
}

// Located is a store that keeps what it holds where a program of this
// uid could read it (a file, a bus socket): the exec sandbox hides those
// paths from every call.
type Located interface {
	Locations() []string
}

// Foldered is a store that keeps its file in a folder of its own: a
// session makes that folder (0700) when it is missing, so that the sandbox
// hides it from the first call, before a value is ever written there.
type Foldered interface {
	Folder() string
}

// Options locate the stores.
type Options struct {
	// ConfigDir is where the file store keeps credentials.json; default the
	// user config dir's chock folder (CHOCK_CONFIG_DIR overrides).
	ConfigDir string
	// Getenv reads the environment for the env store; default os.Getenv.
	Getenv func(string) string
	// KeyringTimeout bounds one request to the keyring store; default
	// DefaultKeyringTimeout.
	KeyringTimeout time.Duration
}

// DefaultConfigDir is $CHOCK_CONFIG_DIR, or the user config dir's chock folder.
func DefaultConfigDir() (string, error) {
	if d := os.Getenv("CHOCK_CONFIG_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no user config directory: %w", err)
	}
	return filepath.Join(d, "chock"), nil
}

// Open returns the store of the given kind.
func Open(kind config.Store, o Options) (Store, error) {
	switch kind {
	case config.StoreEnv:
		get := o.Getenv
		if get == nil {
			get = os.Getenv
		}
		return envStore{get}, nil
	case config.StoreKeyring:
		t := o.KeyringTimeout
		if t <= 0 {
			t = DefaultKeyringTimeout
		}
		return keyringStore{timeout: t, unlocked: keyringUnlocked}, nil
	case config.StoreSecretSpec:
		return secretspecStore{}, nil
	}
	dir := o.ConfigDir
	if dir == "" {
		var err error
		if dir, err = DefaultConfigDir(); err != nil {
			return nil, err
		}
	}
	return &fileStore{path: filepath.Join(dir, "credentials.json")}, nil
}

// fileStore keeps values in a JSON file, mode 0600, written atomically.
type fileStore struct{ path string }

func (s *fileStore) Name() string { return "file" }

// Locations is the folder of credentials.json.
func (s *fileStore) Locations() []string { return []string{filepath.Dir(s.path)} }

// Folder is the folder of credentials.json.
func (s *fileStore) Folder() string { return filepath.Dir(s.path) }

func (s *fileStore) load() (map[string]string, error) {
	fi, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %v); chmod 600 it", s.path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(s.path)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s is not a credentials file: %v", s.path, syntaxOnly(err))
	}
	return m, nil
}

// syntaxOnly keeps a JSON error's position but not the text around it,
// which could be a value.
func syntaxOnly(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d", se.Offset)
	}
	return errors.New("unexpected content")
}

func (s *fileStore) save(m map[string]string) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return safefile.WritePrivate(s.path, append(b, '\n'), 0o600)
}

func (s *fileStore) Get(_ context.Context, name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	m, err := s.load()
	if err != nil {
		return "", err
	}
	v, ok := m[name]
	if !ok {
		return "", fmt.Errorf("%s: %w in %s", name, ErrNotFound, s.path)
	}
	return v, nil
}

func (s *fileStore) Set(_ context.Context, name, value string) error {
	if err := checkName(name); err != nil {
		return err
	}
	m, err := s.load()
	if err != nil {
		return err
	}
	m[name] = value
	return s.save(m)
}

func (s *fileStore) Delete(_ context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	m, err := s.load()
	if err != nil {
		return err
	}
	if _, ok := m[name]; !ok {
		return fmt.Errorf("%s: %w in %s", name, ErrNotFound, s.path)
	}
	delete(m, name)
	return s.save(m)
}

// envStore reads the variable of the same name; it cannot be written.
type envStore struct{ get func(string) string }

func (envStore) Name() string { return "env" }

func (s envStore) Get(_ context.Context, name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	v := s.get(name)
	if v == "" {
		return "", fmt.Errorf("%s: %w (the env store reads the environment variable %s)", name, ErrNotFound, name)
	}
	return v, nil
}

func (envStore) Set(_ context.Context, name, _ string) error {
	return fmt.Errorf("%w: the env store reads the environment; %s", ErrReadOnly, HowToStore(envStore{}, name))
}

func (envStore) Delete(_ context.Context, name string) error {
	return fmt.Errorf("%w: the env store reads the environment; unset %s where chock runs", ErrReadOnly, name)
}

// keyringStore uses the OS keyring (Secret Service, macOS Keychain,
// Windows Credential Manager) under the service "chock". go-keyring waits
// without limit on any prompt the keyring asks for, so each request first
// checks that the keyring is unlocked (unlocked: keyringUnlocked, which
// reads the Secret Service's lock state) and is bounded by timeout.
type keyringStore struct {
	timeout  time.Duration
	unlocked func(context.Context) error
}

const keyringService = "chock"

func (keyringStore) Name() string { return "keyring" }

// Locations is the session bus socket the Secret Service is reached on
// (an abstract socket has no path; the sandbox scopes those instead).
func (keyringStore) Locations() []string {
	return BusSockets(os.Getenv("DBUS_SESSION_BUS_ADDRESS"), os.Getuid())
}

// BusSockets are the socket paths of a D-Bus address (its default,
// /run/user/UID/bus, when it is empty).
func BusSockets(addr string, uid int) []string {
	if addr == "" {
		return []string{fmt.Sprintf("/run/user/%d/bus", uid)}
	}
	var out []string
	for _, a := range strings.Split(addr, ";") {
		rest, ok := strings.CutPrefix(a, "unix:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if p, ok := strings.CutPrefix(kv, "path="); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// keyringUnavailable is the error for a keyring that cannot be reached.
func keyringUnavailable(err error) error {
	return fmt.Errorf("the OS keyring is not available (%w); on Linux it needs a Secret Service such as gnome-keyring over D-Bus, or choose .credentials = .{ .store = .file }", err)
}

// keyringErr maps go-keyring's errors; no go-keyring error carries a value.
func keyringErr(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, keyring.ErrNotFound):
		return fmt.Errorf("%s: %w in the OS keyring", name, ErrNotFound)
	}
	return keyringUnavailable(err)
}

// do runs f once the keyring is known to be unlocked, within k.timeout. On
// a timeout the request is abandoned, not stopped: a Set may still land.
func (k keyringStore) do(ctx context.Context, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		if err := k.unlocked(ctx); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("the OS keyring did not answer within %v (%w); check that its service (gnome-keyring, say) is running and not waiting on a dialog", k.timeout, ctx.Err())
		}
		return fmt.Errorf("the OS keyring: %w", ctx.Err())
	}
}

func (k keyringStore) Get(ctx context.Context, name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	var v string
	err := k.do(ctx, func() (err error) {
		v, err = keyring.Get(keyringService, name)
		return keyringErr(name, err)
	})
	if err != nil {
		return "", err
	}
	return v, nil
}

func (k keyringStore) Set(ctx context.Context, name, value string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return k.do(ctx, func() error { return keyringErr(name, keyring.Set(keyringService, name, value)) })
}

func (k keyringStore) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return k.do(ctx, func() error { return keyringErr(name, keyring.Delete(keyringService, name)) })
}

// secretspecStore asks the secretspec command, under the same names a
// SecretSpec profile uses.
type secretspecStore struct{}

func (secretspecStore) Name() string { return "secretspec" }

func secretspec() (string, error) {
	p, err := exec.LookPath("secretspec")
	if err != nil {
		return "", errors.New("the secretspec command is not installed (see secretspec.dev), or choose another .credentials store")
	}
	return p, nil
}

func (secretspecStore) Get(ctx context.Context, name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	bin, err := secretspec()
	if err != nil {
		return "", err
	}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "get", name)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("secretspec get %s failed (%v); check secretspec.toml declares it", name, err)
	}
	v := strings.TrimRight(out.String(), "\r\n")
	if v == "" {
		return "", fmt.Errorf("%s: %w by secretspec", name, ErrNotFound)
	}
	return v, nil
}

func (secretspecStore) Set(ctx context.Context, name, value string) error {
	if err := checkName(name); err != nil {
		return err
	}
	bin, err := secretspec()
	if err != nil {
		return err
	}
	// The value goes on standard input, never on the command line.
	cmd := exec.CommandContext(ctx, bin, "set", name)
	cmd.Stdin = strings.NewReader(value + "\n")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("secretspec set %s failed (%v)", name, err)
	}
	return nil
}

func (secretspecStore) Delete(_ context.Context, name string) error {
	return fmt.Errorf("%w: remove %s with SecretSpec's own provider tools", ErrReadOnly, name)
}
