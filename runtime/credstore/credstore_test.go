package credstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
)

const value = "ghp_STOREvalue_must_never_print_42"

func TestFileStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(config.StoreFile, Options{ConfigDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "TOKEN"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("empty store: %v", err)
	}
	if err := s.Set(ctx, "TOKEN", value); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get(ctx, "TOKEN"); err != nil || v != value {
		t.Fatalf("get: %v", err)
	}
	path := filepath.Join(dir, "credentials.json")
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	if err := s.Set(ctx, "bad.name", "x"); err == nil {
		t.Error("a bad name was accepted")
	}
	// A file others can read is refused.
	os.Chmod(path, 0o644)
	if _, err := s.Get(ctx, "TOKEN"); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Errorf("world-readable: %v", err)
	}
	os.Chmod(path, 0o600)
	// A corrupt file's error does not quote its content.
	os.WriteFile(path, []byte(`{"TOKEN": "`+value), 0o600)
	if _, err := s.Get(ctx, "TOKEN"); err == nil || strings.Contains(err.Error(), value) {
		t.Errorf("corrupt: %v", err)
	}
	os.WriteFile(path, []byte(`{"TOKEN": "`+value+`"}`), 0o600)
	if err := s.Delete(ctx, "TOKEN"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "TOKEN"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
}

func TestEnvStore(t *testing.T) {
	s, _ := Open(config.StoreEnv, Options{Getenv: func(k string) string {
		if k == "TOKEN" {
			return value
		}
		return ""
	}})
	ctx := context.Background()
	if v, err := s.Get(ctx, "TOKEN"); err != nil || v != value {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "OTHER"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	if err := s.Set(ctx, "TOKEN", value); !errors.Is(err, ErrReadOnly) || strings.Contains(err.Error(), value) {
		t.Errorf("set: %v", err)
	}
}

// TestKeyringAndSecretspecErrors: where the OS keyring or the secretspec
// command is missing (as in CI), the stores say so clearly.
func TestKeyringAndSecretspecErrors(t *testing.T) {
	ctx := context.Background()
	k, _ := Open(config.StoreKeyring, Options{})
	if _, err := k.Get(ctx, "CHOCK_TEST_UNLIKELY_NAME"); err != nil && !errors.Is(err, ErrNotFound) && !strings.Contains(err.Error(), "keyring") {
		t.Errorf("keyring error is unclear: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	s, _ := Open(config.StoreSecretSpec, Options{})
	if _, err := s.Get(ctx, "TOKEN"); err == nil || !strings.Contains(err.Error(), "secretspec command is not installed") {
		t.Errorf("secretspec: %v", err)
	}
}
