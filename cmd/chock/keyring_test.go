package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/chockhq/chock/internal/keyringtest"
	"github.com/rogpeppe/go-internal/testscript"
)

// keyringScriptPassword unlocks the keyring `keyring start` runs; made up.
const keyringScriptPassword = "made-up-script-keyring-password"

// keyringCallBudget bounds one `keyring` command's request to the bus.
const keyringCallBudget = 30 * time.Second

// keyringDirVar names, in a script, the directory of the running keyring.
const keyringDirVar = "CHOCK_TEST_KEYRING_DIR"

// keyringCondition is [keyring]: gnome-keyring and dbus-daemon are there
// to run a Secret Service. Without them under CI the script fails instead
// of skipping.
func keyringCondition(cond string) (bool, error) {
	if cond != "keyring" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	if runtime.GOOS != "linux" {
		return false, nil
	}
	if err := keyringtest.Check(); err != nil {
		if os.Getenv("CI") != "" {
			return false, err
		}
		return false, nil
	}
	return true, nil
}

// keyringCmd runs a private Secret Service for a script (see
// internal/keyringtest):
//
//	keyring start        start it, and point the script's environment at it
//	keyring lock         lock its login keyring
//	keyring unlock       unlock it with its password, without a prompt
//	[!] keyring has NAME whether it holds chock's item for NAME (no value is read)
//	[!] keyring prompted whether anything began an unlock prompt
//
// The service is stopped, and its directory removed, when the script ends.
func keyringCmd(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: keyring start|lock|unlock|has NAME|prompted")
	}
	if args[0] == "start" {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: keyring start")
		}
		svc, err := keyringtest.Start(keyringScriptPassword)
		ts.Check(err)
		ts.Defer(func() {
			if err := svc.Stop(); err != nil {
				ts.Logf("stopping the keyring: %v", err)
			}
		})
		for _, kv := range svc.Env() {
			// The script's PATH is testscript's, which finds chock.
			if k, v, _ := strings.Cut(kv, "="); k != "PATH" {
				ts.Setenv(k, v)
			}
		}
		ts.Setenv(keyringDirVar, svc.Dir())
		return
	}
	bus := ts.Getenv("DBUS_SESSION_BUS_ADDRESS")
	if ts.Getenv(keyringDirVar) == "" || bus == "" {
		ts.Fatalf("keyring %s: no keyring started (keyring start)", args[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), keyringCallBudget)
	defer cancel()
	var ok bool
	switch {
	case args[0] == "lock" && len(args) == 1 && !neg:
		ts.Check(keyringtest.Lock(ctx, bus))
		return
	case args[0] == "unlock" && len(args) == 1 && !neg:
		ts.Check(keyringtest.Unlock(ctx, bus, keyringScriptPassword))
		return
	case args[0] == "has" && len(args) == 2:
		var err error
		ok, err = keyringtest.Has(ctx, bus, map[string]string{"service": "chock", "username": args[1]})
		ts.Check(err)
	case args[0] == "prompted" && len(args) == 1:
		n, err := keyringtest.Prompted(ts.Getenv(keyringDirVar))
		ts.Check(err)
		ok = n > 0
	default:
		ts.Fatalf("usage: keyring start|lock|unlock|has NAME|prompted")
	}
	if ok == neg {
		ts.Fatalf("keyring %s: %v", strings.Join(args, " "), ok)
	}
}
