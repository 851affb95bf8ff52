package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/lint"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/internal/safetext"
)

// loaded is what readSources produced: the project configs and org
// sources that decoded, every diagnostic met, and the source text.
type loaded struct {
	configs []*config.Config
	orgs    []*config.Org
	diags   diag.List
	sources diag.Sources
}

// load reads the project configs and the orgs: org sources (org.zon) or
// org bundles compiled by chock compile --org-only, read as ro says. It returns false, having reported why, when a file
// cannot be read or an org bundle is refused (exit 2 or 1 as code says).
func load(files, orgFiles []string, ro compile.ReadOptions, io stdio) (*loaded, int, bool) {
	l := &loaded{sources: diag.Sources{}}
	for _, name := range orgFiles {
		src, err := readInput(name, io)
		if err != nil {
			fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
			return nil, exitUsage, false
		}
		shown := displayName(name)
		if isGzip(src) {
			o, err := compile.ReadOrgBundle(shown, bytes.NewReader(src), ro)
			if err != nil {
				fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
				return nil, exitFailed, false
			}
			l.orgs = append(l.orgs, o)
			continue
		}
		if ro.Verify != nil {
			fmt.Fprintf(io.err, "chock: %s is an org source, which carries no signature; --verification-key requires signed org bundles (chock compile --org-only)\n", shown)
			return nil, exitFailed, false
		}
		l.sources[shown] = src
		o, ds := config.LoadOrg(shown, src)
		l.diags = append(l.diags, ds...)
		if o != nil {
			l.orgs = append(l.orgs, o)
		}
	}
	for _, name := range files {
		src, err := readInput(name, io)
		if err != nil {
			fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
			return nil, exitUsage, false
		}
		shown := displayName(name)
		l.sources[shown] = src
		c, ds := config.Load(shown, src)
		l.diags = append(l.diags, ds...)
		if c != nil {
			l.configs = append(l.configs, c)
		}
	}
	return l, exitOK, true
}

// refuseErrors reports the lint errors of what was loaded on stderr and
// returns true when there are any: a policy with errors is not compiled.
func (l *loaded) refuseErrors(io stdio, what string) bool {
	ds := l.lintAll()
	if !ds.HasErrors() {
		return false
	}
	var errs diag.List
	for _, d := range ds {
		if d.Severity == diag.Error {
			errs = append(errs, d)
		}
	}
	diag.WriteText(io.err, errs, l.sources)
	fmt.Fprintf(io.err, "chock %s: %d errors; nothing written (chock lint shows every finding)\n", what, len(errs))
	return true
}

// isGzip reports whether b starts with the gzip magic number.
func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// lintAll runs the checks on every loaded config (or on the orgs alone).
func (l *loaded) lintAll() diag.List {
	all := l.diags
	if len(l.configs) == 0 && len(l.orgs) > 0 {
		all = append(all, lint.Run(lint.Input{Orgs: l.orgs})...)
	}
	for _, c := range l.configs {
		all = append(all, lint.Run(lint.Input{Config: c, Orgs: l.orgs})...)
	}
	all = dedupe(all)
	all.Sort()
	return all
}

// runLint implements `chock lint [--org FILE]... [--format F] [--strict] [FILE...]`.
func runLint(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("lint", io)
	orgs := fs.StringArray("org", nil, "an org bundle source (org.zon) whose ceiling applies; repeatable")
	format := fs.String("format", "text", "output format: text, json, sarif or github")
	strict := fs.Bool("strict", false, "exit 1 on warnings too")
	var keys keyFlags
	keys.addAlg(fs)
	keys.addVerification(fs)
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: chock lint [--org FILE]... [--format text|json|sarif|github] [--strict] [FILE...]")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	switch *format {
	case "text", "json", "sarif", "github":
	default:
		fmt.Fprintf(io.err, "chock lint: unknown --format %q (want text, json, sarif or github)\n", *format)
		return exitUsage
	}
	files := fs.Args()
	if len(files) == 0 {
		files = []string{"chock.zon"}
	}
	ro, err := keys.readOptions()
	if err != nil {
		fmt.Fprintf(io.err, "chock lint: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	l, code, ok := load(files, *orgs, ro, io)
	if !ok {
		return code
	}
	all := l.lintAll()
	switch *format {
	case "text":
		err = diag.WriteText(io.out, all, l.sources)
		if len(all) > 0 {
			fmt.Fprintf(io.out, "%d errors, %d warnings, %d notes\n", all.Count(diag.Error), all.Count(diag.Warning), all.Count(diag.Info))
		}
	case "json":
		jw := safetext.NewJSONWriter(io.raw)
		err = errors.Join(diag.WriteJSON(jw, all), jw.Flush())
	case "sarif":
		jw := safetext.NewJSONWriter(io.raw)
		err = errors.Join(diag.WriteSARIF(jw, all, diag.Tool{Name: "chock", InformationURI: "https://github.com/chockhq/chock/blob/main/docs/lint.md"}, sarifRules()), jw.Flush())
	case "github":
		err = diag.WriteGitHub(io.out, all)
	}
	if err != nil {
		fmt.Fprintf(io.err, "chock lint: %v\n", err)
		return exitFailed
	}
	if all.HasErrors() || (*strict && all.Count(diag.Warning) > 0) {
		return exitFailed
	}
	return exitOK
}

// dedupe drops diagnostics reported twice (an org source linted with
// every project file).
func dedupe(l diag.List) diag.List {
	type key struct {
		file          string
		offset        int
		code, message string
	}
	seen := make(map[key]bool, len(l))
	out := l[:0:0]
	for _, d := range l {
		k := key{d.Span.File, d.Span.Start.Offset, d.Code, d.Message}
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}

func sarifRules() []diag.Rule {
	rs := make([]diag.Rule, 0, len(lint.Catalog))
	for _, c := range lint.Catalog {
		rs = append(rs, diag.Rule{Code: c.Code, Severity: c.Severity, Summary: c.Summary})
	}
	return rs
}
