package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/lint"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/safetext"
)

// readSources reads the named files for load.Read; a file that cannot be
// read is reported, and false returned (exit 2).
func readSources(names []string, io stdio) ([]load.Source, bool) {
	var out []load.Source
	for _, name := range names {
		src, err := readInput(name, io)
		if err != nil {
			fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
			return nil, false
		}
		out = append(out, load.Source{Name: displayName(name), Data: src})
	}
	return out, true
}

// loadSources reads the project configs and the orgs (org sources, or org
// bundles read as ro says). It returns false, having reported why, when a
// file cannot be read (exit 2) or an org is refused (exit 1).
func loadSources(files, orgFiles []string, ro compile.ReadOptions, io stdio) (*load.Loaded, int, bool) {
	configs, ok := readSources(files, io)
	if !ok {
		return nil, exitUsage, false
	}
	orgs, ok := readSources(orgFiles, io)
	if !ok {
		return nil, exitUsage, false
	}
	l, err := load.Read(load.Input{Configs: configs, Orgs: orgs, Read: ro})
	if err != nil {
		fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
		return nil, exitFailed, false
	}
	return l, exitOK, true
}

// refuseErrors reports lint errors on stderr and returns true when there
// are any: a policy with errors is not compiled, nor anything written.
func refuseErrors(ds diag.List, src diag.Sources, io stdio, what string) bool {
	errs := load.Errors(ds)
	if len(errs) == 0 {
		return false
	}
	diag.WriteText(io.err, errs, src)
	fmt.Fprintf(io.err, "chock %s: %d errors; nothing written (chock lint shows every finding)\n", what, len(errs))
	return true
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
	l, code, ok := loadSources(files, *orgs, ro, io)
	if !ok {
		return code
	}
	all := l.Lint()
	switch *format {
	case "text":
		err = diag.WriteText(io.out, all, l.Sources)
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

func sarifRules() []diag.Rule {
	rs := make([]diag.Rule, 0, len(lint.Catalog))
	for _, c := range lint.Catalog {
		rs = append(rs, diag.Rule{Code: c.Code, Severity: c.Severity, Summary: c.Summary})
	}
	return rs
}
