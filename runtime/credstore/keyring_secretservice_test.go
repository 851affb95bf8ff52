//go:build linux

package credstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/keyringtest"
)

// keyringPassword unlocks the private test keyring; made up.
const keyringPassword = "made-up-keyring-password-7"

// keyringClientEnv tells the test binary it runs as
// TestKeyringSecretService's client.
const keyringClientEnv = "CHOCK_TEST_KEYRING_CLIENT"

// keyringClientBudget bounds the client process, so a store that waits on
// a prompt fails the test instead of hanging it.
const keyringClientBudget = 2 * time.Minute

// TestKeyringSecretService runs the keyring store against a real Secret
// Service: gnome-keyring-daemon on a private D-Bus session bus, under a
// temporary HOME, started here and stopped when the test ends. The store
// runs in a child process (this test binary, running
// TestKeyringSecretServiceClient) whose environment names only the private
// bus: go-keyring connects to the session bus the environment names, once
// per process, so the machine's own keyring is never reached.
//
// Without gnome-keyring and dbus-daemon the test is skipped, except under
// CI, where it fails.
func TestKeyringSecretService(t *testing.T) {
	if err := keyringtest.Check(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	svc, err := keyringtest.Start(keyringPassword)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := svc.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), keyringClientBudget)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKeyringSecretServiceClient$", "-test.v", "-test.count=1")
	cmd.Env = append(svc.Env(), keyringClientEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("client:\n%s", out)
	if ctx.Err() != nil {
		t.Fatalf("the client did not finish within %v: the store waited on the keyring", keyringClientBudget)
	}
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestKeyringSecretServiceClient") {
		t.Fatal("the client did not run")
	}
	for _, v := range []string{keyringValue, keyringValue2} {
		if strings.Contains(string(out), v) {
			t.Error("the client's output holds a secret value")
		}
	}
	if n, err := keyringtest.Prompted(svc.Dir()); err != nil || n != 0 {
		t.Errorf("the store began %d unlock prompts (%v); it must never prompt", n, err)
	}
}

// TestKeyringSecretServiceClient is the store's side of
// TestKeyringSecretService, which runs it on its private Secret Service.
func TestKeyringSecretServiceClient(t *testing.T) {
	if os.Getenv(keyringClientEnv) == "" {
		return // run by TestKeyringSecretService, on its private Secret Service; not a skip
	}
	ctx := context.Background()
	bus := os.Getenv("DBUS_SESSION_BUS_ADDRESS")
	s, err := Open(config.StoreKeyring, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const name, other = "CHOCK_TEST_TOKEN", "CHOCK_TEST_OTHER"
	stored := func(name string) bool {
		t.Helper()
		ok, err := keyringtest.Has(ctx, bus, map[string]string{"service": "chock", "username": name})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	get := func(want string) {
		t.Helper()
		v, err := s.Get(ctx, name)
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if v != want {
			t.Fatalf("get: the keyring gave a different value (%d bytes, want %d)", len(v), len(want))
		}
	}
	// A clear error: the sentinel, one line, no value.
	refused := func(op string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", op, err, want)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || strings.Contains(msg, keyringValue) || strings.Contains(msg, keyringValue2) {
			t.Fatalf("%s: the error is not one line without the value: %q", op, msg)
		}
	}

	// login, run, logout.
	_, err = s.Get(ctx, name)
	refused("get before set", err, ErrNotFound)
	if err := s.Set(ctx, name, keyringValue); err != nil {
		t.Fatalf("set: %v", err)
	}
	if !stored(name) {
		t.Fatal("set: the Secret Service holds no item for the name")
	}
	get(keyringValue)
	if err := s.Set(ctx, name, keyringValue2); err != nil {
		t.Fatalf("set again: %v", err)
	}
	get(keyringValue2)
	if err := s.Delete(ctx, name); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if stored(name) {
		t.Fatal("delete: the item is still there")
	}
	_, err = s.Get(ctx, name)
	refused("get after delete", err, ErrNotFound)
	refused("delete again", s.Delete(ctx, name), ErrNotFound)

	// A locked keyring: every request is refused at once with ErrLocked,
	// and the parent checks that nothing began a prompt.
	if err := s.Set(ctx, name, keyringValue); err != nil {
		t.Fatalf("set: %v", err)
	}
	if err := keyringtest.Lock(ctx, bus); err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ctx, name)
	refused("get locked", err, ErrLocked)
	if msg := err.Error(); !strings.Contains(msg, `the OS keyring is locked (collection "login"): unlock it`) || !strings.Contains(msg, "does not wait on an unlock prompt") {
		t.Errorf("the locked error does not say what to do: %s", msg)
	}
	refused("set locked", s.Set(ctx, other, keyringValue2), ErrLocked)
	refused("delete locked", s.Delete(ctx, name), ErrLocked)
	if stored(other) {
		t.Error("set locked: an item was stored")
	}

	// Unlocked again, the value is as it was.
	if err := keyringtest.Unlock(ctx, bus, keyringPassword); err != nil {
		t.Fatal(err)
	}
	get(keyringValue)
	if err := s.Delete(ctx, name); err != nil {
		t.Fatalf("delete: %v", err)
	}
}
