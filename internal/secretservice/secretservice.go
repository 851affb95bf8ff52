// Package secretservice names the parts of the freedesktop Secret Service
// D-Bus API chock speaks (the keyring store, through go-keyring, and the
// test fake that stands in for gnome-keyring): one owner for the names
// both sides must agree on.
package secretservice

import "github.com/godbus/dbus/v5"

// The service's bus name, objects and interfaces.
const (
	Name            = "org.freedesktop.secrets"
	Path            = dbus.ObjectPath("/org/freedesktop/secrets")
	ServiceIface    = "org.freedesktop.Secret.Service"
	CollectionIface = "org.freedesktop.Secret.Collection"
	PromptIface     = "org.freedesktop.Secret.Prompt"
	// LoginCollection is the collection go-keyring uses when there is one.
	LoginCollection = dbus.ObjectPath("/org/freedesktop/secrets/collection/login")
	// NoPrompt is the prompt path of a call that needs none.
	NoPrompt = dbus.ObjectPath("/")
	// DefaultAlias is the alias of the default collection.
	DefaultAlias = "default"
	// PropertiesGet is D-Bus's own property getter.
	PropertiesGet = "org.freedesktop.DBus.Properties.Get"
)
