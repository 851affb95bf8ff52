package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/safefile"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// keyFlags are the signing and verification flags, named as opa build and
// opa run name them.
type keyFlags struct {
	signingKey, signingAlg, signingKeyID string
	verificationKey, verificationKeyID   string
	skipVerify                           bool
}

// addSigning adds the flags of a command that signs.
func (k *keyFlags) addSigning(fs *pflag.FlagSet) {
	fs.StringVar(&k.signingKey, "signing-key", "", "sign the bundle with the key in `FILE` (PEM private key, or an HMAC secret)")
	fs.StringVar(&k.signingAlg, "signing-alg", "RS256", "the signing and verification algorithm `ALG` (RS256, PS256, ES256, HS256, ...)")
	fs.StringVar(&k.signingKeyID, "signing-key-id", compile.DefaultKeyID, "the key `ID` recorded in the signature")
}

// addVerification adds the flags of a command that reads signed bundles.
func (k *keyFlags) addVerification(fs *pflag.FlagSet) {
	fs.StringVar(&k.verificationKey, "verification-key", "", "check every bundle given (--org, --bundle) against the key in `FILE` (PEM public key, or an HMAC secret): unsigned, wrong or tampered is refused, and an org source cannot be given")
	fs.StringVar(&k.verificationKeyID, "verification-key-id", compile.DefaultKeyID, "the key `ID` of --verification-key")
	fs.BoolVar(&k.skipVerify, "skip-verify", false, "read a signed bundle without checking its signature (without it, a signed bundle needs --verification-key)")
}

// addAlg adds --signing-alg for a command that only verifies.
func (k *keyFlags) addAlg(fs *pflag.FlagSet) {
	fs.StringVar(&k.signingAlg, "signing-alg", "RS256", "the algorithm `ALG` of --verification-key")
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
func isChockBundle(r io.Reader) bool { return compile.IsChockBundle(r) }

// newCompileCmd is `chock compile`.
func newCompileCmd(std stdio) *cobra.Command {
	var p compileParams
	c := &cobra.Command{
		Use:   "compile [--org FILE]... [--link-orgs] [-o OUT] [--kind bundle|rego] [--signing-key FILE [--signing-alg ALG]] [--verification-key FILE] [--config FILE | CONFIG]",
		Short: "build the OPA bundle",
		Long: `compile lints, then compiles the project's chock.zon (--config, or the
argument) and its org ceilings into a standard OPA bundle (bundle.tar.gz),
or with --kind rego into a folder of modules and data for review. The same
input writes the same bytes; a file with lint errors writes nothing.

--org takes an org source or an org bundle, which

    chock compile --org-only [-o OUT] [--signing-key FILE] ORG.zon

compiles from one org source into an org bundle of its own, rooted at
chock_orgs/NAME (NAME is the org's .name: lower-case letters, digits, '_'
and '-'), which loads in OPA beside a project bundle.

--link-orgs makes the project bundle link its --org ceilings by name
instead of holding them: they are still linted against, but the bundle
holds the project layer alone, and each org's own bundle is loaded beside
it (opa run -b bundle.tar.gz -b acme.tar.gz, chock eval --bundle
bundle.tar.gz --bundle acme.tar.gz). Until every linked org's bundle is
loaded, data.chock.decision denies with an error naming the missing org.

--signing-key signs with OPA's .signatures.json; --verification-key makes
every --org a signed org bundle.

--format is the old name of --kind, and still works.`,
		Args: maxArgs(1),
		RunE: paramsRunE(&p, runCompile, std),
	}
	fs := c.Flags()
	addConfigFlag(fs, &p.config)
	fs.StringArrayVar(&p.orgs, "org", nil, "add the org ceiling in `FILE`: an org source (org.zon) or an org bundle; repeatable")
	fs.StringVarP(&p.out, "output", "o", "", "where to write, `OUT`: a .tar.gz bundle (default bundle.tar.gz, - for stdout) or, with --kind rego, a folder (default rego)")
	fs.StringVar(&p.kind, "kind", "bundle", "the artifact to build, `KIND`: bundle (an OPA .tar.gz bundle) or rego (modules and data in a folder, for review)")
	// --format was compile's name for --kind; lint's --format is its
	// output format.
	fs.StringVar(&p.kind, "format", "bundle", "the old name of --kind")
	fs.MarkDeprecated("format", "use --kind (--format is lint's output format)")
	fs.BoolVar(&p.orgOnly, "org-only", false, "compile one org source (the argument) into an org bundle (root chock_orgs/NAME) for --org, or to load beside a bundle that links it")
	fs.BoolVar(&p.linkOrgs, "link-orgs", false, "link the --org ceilings by name: lint against them, but hold only the project layer; each org's bundle is loaded beside this one")
	p.keys.addSigning(fs)
	p.keys.addVerification(fs)
	c.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions([]cobra.Completion{"bundle", "rego"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// compileParams are the flags of chock compile.
type compileParams struct {
	config, out, kind string
	orgs              []string
	orgOnly, linkOrgs bool
	keys              keyFlags
	// configSet, formatSet and kindSet say whether --config, --format
	// and --kind were given.
	configSet, formatSet, kindSet bool
}

// seen notes which of --config, --format and --kind were given.
func (p *compileParams) seen(cmd *cobra.Command) {
	p.configSet, p.formatSet, p.kindSet = cmd.Flags().Changed("config"), cmd.Flags().Changed("format"), cmd.Flags().Changed("kind")
}

// kindFlag is the name the artifact kind was given by, for messages.
func (p *compileParams) kindFlag() string {
	if p.formatSet {
		return "--format"
	}
	return "--kind"
}

// validate checks the flags and arguments of chock compile against each
// other.
func (p *compileParams) validate(args []string) error {
	if p.formatSet && p.kindSet {
		return failedf(exitUsage, "--format is the old name of --kind; give one")
	}
	kindFlag := p.kindFlag()
	if p.kind != "bundle" && p.kind != "rego" {
		return failedf(exitUsage, "unknown %s %q (want bundle or rego)", kindFlag, p.kind)
	}
	if p.orgOnly && (len(p.orgs) > 0 || len(args) != 1) {
		return failedf(exitUsage, "--org-only takes exactly one org source and no --org")
	}
	if p.linkOrgs && (p.orgOnly || len(p.orgs) == 0) {
		return failedf(exitUsage, "--link-orgs links the project's --org ceilings by name; give at least one --org, and not --org-only")
	}
	if p.orgOnly && p.configSet {
		return failedf(exitUsage, "--org-only compiles the org source given as its argument; --config names a project's chock.zon")
	}
	if p.kind == "rego" && p.keys.signingKey != "" {
		return failedf(exitUsage, "--signing-key signs bundles; %s rego writes an unsigned folder", kindFlag)
	}
	return nil
}

// runCompile is chock compile once its flags are valid: it lints, then
// writes the bundle (or the folder of Rego) the flags ask for.
func runCompile(_ context.Context, args []string, p compileParams, std stdio) error {
	sign, err := readKey(p.keys.signingKey, p.keys.signingAlg, p.keys.signingKeyID, "signing key")
	if err != nil {
		return failed(exitUsage, err)
	}
	ro, err := p.keys.readOptions()
	if err != nil {
		return failed(exitUsage, err)
	}

	var l *load.Loaded
	if p.orgOnly {
		l, err = loadAs(nil, args, load.Input{ProjectNames: true}, std)
	} else {
		files, ferr := configArgs(p.configSet, p.config, args)
		if ferr != nil {
			return ferr
		}
		// Compiled under the names the files have in the project: the
		// revision is the content's, as chock eval and run compute it.
		l, err = loadAs(files, p.orgs, load.Input{Read: ro, ProjectNames: true}, std)
	}
	if err != nil {
		return err
	}
	// A file with lint errors does not compile, and nothing is written;
	// nor does an org that is to have a bundle of its own, or be
	// linked by name, with a name that cannot root one.
	ds := l.Lint()
	if p.orgOnly || p.linkOrgs {
		ds = append(ds, compile.OrgNameDiags(l.Orgs)...)
	}
	if err := refuseErrors(ds, l.Sources, std, "compile"); err != nil {
		return err
	}
	in := compile.Input{Orgs: l.Orgs, LinkOrgs: p.linkOrgs}
	if !p.orgOnly {
		in.Config = l.Configs[0]
	}
	res, err := compile.Compile(in)
	if err != nil {
		return failed(exitFailed, err)
	}
	dest := p.out
	if p.kind == "rego" {
		if dest == "" {
			dest = "rego"
		}
		if err := std.aborts.critical(func() error { return res.WriteRego(dest) }); err != nil {
			return failed(exitFailed, err)
		}
		fmt.Fprintf(std.err, "wrote %s/ (revision %s)\n", safetext.Line(dest), res.Revision[:16])
		return nil
	}
	if dest == "" {
		dest = "bundle.tar.gz"
	}
	var buf bytes.Buffer
	if err := res.WriteBundle(&buf, sign); err != nil {
		return failed(exitFailed, err)
	}
	if dest == "-" {
		if _, err := stdoutFile(std).Write(buf.Bytes()); err != nil {
			return failed(exitFailed, err)
		}
		return nil
	}
	err = safefile.Check(dest, isChockBundle, "a bundle chock compiled")
	if err == nil {
		err = std.aborts.critical(func() error { return safefile.Write(dest, buf.Bytes(), 0o644) })
	}
	if err != nil {
		return failed(exitFailed, err)
	}
	signed := ""
	if sign != nil {
		signed = ", signed"
	}
	fmt.Fprintf(std.err, "wrote %s (%s bundle, revision %s%s)\n", safetext.Line(dest), res.Kind, res.Revision[:16], signed)
	return nil
}
