package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	goio "io"
	"os"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/safefile"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/spf13/pflag"
)

// keyFlags are the signing and verification flags, named as opa build and
// opa run name them.
type keyFlags struct {
	signingKey, signingAlg, signingKeyID string
	verificationKey, verificationKeyID   string
	skipVerify                           bool
}

func (k *keyFlags) addSigning(fs *pflag.FlagSet) {
	fs.StringVar(&k.signingKey, "signing-key", "", "sign the bundle with this key file (PEM private key, or an HMAC secret)")
	fs.StringVar(&k.signingAlg, "signing-alg", "RS256", "signing and verification algorithm (RS256, PS256, ES256, HS256, ...)")
	fs.StringVar(&k.signingKeyID, "signing-key-id", compile.DefaultKeyID, "key id recorded in the signature")
}

func (k *keyFlags) addVerification(fs *pflag.FlagSet) {
	fs.StringVar(&k.verificationKey, "verification-key", "", "require every --org to be an org bundle signed by this key (PEM public key, or an HMAC secret)")
	fs.StringVar(&k.verificationKeyID, "verification-key-id", compile.DefaultKeyID, "key id of --verification-key")
	fs.BoolVar(&k.skipVerify, "skip-verify", false, "read a signed bundle without checking its signature (without it, a signed bundle needs --verification-key)")
}

// addAlg adds --signing-alg for a command that only verifies.
func (k *keyFlags) addAlg(fs *pflag.FlagSet) {
	fs.StringVar(&k.signingAlg, "signing-alg", "RS256", "algorithm of --verification-key")
}

// readOptions are how the command reads bundles: checked against
// --verification-key, or unchecked with --skip-verify.
func (k *keyFlags) readOptions() (compile.ReadOptions, error) {
	verify, err := readKey(k.verificationKey, k.signingAlg, k.verificationKeyID, "verification key")
	if err != nil {
		return compile.ReadOptions{}, err
	}
	if verify != nil && k.skipVerify {
		return compile.ReadOptions{}, errors.New("give --verification-key or --skip-verify, not both")
	}
	return compile.ReadOptions{Verify: verify, SkipVerify: k.skipVerify}, nil
}

// readKey reads a key file. The key's contents never appear in a message.
func readKey(path, alg, id, what string) (*compile.Key, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the %s: %w", what, err)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("the %s %s is empty", what, path)
	}
	k := &compile.Key{Material: b, Alg: alg, ID: id}
	if err := k.Check(); err != nil {
		return nil, fmt.Errorf("the %s %s: %w", what, path, err)
	}
	return k, nil
}

// isChockBundle says whether r holds a bundle chock compiled (signed or
// not): the only kind of file -o replaces.
func isChockBundle(r goio.Reader) bool {
	b, err := compile.ReadBundle(r, compile.ReadOptions{SkipVerify: true})
	if err != nil {
		return false
	}
	_, err = compile.MetaOf(b.Data)
	var fe *compile.FormatError
	return err == nil || errors.As(err, &fe)
}

// runCompile implements `chock compile`.
func runCompile(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("compile", io)
	orgs := fs.StringArray("org", nil, "an org ceiling: an org source (org.zon) or an org bundle; repeatable")
	out := fs.StringP("output", "o", "", "where to write: a .tar.gz bundle (default bundle.tar.gz, - for stdout) or, with --format rego, a folder (default rego)")
	format := fs.String("format", "bundle", "bundle (an OPA .tar.gz bundle) or rego (modules and data in a folder, for review)")
	orgOnly := fs.Bool("org-only", false, "compile one org source (the argument) into an org bundle for --org")
	var keys keyFlags
	keys.addSigning(fs)
	keys.addVerification(fs)
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: chock compile [--org FILE]... [-o OUT] [--format bundle|rego] [--signing-key FILE] [--verification-key FILE] [CONFIG]")
		fmt.Fprintln(io.err, "       chock compile --org-only [-o OUT] [--signing-key FILE] ORG.zon")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *format != "bundle" && *format != "rego" {
		fmt.Fprintf(io.err, "chock compile: unknown --format %q (want bundle or rego)\n", *format)
		return exitUsage
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return exitUsage
	}
	if *orgOnly && (len(*orgs) > 0 || fs.NArg() != 1) {
		fmt.Fprintln(io.err, "chock compile: --org-only takes exactly one org source and no --org")
		return exitUsage
	}
	if *format == "rego" && keys.signingKey != "" {
		fmt.Fprintln(io.err, "chock compile: --signing-key signs bundles; --format rego writes an unsigned folder")
		return exitUsage
	}
	sign, err := readKey(keys.signingKey, keys.signingAlg, keys.signingKeyID, "signing key")
	if err != nil {
		fmt.Fprintf(io.err, "chock compile: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	ro, err := keys.readOptions()
	if err != nil {
		fmt.Fprintf(io.err, "chock compile: %s\n", oneLine(err.Error()))
		return exitUsage
	}

	var l *load.Loaded
	var code int
	var ok bool
	if *orgOnly {
		l, code, ok = loadSources(nil, fs.Args(), compile.ReadOptions{}, io)
	} else {
		config := "chock.zon"
		if fs.NArg() == 1 {
			config = fs.Arg(0)
		}
		l, code, ok = loadSources([]string{config}, *orgs, ro, io)
	}
	if !ok {
		return code
	}
	// A file with lint errors does not compile, and nothing is written.
	if refuseErrors(l.Lint(), l.Sources, io, "compile") {
		return exitFailed
	}
	in := compile.Input{Orgs: l.Orgs}
	if !*orgOnly {
		in.Config = l.Configs[0]
	}
	res, err := compile.Compile(in)
	if err != nil {
		fmt.Fprintf(io.err, "chock compile: %s\n", oneLine(err.Error()))
		return exitFailed
	}
	dest := *out
	if *format == "rego" {
		if dest == "" {
			dest = "rego"
		}
		if err := io.aborts.critical(func() error { return res.WriteRego(dest) }); err != nil {
			fmt.Fprintf(io.err, "chock compile: %s\n", oneLine(err.Error()))
			return exitFailed
		}
		fmt.Fprintf(io.err, "wrote %s/ (revision %s)\n", safetext.Line(dest), res.Revision[:16])
		return exitOK
	}
	if dest == "" {
		dest = "bundle.tar.gz"
	}
	var buf bytes.Buffer
	if err := res.WriteBundle(&buf, sign); err != nil {
		fmt.Fprintf(io.err, "chock compile: %s\n", oneLine(err.Error()))
		return exitFailed
	}
	if dest == "-" {
		if _, err := stdoutFile(io).Write(buf.Bytes()); err != nil {
			fmt.Fprintf(io.err, "chock compile: %v\n", err)
			return exitFailed
		}
		return exitOK
	}
	err = safefile.Check(dest, isChockBundle, "a bundle chock compiled")
	if err == nil {
		err = io.aborts.critical(func() error { return safefile.Write(dest, buf.Bytes(), 0o644) })
	}
	if err != nil {
		fmt.Fprintf(io.err, "chock compile: %s\n", oneLine(err.Error()))
		return exitFailed
	}
	signed := ""
	if sign != nil {
		signed = ", signed"
	}
	fmt.Fprintf(io.err, "wrote %s (%s bundle, revision %s%s)\n", safetext.Line(dest), res.Kind, res.Revision[:16], signed)
	return exitOK
}
