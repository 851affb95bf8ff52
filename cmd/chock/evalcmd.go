package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/spf13/pflag"
)

// policyFlags choose the policy a command decides with: sources (--config
// and --org), or a compiled --bundle.
type policyFlags struct {
	config string
	orgs   []string
	bundle string
	keys   keyFlags
}

func (p *policyFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&p.config, "config", "chock.zon", "the project's chock.zon")
	fs.StringArrayVar(&p.orgs, "org", nil, "an org ceiling: an org source (org.zon) or an org bundle; repeatable")
	fs.StringVar(&p.bundle, "bundle", "", "decide with this compiled bundle instead of --config and --org")
	p.keys.addAlg(fs)
	p.keys.addVerification(fs)
}

// load builds the policy. It returns false, having reported why, when the
// policy cannot be had; code is then the exit code.
func (p *policyFlags) load(ctx context.Context, io stdio) (*load.Policy, int, bool) {
	ro, err := p.keys.readOptions()
	if err != nil {
		fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
		return nil, exitUsage, false
	}
	if p.bundle != "" {
		if len(p.orgs) > 0 {
			fmt.Fprintln(io.err, "chock: --bundle already holds its org ceilings; give --bundle or --org, not both")
			return nil, exitUsage, false
		}
		raw, err := readInput(p.bundle, io)
		if err != nil {
			fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
			return nil, exitUsage, false
		}
		pol, err := load.FromBundle(ctx, displayName(p.bundle), raw, ro)
		if err != nil {
			fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
			return nil, exitFailed, false
		}
		pol.Sources = bundleSources(pol.Engine.Meta())
		return pol, exitOK, true
	}
	configs, ok := readSources([]string{p.config}, io)
	if !ok {
		return nil, exitUsage, false
	}
	orgs, ok := readSources(p.orgs, io)
	if !ok {
		return nil, exitUsage, false
	}
	pol, ds, err := load.FromSources(ctx, load.Input{Configs: configs, Orgs: orgs, Read: ro})
	if errors.Is(err, load.ErrLint) || errors.Is(err, load.ErrInvalid) {
		refuseErrors(ds, sourcesOf(configs, orgs), io, "policy")
		return nil, exitFailed, false
	}
	if err != nil {
		fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
		return nil, exitFailed, false
	}
	return pol, exitOK, true
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

// checkActions checks the actions named on the command line as actions:
// a malformed one is a usage error that names it and says why.
func checkActions(name string, actions []string, io stdio) bool {
	for _, a := range actions {
		if a == "-" {
			fmt.Fprintf(io.err, "chock %s: \"-\" is not an action; name the actions as arguments\n", name)
			return false
		}
		if _, err := action.ParseAction(a); err != nil {
			var pe *action.PatternError
			at := ""
			if errors.As(err, &pe) {
				at = fmt.Sprintf(" at byte %d", pe.Offset+1)
			}
			fmt.Fprintf(io.err, "chock %s: %s is not an action: %s%s\n", name, safetext.Line(strconv.Quote(a)), err, at)
			if pe != nil && pe.Hint != "" {
				fmt.Fprintf(io.err, "    hint: %s\n", pe.Hint)
			}
			return false
		}
	}
	return true
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
			if b, err := io.ReadAll(f); err == nil {
				src[name] = b
			}
		}
		f.Close()
	}
	return src
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

func parsePhase(s string, io stdio) (config.Phase, bool) {
	ph, ok := config.ParsePhase(s)
	if !ok {
		fmt.Fprintf(io.err, "chock: unknown --phase %q (want start or loop)\n", s)
	}
	return ph, ok
}

// evalLine is the one-line form of a decision:
// ACTION PHASE DECISION  LAYER RULE FILE:LINE:COL.
func evalLine(d *eval.Decision) string {
	if d.Error != "" {
		return fmt.Sprintf("%s %s %s  - - -  (%s)", d.Action, d.Phase, d.Decision, d.Error)
	}
	l := d.Decider()
	rule, pos := "default", "-"
	if l.Rule != nil {
		rule = l.Rule.Pattern
	}
	if at := l.Where(); at != nil {
		pos = at.String()
	}
	return fmt.Sprintf("%s %s %s  %s %s %s", d.Action, d.Phase, d.Decision, l.Spelling(), rule, pos)
}

// runEval implements `chock eval`.
func runEval(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("eval", io)
	var pf policyFlags
	pf.add(fs)
	phase := fs.String("phase", "loop", "the phase to decide at: start or loop")
	asJSON := fs.Bool("json", false, "print each decision object as one line of JSON")
	exitCode := fs.Bool("exit-code", false, "exit 1 if any action is not allowed")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: chock eval [--config FILE] [--org FILE]... [--bundle FILE] [--phase start|loop] [--json] [--exit-code] ACTION...")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	ph, ok := parsePhase(*phase, io)
	if !ok || !checkActions("eval", fs.Args(), io) {
		return exitUsage
	}
	p, code, ok := pf.load(ctx, io)
	if !ok {
		return code
	}
	refused := false
	for _, a := range fs.Args() {
		d, err := p.Engine.Decide(ctx, a, ph)
		if err != nil {
			fmt.Fprintf(io.err, "chock eval: %s\n", oneLine(err.Error()))
			return exitFailed
		}
		if d.Decision != config.Allow {
			refused = true
		}
		if *asJSON {
			writeJSON(io, d, false)
		} else {
			fmt.Fprintln(io.out, evalLine(d))
		}
	}
	if *exitCode && refused {
		return exitFailed
	}
	return exitOK
}

// runExplain implements `chock explain ACTION`.
func runExplain(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("explain", io)
	var pf policyFlags
	pf.add(fs)
	phase := fs.String("phase", "loop", "the phase to decide at: start or loop")
	asJSON := fs.Bool("json", false, "print the explanation as JSON")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: chock explain [--config FILE] [--org FILE]... [--bundle FILE] [--phase start|loop] [--json] ACTION")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	ph, ok := parsePhase(*phase, io)
	if !ok || !checkActions("explain", fs.Args(), io) {
		return exitUsage
	}
	p, code, ok := pf.load(ctx, io)
	if !ok {
		return code
	}
	d, err := p.Engine.Decide(ctx, fs.Arg(0), ph)
	if err != nil {
		fmt.Fprintf(io.err, "chock explain: %s\n", oneLine(err.Error()))
		return exitFailed
	}
	x := eval.Explain(d, p.Config)
	if *asJSON {
		writeJSON(io, x, true)
		return exitOK
	}
	x.WriteText(io.out, p.Sources)
	return exitOK
}
