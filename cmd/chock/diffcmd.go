package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/diff"
	"github.com/chockhq/chock/compile/region"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval/load"
	"github.com/spf13/cobra"
)

// diffParams are the flags of chock diff.
type diffParams struct {
	orgs, orgsOld, orgsNew []string
	base, format, failOn   string
	maxRegions             int
	keys                   keyFlags
	// oldFile and newFile are the configs of the two sides, as validate
	// read them from the arguments and --base.
	oldFile, newFile string
}

// newDiffCmd is `chock diff [--org FILE]... OLD NEW`, or `--base REV [NEW]`.
func newDiffCmd(std stdio) *cobra.Command {
	var p diffParams
	c := &cobra.Command{
		Use:   "diff [--org FILE]... [--org-old FILE]... [--org-new FILE]... [--format text|json|markdown] [--fail-on widen|change] [--max-regions N] {OLD NEW | --base REV [NEW]}",
		Short: "the exact change in what a policy grants",
		Long: `diff compares two policies, OLD and NEW (each a chock.zon under its org
ceilings), and reports exactly the regions of the action space where the
effective decision changed, at loop or at start: each region is a list of
segments, a literal or any one segment but some literals (as in
` + "`exec.path.<not curl,gh>`" + `), and whether further segments follow (.*);
regions with the same change that together make up a coarser one are
shown as that one, the regions it leaves out named after it
(exec.path.* except exec.path.gh); each comes with a witness action and
the rule that decides on each side.
Then the secrets each program region or server is newly offered or no
longer offered, and the servers added, removed or changed. Two policies
that decide alike report nothing.

--org FILE is a ceiling of both sides, --org-old and --org-new of one.
--base REV reads OLD, and every --org and --org-old, as git has them at
REV (git show REV:PATH); NEW (default chock.zon) and --org-new come from
the work tree, so CI runs it on a pull request: chock diff --base
origin/main --fail-on widen chock.zon.

--format text (default) folds the phases that changed alike; json is
{"changes":[...],"secrets":[...],"servers":[...],"regions":N}; markdown
is a table for a pull-request comment, widened first. WIDENED means less
restrictive (deny < ask < allow), a secret newly offered, or a server added
or changed. --fail-on widen exits 1 when anything widened, --fail-on change
when anything changed. The walk covers only what the changed rules match
(everything when a default changed), and stops past --max-regions regions
(default 100,000, or 8 a rule for larger policies), exit 1.`,
		Args: cobra.ArbitraryArgs,
		RunE: paramsRunE(&p, runDiff, std),
	}
	fs := c.Flags()
	fs.StringArrayVar(&p.orgs, "org", nil, "add the org ceiling in `FILE` to both sides: an org source (org.zon) or an org bundle; repeatable")
	fs.StringArrayVar(&p.orgsOld, "org-old", nil, "add the org ceiling in `FILE` to the old side only; repeatable")
	fs.StringArrayVar(&p.orgsNew, "org-new", nil, "add the org ceiling in `FILE` to the new side only; repeatable")
	fs.StringVar(&p.base, "base", "", "read the old side from git at `REV` (git show REV:PATH), the new from the work tree")
	fs.StringVar(&p.format, "format", "text", "the output `FORMAT`: text, json or markdown")
	fs.StringVar(&p.failOn, "fail-on", "", "exit 1 when anything widened (`WHAT` = widen) or changed at all (change)")
	fs.IntVar(&p.maxRegions, "max-regions", 0, "stop past `N` regions (0: 100,000, or 8 a rule for larger policies)")
	p.keys.addAlg(fs)
	p.keys.addVerification(fs)
	c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]cobra.Completion{"text", "json", "markdown"}, cobra.ShellCompDirectiveNoFileComp))
	c.RegisterFlagCompletionFunc("fail-on", cobra.FixedCompletions([]cobra.Completion{"widen", "change"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// validate checks the flags and arguments of chock diff, and reads which
// configs the two sides are.
func (p *diffParams) validate(args []string) error {
	switch p.format {
	case "text", "json", "markdown":
	default:
		return failedf(exitUsage, "unknown --format %q (want text, json or markdown)", p.format)
	}
	switch p.failOn {
	case "", "widen", "change":
	default:
		return failedf(exitUsage, "unknown --fail-on %q (want widen or change)", p.failOn)
	}
	if p.maxRegions < 0 {
		return failedf(exitUsage, "--max-regions %d: want a number of regions, or 0 for the default", p.maxRegions)
	}
	switch {
	case p.base == "" && len(args) == 2:
		p.oldFile, p.newFile = args[0], args[1]
	case p.base != "" && len(args) <= 1:
		p.newFile = defaultConfig
		if len(args) == 1 {
			p.newFile = args[0]
		}
		p.oldFile = p.newFile
	default:
		return usageError()
	}
	return nil
}

// runDiff is chock diff once its flags are valid: both sides read and
// decoded, and the report written.
func runDiff(ctx context.Context, _ []string, p diffParams, std stdio) error {
	ro, err := p.keys.readOptions()
	if err != nil {
		return failed(exitUsage, err)
	}
	// The old side: from git at --base, or as named.
	read := func(name string) ([]byte, string, error) {
		src, err := readInput(name, std)
		if err != nil {
			return nil, "", inputError(exitUsage, err)
		}
		return src, displayName(name), nil
	}
	readOld := read
	if p.base != "" {
		readOld = func(name string) ([]byte, string, error) { return gitShow(ctx, p.base, name) }
	}
	oldSide, err := diffSide(p.oldFile, append(append([]string(nil), p.orgs...), p.orgsOld...), readOld, ro, std)
	if err != nil {
		return err
	}
	newSide, err := diffSide(p.newFile, append(append([]string(nil), p.orgs...), p.orgsNew...), read, ro, std)
	if err != nil {
		return err
	}
	rep, err := diff.Diff(oldSide, newSide, diff.Options{Max: p.maxRegions})
	var le *region.LimitError
	if errors.As(err, &le) {
		return failedf(exitFailed, "%v; nothing is reported (--max-regions N raises the cap)", err)
	}
	if err != nil {
		return failed(exitFailed, err)
	}
	switch p.format {
	case "json":
		err = writeJSON(std, rep, true)
	case "markdown":
		err = rep.WriteMarkdown(std.out)
	default:
		err = rep.WriteText(std.out)
	}
	if err != nil {
		return failed(exitFailed, err)
	}
	switch {
	case p.failOn == "widen" && rep.Widened():
		return failedf(exitFailed, "the change widens what the policy grants (--fail-on widen)")
	case p.failOn == "change" && !rep.Empty():
		return failedf(exitFailed, "the policy changed (--fail-on change)")
	}
	return nil
}

// diffSide reads one side of a diff, each file through read, and decodes
// it; a side that does not decode is reported on stderr (exit 1).
func diffSide(config string, orgs []string, read func(string) ([]byte, string, error), ro compile.ReadOptions, std stdio) (diff.Side, error) {
	source := func(name string) (load.Source, error) {
		data, shown, err := read(name)
		return load.Source{Name: shown, Data: data}, err
	}
	cs, err := source(config)
	if err != nil {
		return diff.Side{}, err
	}
	in := load.Input{Configs: []load.Source{cs}, Read: ro}
	for _, o := range orgs {
		s, err := source(o)
		if err != nil {
			return diff.Side{}, err
		}
		in.Orgs = append(in.Orgs, s)
	}
	l, err := load.Read(in)
	if err != nil {
		return diff.Side{}, inputError(exitFailed, err)
	}
	if errs := load.Errors(l.Diags); len(errs) > 0 || len(l.Configs) == 0 {
		diag.WriteText(std.err, errs, l.Sources)
		return diff.Side{}, failedf(exitFailed, "%s does not decode (%s); nothing compared", cs.Name, diag.Plural(len(errs), "error"))
	}
	return diff.Side{Config: l.Configs[0], Orgs: l.Orgs}, nil
}

// gitShow reads path as git has it at rev (git show REV:./PATH, the path
// taken from the current directory as it is), named REV:PATH in
// positions. git runs with its arguments as given, through no shell; a
// rev that starts with '-' would read as an option and is refused, and
// the path follows "./" (or "../"), so it never starts an argument.
func gitShow(ctx context.Context, rev, path string) ([]byte, string, error) {
	shown := displayName(rev + ":" + path)
	switch {
	case rev == "" || strings.HasPrefix(rev, "-"):
		return nil, "", failedf(exitUsage, "--base %q: a revision cannot start with '-'", rev)
	case strings.ContainsAny(rev, ":\x00"):
		return nil, "", failedf(exitUsage, "--base %q: a revision for --base holds no ':' (the path is the file's)", rev)
	case path == "-":
		return nil, "", failedf(exitUsage, "--base reads the old side from git; give the file's path, not -")
	}
	rel := path
	if filepath.IsAbs(path) {
		wd, err := os.Getwd()
		if err == nil {
			rel, err = filepath.Rel(wd, path)
		}
		if err != nil {
			return nil, "", inputError(exitUsage, fmt.Errorf("%s: %w", displayName(path), err))
		}
	}
	rel = filepath.ToSlash(filepath.Clean(rel))
	if !strings.HasPrefix(rel, "../") {
		rel = "./" + rel
	}
	var out limitedBuffer
	var errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", "show", "--no-textconv", "--end-of-options", rev+":"+rel)
	cmd.Stdout, cmd.Stderr = &out, &limitWriter{w: &errOut, n: 4 << 10}
	if err := cmd.Run(); err != nil {
		why := strings.TrimSpace(errOut.String())
		if why == "" {
			why = err.Error()
		}
		if out.over {
			why = fmt.Sprintf("larger than %d MiB", maxInput>>20)
		}
		return nil, "", inputError(exitUsage, fmt.Errorf("git show %s: %s", shown, displayName(why)))
	}
	return out.Bytes(), shown, nil
}

// limitedBuffer holds at most maxInput bytes; more is an error, which
// ends the copy from git.
type limitedBuffer struct {
	bytes.Buffer
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxInput {
		b.over = true
		return 0, fmt.Errorf("larger than %d MiB", maxInput>>20)
	}
	return b.Buffer.Write(p)
}

// limitWriter keeps the first n bytes written and drops the rest.
type limitWriter struct {
	w *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
