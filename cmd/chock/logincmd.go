package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/runtime/credstore"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// storeFor opens the credential store a chock.zon names. A missing
// chock.zon means the default store, unless --config named it (named says
// so): a mistyped name must not quietly put a secret in another store.
func storeFor(configFile string, named bool, std stdio) (credstore.Store, error) {
	kind := config.StoreFile
	if configFile == "-" {
		return nil, failedf(exitUsage, "--config -: the standard input is the secret's value here; name the chock.zon file")
	}
	src, err := os.ReadFile(configFile)
	if named && errors.Is(err, os.ErrNotExist) {
		return nil, failedf(exitUsage, "--config %s: no such file; the store a secret goes in is the one it names", displayName(configFile))
	}
	if err == nil {
		c, ds := config.Load(configFile, src)
		if ds.HasErrors() {
			diag.WriteText(std.err, ds, diag.Sources{configFile: src})
			return nil, reported(exitFailed)
		}
		kind = c.Credentials.Store.Value
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, inputError(exitFailed, err)
	}
	st, err := credstore.Open(kind, credstore.Options{})
	if err != nil {
		return nil, inputError(exitFailed, err)
	}
	return st, nil
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) (int, bool) {
	f, ok := r.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	return fd, term.IsTerminal(fd)
}

// secretFlags are the flags of login and logout.
type secretFlags struct {
	name, config string
}

// add adds --tool-secret (its usage ending in what) and --config.
func (f *secretFlags) add(c *cobra.Command, what string) {
	c.Flags().StringVar(&f.name, "tool-secret", "", "the secret's `NAME`"+what)
	c.Flags().StringVar(&f.config, "config", defaultConfig, "use the .credentials.store of the chock.zon in `FILE`")
}

// newLoginCmd is `chock login --tool-secret NAME`: the value comes from
// standard input (without echo on a terminal); no option takes it.
func newLoginCmd(std stdio) *cobra.Command {
	var f secretFlags
	c := &cobra.Command{
		Use:   "login --tool-secret NAME [--config FILE]",
		Short: "store a secret's value, read from standard input",
		Long: `login stores the value of the secret NAME, read from standard input
(without echo on a terminal), in the store .credentials.store names: file
(the default: credentials.json, mode 0600, under the user config dir or
$CHOCK_CONFIG_DIR), env, keyring (the OS keyring, through the Secret
Service on Linux; a locked keyring is refused at once with what to do) or
secretspec. No option takes the value.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.name == "" {
				return usageError()
			}
			if !action.ValidSecretName(f.name) {
				return failedf(exitUsage, "secret name %s: %s", safetext.Line(strconv.Quote(f.name)), action.SecretNameRule)
			}
			st, err := storeFor(f.config, cmd.Flags().Changed("config"), std)
			if err != nil {
				return err
			}
			var value []byte
			if fd, tty := isTerminal(std.in); tty {
				fmt.Fprintf(std.err, "value of %s: ", f.name)
				// A signal while echo is off must not leave the terminal so.
				if old, err := term.GetState(fd); err == nil {
					std.aborts.atExit(func() { term.Restore(fd, old) })
				}
				b, err := term.ReadPassword(fd)
				fmt.Fprintln(std.err)
				if err != nil {
					return failedf(exitFailed, "reading the value: %w", err)
				}
				value = b
			} else {
				b, err := readLimited(std.in, 1<<20)
				if err != nil {
					return failedf(exitFailed, "reading the value: %w", err)
				}
				value = bytes.TrimRight(b, "\r\n")
			}
			if len(value) < action.MinSecretLen {
				return failedf(exitFailed, "the value of %s is shorter than %d bytes, too short to redact; nothing stored", f.name, action.MinSecretLen)
			}
			if err := std.aborts.critical(func() error { return st.Set(cmd.Context(), f.name, string(value)) }); err != nil {
				return failed(exitFailed, err)
			}
			fmt.Fprintf(std.err, "stored %s in the %s store\n", f.name, st.Name())
			return nil
		},
	}
	f.add(c, ", as chock.zon's secrets block gives it")
	return c
}

// readLimited reads at most limit bytes.
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("more than %d bytes", limit)
	}
	return b, nil
}

// newLogoutCmd is `chock logout --tool-secret NAME`.
func newLogoutCmd(std stdio) *cobra.Command {
	var f secretFlags
	c := &cobra.Command{
		Use:   "logout --tool-secret NAME [--config FILE]",
		Short: "remove a stored secret",
		Long: `logout removes the secret NAME from the store .credentials.store names,
as login stored it.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.name == "" {
				return usageError()
			}
			st, err := storeFor(f.config, cmd.Flags().Changed("config"), std)
			if err != nil {
				return err
			}
			if err := std.aborts.critical(func() error { return st.Delete(cmd.Context(), f.name) }); err != nil {
				return failed(exitFailed, err)
			}
			fmt.Fprintf(std.err, "removed %s from the %s store\n", f.name, st.Name())
			return nil
		},
	}
	f.add(c, "")
	return c
}
