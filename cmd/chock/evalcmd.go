package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// policyFlags choose the policy a command decides with: sources (--config
// and --org), or compiled bundles (--bundle, repeatable: a project bundle
// and the org bundles it links, side by side as opa run -b loads them).
type policyFlags struct {
	config  string
	orgs    []string
	bundles []string
	keys    keyFlags
	// opa, when given, has OPA serve the policy instead.
	opa opaFlags
	// flags is the set they were added to, to tell a --config given from
	// its default.
	flags *pflag.FlagSet
	// only, when set, compiles a policy from sources for these actions
	// alone (load.Input.Only): chock hook's, for one event.
	only []string
}

// files are the policy's own files as given (config, orgs, bundle): a
// session keeps them read-only inside every call.
func (p *policyFlags) files() []string {
	var out []string
	for _, f := range append(append([]string{p.config}, p.orgs...), p.bundles...) {
		if f != "" && f != "-" {
			out = append(out, f)
		}
	}
	return out
}

// bundleGiven says whether --bundle is given.
func (p *policyFlags) bundleGiven() bool { return len(p.bundles) > 0 }

// add adds --config, --org, --bundle and the verification flags.
func (p *policyFlags) add(fs *pflag.FlagSet) {
	p.flags = fs
	addConfigFlag(fs, &p.config)
	p.addOrgs(fs)
	fs.StringArrayVar(&p.bundles, "bundle", nil, "decide with the compiled bundle in `FILE` instead of --config and --org; repeatable: a project bundle and the org bundles it links (chock compile --link-orgs), loaded side by side as opa run -b loads them")
	p.keys.addAlg(fs)
	p.keys.addVerification(fs)
}

// addOrgs adds --org.
func (p *policyFlags) addOrgs(fs *pflag.FlagSet) {
	fs.StringArrayVar(&p.orgs, "org", nil, "add the org ceiling in `FILE`: an org source (org.zon) or an org bundle; repeatable")
}

// load builds the policy, or returns the error that ends the command.
func (p *policyFlags) load(ctx context.Context, std stdio) (*load.Policy, error) {
	if err := p.opa.check(p); err != nil {
		return nil, inputError(exitUsage, err)
	}
	ro, err := p.keys.readOptions()
	if err != nil {
		return nil, inputError(exitUsage, err)
	}
	// The machine's managed ceilings apply whatever the flags say; one
	// chock cannot trust refuses every decision.
	managed, err := load.Managed(load.ManagedDir)
	if err != nil {
		return nil, inputError(exitFailed, err)
	}
	need, err := load.OrgNames(managed, compile.ReadOptions{})
	if err != nil {
		return nil, inputError(exitFailed, err)
	}
	pol, err := p.loadWith(ctx, managed, ro, std)
	if err != nil {
		return nil, err
	}
	if err := load.RequireOrgs(pol, need); err != nil {
		return nil, inputError(exitFailed, err)
	}
	return pol, nil
}

// loadWith loads the policy the flags name, with the managed ceilings
// among its orgs where it is built from sources.
func (p *policyFlags) loadWith(ctx context.Context, managed []load.Source, ro compile.ReadOptions, std stdio) (*load.Policy, error) {
	if p.opa.given() {
		return p.opa.load(ctx, std)
	}
	if len(p.bundles) > 0 {
		if len(p.orgs) > 0 {
			return nil, inputError(exitUsage, errors.New("--bundle already holds its org ceilings or links their bundles; give --bundle or --org, not both"))
		}
		if p.flags != nil && p.flags.Changed("config") {
			return nil, inputError(exitUsage, errors.New("--bundle is the policy; give --bundle or --config, not both"))
		}
		srcs, err := p.readBundles(std)
		if err != nil {
			return nil, inputError(exitUsage, err)
		}
		pol, err := load.FromBundles(ctx, srcs, ro)
		if err != nil {
			return nil, inputError(exitFailed, err)
		}
		pol.Sources = bundleSources(pol.Engine.Meta())
		return pol, nil
	}
	configs, err := readConfigSources([]string{p.config}, std)
	if err != nil {
		return nil, err
	}
	orgs, err := readSources(p.orgs, std)
	if err != nil {
		return nil, err
	}
	orgs = append(append([]load.Source(nil), managed...), orgs...)
	pol, ds, err := load.FromSources(ctx, load.Input{Configs: configs, Orgs: orgs, Read: ro, Only: p.only})
	if errors.Is(err, load.ErrLint) || errors.Is(err, load.ErrInvalid) {
		return nil, refuseErrors(ds, sourcesOf(configs, orgs), std, "policy")
	}
	if err != nil {
		return nil, inputError(exitFailed, err)
	}
	return pol, nil
}

// readBundles reads every --bundle; standard input at most once.
func (p *policyFlags) readBundles(std stdio) ([]load.Source, error) {
	var out []load.Source
	stdin := false
	for _, name := range p.bundles {
		if name == "-" {
			if stdin {
				return nil, errors.New("--bundle - reads standard input once; give the other bundles as files")
			}
			stdin = true
		}
		raw, err := readInput(name, std)
		if err != nil {
			return nil, err
		}
		out = append(out, load.Source{Name: displayName(name), Data: raw})
	}
	return out, nil
}

// bundleFromStdin says whether a --bundle reads standard input.
func (p *policyFlags) bundleFromStdin() bool {
	for _, b := range p.bundles {
		if b == "-" {
			return true
		}
	}
	return false
}

// sourcesOf maps the sources by name, for excerpts.
func sourcesOf(lists ...[]load.Source) diag.Sources {
	src := diag.Sources{}
	for _, l := range lists {
		for _, s := range l {
			src[s.Name] = s.Data
		}
	}
	return src
}

// forActions is the start of a command that decides the actions named on
// its command line (eval, explain): the phase, the actions checked as
// actions, then those of the --actions file (actionsFile, when not ""),
// then the policy. It returns every action, the arguments' first. prefix
// begins the messages about a malformed argument (errPrefix).
func (p *policyFlags) forActions(ctx context.Context, prefix, phase string, args []string, actionsFile string, std stdio) (config.Phase, []string, *load.Policy, error) {
	ph, err := parsePhase(phase)
	if err != nil {
		return 0, nil, nil, err
	}
	if err := checkActions(prefix, args, std); err != nil {
		return 0, nil, nil, err
	}
	actions := args
	if actionsFile != "" {
		switch {
		case actionsFile == "-" && p.bundleFromStdin():
			return 0, nil, nil, failedf(exitUsage, "--actions - and --bundle - both read standard input; give one a file")
		case actionsFile == "-" && len(p.bundles) == 0 && p.config == "-":
			return 0, nil, nil, failedf(exitUsage, "--actions - and --config - both read standard input; give one a file")
		}
		more, err := readActions(actionsFile, std)
		if err != nil {
			return 0, nil, nil, err
		}
		actions = append(append([]string(nil), args...), more...)
	}
	pol, err := p.load(ctx, std)
	return ph, actions, pol, err
}

// addActionsFlag adds --actions FILE, whose actions the command does.
func addActionsFlag(c *cobra.Command, p *string, does string) {
	c.Flags().StringVar(p, "actions", "", does+" the actions in `FILE` (- for standard input): one a line, blank lines and # comments skipped")
}

// readActions reads an --actions file: one action a line, surrounding
// white space trimmed, blank lines and lines starting with # skipped.
// Every line that is not an action is reported with its line number
// (FILE:LINE: ...), and then the command ends with exit 2, as a malformed
// action on the command line does; so does a file with no action.
func readActions(name string, std stdio) ([]string, error) {
	src, err := readInput(name, std)
	if err != nil {
		return nil, inputError(exitUsage, err)
	}
	var actions []string
	bad := false
	for i, line := range strings.Split(string(src), "\n") {
		a := strings.TrimSpace(line)
		if a == "" || strings.HasPrefix(a, "#") {
			continue
		}
		if _, err := action.ParseAction(a); err != nil {
			bad = true
			var pe *action.PatternError
			at := ""
			if errors.As(err, &pe) {
				at = fmt.Sprintf(" at byte %d", pe.Offset+1)
			}
			fmt.Fprintf(std.err, "%s:%d: %s is not an action: %s%s\n", displayName(name), i+1, safetext.Line(strconv.Quote(a)), err, at)
			if pe != nil && pe.Hint != "" {
				fmt.Fprintf(std.err, "    hint: %s\n", pe.Hint)
			}
			continue
		}
		actions = append(actions, a)
	}
	if bad {
		return nil, reported(exitUsage)
	}
	if len(actions) == 0 {
		return nil, failedf(exitUsage, "--actions %s names no action", displayName(name))
	}
	return actions, nil
}

// checkActions checks the actions named on the command line as actions:
// a malformed one is a usage error that names it and says why, in a
// message that begins with prefix.
func checkActions(prefix string, actions []string, std stdio) error {
	for _, a := range actions {
		if a == "-" {
			return failedf(exitUsage, "\"-\" is not an action; name the actions as arguments, or read them with --actions -")
		}
		if _, err := action.ParseAction(a); err != nil {
			var pe *action.PatternError
			at := ""
			if errors.As(err, &pe) {
				at = fmt.Sprintf(" at byte %d", pe.Offset+1)
			}
			fmt.Fprintf(std.err, "%s: %s is not an action: %s%s\n", prefix, safetext.Line(strconv.Quote(a)), err, at)
			if pe != nil && pe.Hint != "" {
				fmt.Fprintf(std.err, "    hint: %s\n", pe.Hint)
			}
			return reported(exitUsage)
		}
	}
	return nil
}

// bundleSources reads the source files a bundle names, for excerpts:
// only a relative path below this folder with no "..", a regular file
// reached without a link, of at most maxInput bytes. A bundle from
// elsewhere names what it likes (/home/me/.env), and an excerpt prints
// the file's lines.
func bundleSources(m eval.Meta) diag.Sources {
	src := diag.Sources{}
	for _, l := range m.Layers {
		name := l.File
		if name == "" || !filepath.IsLocal(name) || filepath.Clean(name) != name {
			continue
		}
		f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		if err == nil && fi.Mode().IsRegular() && fi.Size() <= maxInput && !linkedDir(name) {
			if b, err := io.ReadAll(f); err == nil && sameSource(l, b) {
				src[name] = b
			}
		}
		f.Close()
	}
	return src
}

// sameSource says whether b is still the text a layer was compiled from,
// as far as its rules show: each rule's span holds its pattern. A file
// edited since (or another file of the same name) gives no excerpts,
// rather than wrong ones.
func sameSource(l compile.LayerMeta, b []byte) bool {
	for _, r := range l.Rules {
		if r.Builtin {
			continue // chock's defaults are in no file
		}
		start, end := r.Span.Start.Offset, r.Span.End.Offset
		if start < 0 || end > len(b) || start > end || !bytes.Contains(b[start:end], []byte(r.Pattern)) {
			return false
		}
	}
	return true
}

// linkedDir says whether a folder on the way to name is a symlink.
func linkedDir(name string) bool {
	for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}

// parsePhase reads --phase.
func parsePhase(s string) (config.Phase, error) {
	ph, ok := config.ParsePhase(s)
	if !ok {
		return ph, inputError(exitUsage, fmt.Errorf("unknown --phase %q (want start or loop)", s))
	}
	return ph, nil
}

// addPhaseFlag adds --phase.
func addPhaseFlag(c *cobra.Command, p *string) {
	c.Flags().StringVar(p, "phase", "loop", "decide at `PHASE`: start or loop")
	c.RegisterFlagCompletionFunc("phase", cobra.FixedCompletions([]cobra.Completion{"start", "loop"}, cobra.ShellCompDirectiveNoFileComp))
}

// evalHeader names the columns of chock eval's table.
var evalHeader = []string{"ACTION", "PHASE", "DECISION", "LAYER", "RULE", "AT"}

// evalRow is a decision as a row of chock eval's table: ACTION PHASE
// DECISION LAYER RULE FILE:LINE:COL, and for a malformed action "-" in
// the last three and the error after them. The table shows every part
// that comes from the policy or a bundle (file names, patterns, org
// names, errors) on one line: a bundle from elsewhere cannot add a line.
func evalRow(d *eval.Decision) []string {
	if d.Error != "" {
		return []string{d.Action, d.Phase.String(), d.Decision.String(), "-", "-", "-", "(" + d.Error + ")"}
	}
	l := d.Decider()
	rule, pos := "default", "-"
	if l.Rule != nil {
		rule = l.Rule.Pattern
	}
	if at := l.Where(); at != nil {
		pos = at.String()
	}
	return []string{d.Action, d.Phase.String(), d.Decision.String(), l.Spelling(), rule, pos}
}

// newEvalCmd is `chock eval`.
func newEvalCmd(std stdio) *cobra.Command {
	var p evalParams
	c := &cobra.Command{
		Use:   "eval [--config FILE] [--org FILE]... [--bundle FILE]... [--opa-config FILE | --opa-url URL] [--phase start|loop] [--json] [--exit-code] [--actions FILE|-] [ACTION...]",
		Short: "decide actions",
		Long: `eval decides each ACTION, then each action of the --actions file (one a
line; blank lines and lines starting with # skipped; - reads standard
input), under the policy (--config and --org, or a compiled --bundle) and
prints a table, a header and one row per action, its columns aligned:

    ACTION  PHASE  DECISION  LAYER  RULE  AT (FILE:LINE:COL)

or with --json the decision objects, one a line. A malformed action is a
usage error (exit 2), one in the file reported as FILE:LINE; with
--exit-code, an action not allowed is exit 1.`,
		Args: cobra.ArbitraryArgs,
		RunE: paramsRunE(&p, runEval, std),
	}
	p.add(c)
	c.Flags().BoolVar(&p.asJSON, "json", false, "print each decision object as one line of JSON")
	c.Flags().BoolVar(&p.exitCode, "exit-code", false, "exit 1 if any action is not allowed")
	addActionsFlag(c, &p.actions, "also decide")
	return c
}

// decideFlags are the flags of a command that decides actions (eval,
// explain): the policy, the phase, --actions.
type decideFlags struct {
	pf             policyFlags
	phase, actions string
	// prefix begins the messages about a malformed action (errPrefix).
	prefix string
}

// add adds the policy's and the phase's flags to c (the command adds
// --actions after its own, for the order its help lists them in).
func (p *decideFlags) add(c *cobra.Command) {
	p.pf.add(c.Flags())
	p.pf.opa.add(c.Flags())
	addPhaseFlag(c, &p.phase)
}

// seen notes the prefix of the command's messages.
func (p *decideFlags) seen(cmd *cobra.Command) { p.prefix = errPrefix(cmd) }

// policy loads the policy and the actions to decide: args, and those of
// --actions.
func (p *decideFlags) policy(ctx context.Context, args []string, std stdio) (config.Phase, []string, *load.Policy, error) {
	return p.pf.forActions(ctx, p.prefix, p.phase, args, p.actions, std)
}

// evalParams are the flags of chock eval.
type evalParams struct {
	decideFlags
	asJSON, exitCode bool
}

// validate checks that chock eval has actions to decide.
func (p *evalParams) validate(args []string) error {
	if len(args) == 0 && p.actions == "" {
		return usageError()
	}
	return nil
}

// runEval is chock eval once its flags are valid: each action decided,
// and its decision printed.
func runEval(ctx context.Context, args []string, p evalParams, std stdio) error {
	defer p.pf.opa.close()
	ph, all, pol, err := p.policy(ctx, args, std)
	if err != nil {
		return err
	}
	refused := false
	var tab *table
	if !p.asJSON {
		tab = newTable(std.out, evalHeader...)
		// Written out however eval ends: the rows decided before an error too.
		defer tab.flush()
	}
	for _, a := range all {
		d, err := pol.Engine.Decide(ctx, a, ph)
		if err != nil {
			return failed(exitFailed, err)
		}
		if d.Decision != config.Allow {
			refused = true
		}
		if p.asJSON {
			writeJSON(std, d, false)
		} else {
			tab.row(evalRow(d)...)
		}
	}
	if p.exitCode && refused {
		return reported(exitFailed)
	}
	return nil
}
