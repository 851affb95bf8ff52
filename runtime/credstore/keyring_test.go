package credstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Made-up values for the keyring tests.
const (
	keyringValue  = "ghp_KEYRINGvalue_must_never_print_1"
	keyringValue2 = "ghp_KEYRINGvalue_must_never_print_2"
)

// TestKeyringTimeout: a keyring that never answers is given up on after
// the store's timeout, with an error that says so.
func TestKeyringTimeout(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	hang := func(context.Context) error { <-block; return nil }
	s := keyringStore{timeout: 10 * time.Millisecond, unlocked: hang}
	_, err := s.Get(context.Background(), "TOKEN")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "the OS keyring did not answer within 10ms") {
		t.Errorf("get: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Set(ctx, "TOKEN", keyringValue); !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), keyringValue) {
		t.Errorf("set, cancelled: %v", err)
	}
}
