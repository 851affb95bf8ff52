package main

import (
	"context"
	"fmt"

	"github.com/chockhq/chock/eval"
)

// runTest implements `chock test [--org FILE]... [--coverage] [CONFIG]`.
func runTest(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("test", io)
	orgs := fs.StringArray("org", nil, "an org ceiling: an org source (org.zon) or an org bundle; repeatable")
	coverage := fs.Bool("coverage", false, "list every rule that no expectation exercised")
	verbose := fs.BoolP("verbose", "v", false, "print passing expectations too")
	var keys keyFlags
	keys.addAlg(fs)
	keys.addVerification(fs)
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: chock test [--org FILE]... [--coverage] [CONFIG]")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return exitUsage
	}
	pf := policyFlags{config: "chock.zon", orgs: *orgs, keys: keys}
	if fs.NArg() == 1 {
		pf.config = fs.Arg(0)
	}
	p, code, ok := pf.load(ctx, io)
	if !ok {
		return code
	}
	results, unused, err := eval.RunExpectations(ctx, p.Engine, p.Config)
	if err != nil {
		fmt.Fprintf(io.err, "chock test: %s\n", oneLine(err.Error()))
		return exitFailed
	}
	passed, failed := 0, 0
	for _, r := range results {
		x := r.Expect
		where := x.Span.String()
		if r.Passed() {
			passed++
			if *verbose {
				fmt.Fprintf(io.out, "%s: ok %s at %s: %s\n", where, x.Action.Value, x.Phase.Value, eval.Describe(r.Got))
			}
			continue
		}
		failed++
		fmt.Fprintf(io.out, "%s: FAIL %s at %s: %s\n    decided: %s\n", where, x.Action.Value, x.Phase.Value, r.Failure, eval.Describe(r.Got))
	}
	if *coverage {
		for _, u := range unused {
			who := "project"
			if u.Layer == "org" {
				who = fmt.Sprintf("org %q", u.Name)
			}
			fmt.Fprintf(io.out, "%s: not covered: %s rule %q (%s)\n", u.Rule.Span, who, u.Rule.Pattern, u.Rule.Decision)
		}
	}
	fmt.Fprintf(io.out, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return exitFailed
	}
	return exitOK
}
