//go:build (dragonfly && cgo) || (freebsd && cgo) || linux || netbsd || openbsd

package credstore

import (
	"context"
	"fmt"
	"path"
	"slices"

	"github.com/chockhq/chock/internal/secretservice"
	"github.com/godbus/dbus/v5"
)

// The Secret Service names are internal/secretservice's (go-keyring uses the
// same on these platforms, with the same build constraint as its
// keyring_unix.go).

// keyringUnlocked checks that the collection go-keyring will use (the
// "login" collection if the service has one, else the default alias) is
// unlocked. A locked one is asked to unlock without a prompt; if it needs
// a prompt, the prompt is dismissed, never shown, and the error is
// ErrLocked: go-keyring would wait on the prompt with no limit, and no one
// may be there to answer it.
func keyringUnlocked(ctx context.Context) error {
	conn, err := dbus.SessionBus()
	if err != nil {
		return keyringUnavailable(err)
	}
	svc := conn.Object(secretservice.Name, secretservice.Path)
	var v dbus.Variant
	if err := svc.CallWithContext(ctx, secretservice.PropertiesGet, 0, secretservice.ServiceIface, "Collections").Store(&v); err != nil {
		return keyringUnavailable(err)
	}
	coll := secretservice.LoginCollection
	if paths, _ := v.Value().([]dbus.ObjectPath); !slices.Contains(paths, secretservice.LoginCollection) {
		if err := svc.CallWithContext(ctx, secretservice.ServiceIface+".ReadAlias", 0, secretservice.DefaultAlias).Store(&coll); err != nil {
			return keyringUnavailable(err)
		}
		if coll == secretservice.NoPrompt {
			// No default collection: go-keyring will say so.
			return nil
		}
	}
	if err := conn.Object(secretservice.Name, coll).CallWithContext(ctx, secretservice.PropertiesGet, 0, secretservice.CollectionIface, "Locked").Store(&v); err != nil {
		return keyringUnavailable(err)
	}
	if locked, _ := v.Value().(bool); !locked {
		return nil
	}
	var unlocked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := svc.CallWithContext(ctx, secretservice.ServiceIface+".Unlock", 0, []dbus.ObjectPath{coll}).Store(&unlocked, &prompt); err != nil {
		return keyringUnavailable(err)
	}
	if prompt != secretservice.NoPrompt {
		conn.Object(secretservice.Name, prompt).CallWithContext(ctx, secretservice.PromptIface+".Dismiss", 0)
	}
	if slices.Contains(unlocked, coll) {
		return nil
	}
	return fmt.Errorf("%w (collection %q): unlock it (log in to the desktop, or open Passwords and Keys) and try again, as chock does not wait on an unlock prompt; or choose .credentials = .{ .store = .file }", ErrLocked, path.Base(string(coll)))
}
