//go:build (dragonfly && cgo) || (freebsd && cgo) || linux || netbsd || openbsd

package credstore

import (
	"context"
	"fmt"
	"path"
	"slices"

	"github.com/godbus/dbus/v5"
)

// The Secret Service names go-keyring uses on these platforms (the same
// build constraint as its keyring_unix.go).
const (
	secretsName        = "org.freedesktop.secrets"
	secretsPath        = dbus.ObjectPath("/org/freedesktop/secrets")
	secretsService     = "org.freedesktop.Secret.Service"
	secretsCollection  = "org.freedesktop.Secret.Collection"
	secretsPrompt      = "org.freedesktop.Secret.Prompt"
	secretsLogin       = dbus.ObjectPath("/org/freedesktop/secrets/collection/login")
	dbusPropertiesGet  = "org.freedesktop.DBus.Properties.Get"
	secretsNone        = dbus.ObjectPath("/")
	secretsDefaultName = "default"
)

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
	svc := conn.Object(secretsName, secretsPath)
	var v dbus.Variant
	if err := svc.CallWithContext(ctx, dbusPropertiesGet, 0, secretsService, "Collections").Store(&v); err != nil {
		return keyringUnavailable(err)
	}
	coll := secretsLogin
	if paths, _ := v.Value().([]dbus.ObjectPath); !slices.Contains(paths, secretsLogin) {
		if err := svc.CallWithContext(ctx, secretsService+".ReadAlias", 0, secretsDefaultName).Store(&coll); err != nil {
			return keyringUnavailable(err)
		}
		if coll == secretsNone {
			// No default collection: go-keyring will say so.
			return nil
		}
	}
	if err := conn.Object(secretsName, coll).CallWithContext(ctx, dbusPropertiesGet, 0, secretsCollection, "Locked").Store(&v); err != nil {
		return keyringUnavailable(err)
	}
	if locked, _ := v.Value().(bool); !locked {
		return nil
	}
	var unlocked []dbus.ObjectPath
	var prompt dbus.ObjectPath
	if err := svc.CallWithContext(ctx, secretsService+".Unlock", 0, []dbus.ObjectPath{coll}).Store(&unlocked, &prompt); err != nil {
		return keyringUnavailable(err)
	}
	if prompt != secretsNone {
		conn.Object(secretsName, prompt).CallWithContext(ctx, secretsPrompt+".Dismiss", 0)
	}
	if slices.Contains(unlocked, coll) {
		return nil
	}
	return fmt.Errorf("%w (collection %q): unlock it (log in to the desktop, or open Passwords and Keys) and try again, as chock does not wait on an unlock prompt; or choose .credentials = .{ .store = .file }", ErrLocked, path.Base(string(coll)))
}
