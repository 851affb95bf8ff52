package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/eval/load"
	"github.com/spf13/cobra"
)

// testFormats are chock test's --format values, the default first.
var testFormats = []string{"text", "json", "junit"}

// newTestCmd is `chock test [--org FILE]... [--format text|json|junit]
// [--coverage] [--threshold PCT] [--run REGEX] [-v] [CONFIG]`.
func newTestCmd(std stdio) *cobra.Command {
	var p testParams
	c := &cobra.Command{
		Use:   "test [--org FILE]... [--format text|json|junit] [--coverage] [--threshold PCT] [--run REGEX] [-v] [--config FILE | CONFIG]",
		Short: "run the .expect policy tests",
		Long: `test runs the project's .expect entries (a decision, and optionally
.layer, .rule and .phase) under the policy of chock.zon (--config, or the
argument) and its --org ceilings, and ends with N passed, N failed; exit 1
when any failed. --run REGEX runs only the expectations whose action it
matches. -v lists the passing expectations too.

Coverage is as opa test counts it, by rules: a rule is exercised when it
decides its layer for some expectation's action. --coverage prints the
share of rules exercised, in all and in each layer, and lists the rules no
expectation exercised; --threshold PCT (0 to 100) exits 1 when the share is
below PCT.

--format json prints one object: each expectation (action, phase, want,
got, the deciding rule, span, pass), the counts and the coverage. junit
prints JUnit XML as the Ant schema has it (testdata/junit/junit.xsd), one
testcase per expectation, each failure with the explanation chock explain
gives; CI systems read it as test results.`,
		Args: maxArgs(1),
		RunE: paramsRunE(&p, runTest, std),
	}
	fs := c.Flags()
	addConfigFlag(fs, &p.pf.config)
	p.pf.addOrgs(fs)
	fs.StringVar(&p.format, "format", testFormats[0], "the output `FORMAT`: text, json or junit")
	fs.BoolVar(&p.coverage, "coverage", false, "print the share of rules exercised and list every rule that no expectation exercised")
	fs.StringVar(&p.threshold, "threshold", "", "exit 1 when less than `PCT` percent of the rules are exercised (0 to 100)")
	fs.StringVar(&p.runPattern, "run", "", "run only the expectations whose action matches `REGEX`")
	fs.BoolVarP(&p.verbose, "verbose", "v", false, "print passing expectations too")
	p.pf.keys.addAlg(fs)
	p.pf.keys.addVerification(fs)
	c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(testFormats, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// testParams are the flags of chock test.
type testParams struct {
	pf                policyFlags
	coverage, verbose bool
	format, threshold string
	runPattern        string
	// configSet and thresholdSet say whether --config and --threshold
	// were given.
	configSet, thresholdSet bool
	// minimum and only are --threshold and --run as validate read them.
	minimum float64
	only    *regexp.Regexp
}

// seen notes whether --config and --threshold were given.
func (p *testParams) seen(cmd *cobra.Command) {
	p.configSet, p.thresholdSet = cmd.Flags().Changed("config"), cmd.Flags().Changed("threshold")
}

// validate checks the flags of chock test, and reads --threshold and
// --run.
func (p *testParams) validate([]string) error {
	if !slices.Contains(testFormats, p.format) {
		return failedf(exitUsage, "unknown --format %q (want text, json or junit)", p.format)
	}
	if p.thresholdSet {
		v, err := parseThreshold(p.threshold)
		if err != nil {
			return failed(exitUsage, err)
		}
		p.minimum = v
	}
	if p.runPattern != "" {
		re, err := regexp.Compile(p.runPattern)
		if err != nil {
			return failedf(exitUsage, "--run %s: %v", strconv.Quote(p.runPattern), err)
		}
		p.only = re
	}
	return nil
}

// runTest is chock test once its flags are valid: the expectations run,
// and their report written.
func runTest(ctx context.Context, args []string, p testParams, std stdio) error {
	files, err := configArgs(p.configSet, p.pf.config, args)
	if err != nil {
		return err
	}
	p.pf.config = files[0]
	pol, err := p.pf.load(ctx, std)
	if err != nil {
		return err
	}
	cfg := *pol.Config
	if p.only != nil {
		cfg.Expect = nil
		for _, x := range pol.Config.Expect {
			if p.only.MatchString(x.Action.Value) {
				cfg.Expect = append(cfg.Expect, x)
			}
		}
		if len(cfg.Expect) == 0 {
			fmt.Fprintf(std.err, "chock test: no expectation's action matches --run %s\n", strconv.Quote(p.runPattern))
		}
	}
	start := time.Now()
	results, unused, err := eval.RunExpectations(ctx, pol.Engine, &cfg)
	if err != nil {
		return failed(exitFailed, err)
	}
	elapsed := time.Since(start)
	cov := eval.CoverageOf(pol.Engine.Meta(), unused)
	rep := testReport{results: results, coverage: cov, policy: pol, elapsed: elapsed, started: start}
	switch p.format {
	case "json":
		err = writeJSON(std, rep.json(), true)
	case "junit":
		err = rep.writeJUnit(std)
	default:
		rep.writeText(std, p.verbose, p.coverage || p.thresholdSet, p.coverage)
	}
	if err != nil {
		return failed(exitFailed, err)
	}
	code := exitOK
	if rep.failed() > 0 {
		code = exitFailed
	}
	if p.thresholdSet && cov.Below(p.minimum) {
		fmt.Fprintf(std.err, "chock test: coverage %s is below --threshold %s%%\n", pct(cov.Percent()), strconv.FormatFloat(p.minimum, 'f', -1, 64))
		code = exitFailed
	}
	return reported(code)
}

// parseThreshold reads --threshold: a percentage from 0 to 100, with or
// without a % sign.
func parseThreshold(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || v < 0 || v > 100 || v != v {
		return 0, fmt.Errorf("--threshold %s: want a percentage from 0 to 100", strconv.Quote(s))
	}
	return v, nil
}

// pct shows a percentage with one decimal: 66.7%.
func pct(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "%" }

// testReport is what one chock test run found.
type testReport struct {
	results  []eval.ExpectResult
	coverage eval.Coverage
	policy   *load.Policy
	started  time.Time
	elapsed  time.Duration
}

func (r *testReport) failed() int {
	n := 0
	for _, x := range r.results {
		if !x.Passed() {
			n++
		}
	}
	return n
}

// writeText is the default output: a line per failure (and with verbose
// per pass), the coverage when asked, then N passed, N failed.
func (r *testReport) writeText(std stdio, verbose, showCoverage, listUncovered bool) {
	for _, res := range r.results {
		x := res.Expect
		where := r.policy.Respell(x.Span).String()
		if res.Passed() {
			if verbose {
				fmt.Fprintf(std.out, "%s: ok %s at %s: %s\n", where, x.Action.Value, x.Phase.Value, eval.Describe(res.Got))
			}
			continue
		}
		fmt.Fprintf(std.out, "%s: FAIL %s at %s: %s\n    decided: %s\n", where, x.Action.Value, x.Phase.Value, res.Failure, eval.Describe(res.Got))
	}
	if listUncovered {
		for _, l := range r.coverage.Layers {
			for _, rule := range l.NotCovered {
				fmt.Fprintf(std.out, "%s: not covered: %s rule %q (%s)\n", r.policy.Respell(rule.Span), l.Layer, rule.Pattern, rule.Decision)
			}
		}
	}
	if showCoverage {
		fmt.Fprintf(std.out, "coverage: %s\n", coverageLine(r.coverage))
	}
	fmt.Fprintf(std.out, "%d passed, %d failed\n", len(r.results)-r.failed(), r.failed())
}

// coverageLine is the coverage in a line: 25.0% of rules (3 of 12):
// project 22.2% (2 of 9), org:acme 33.3% (1 of 3).
func coverageLine(c eval.Coverage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s of rules (%d of %d)", pct(c.Percent()), c.Covered, c.Rules)
	for i, l := range c.Layers {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%s %s (%d of %d)", sep, l.Layer, pct(l.Percent()), l.Covered, l.Rules)
	}
	return b.String()
}

// The JSON form of a run (--format json).
type (
	testJSON struct {
		Expectations []expectJSON `json:"expectations"`
		Passed       int          `json:"passed"`
		Failed       int          `json:"failed"`
		Coverage     coverageJSON `json:"coverage"`
	}
	expectJSON struct {
		Action string       `json:"action"`
		Phase  config.Phase `json:"phase"`
		Want   wantJSON     `json:"want"`
		Got    gotJSON      `json:"got"`
		// Rule is the deciding rule, null when a layer's default decided.
		Rule    *eval.Rule `json:"rule"`
		Span    diag.Span  `json:"span"`
		Pass    bool       `json:"pass"`
		Failure string     `json:"failure,omitempty"`
	}
	wantJSON struct {
		Decision config.Decision `json:"decision"`
		Layer    string          `json:"layer,omitempty"`
		Rule     string          `json:"rule,omitempty"`
	}
	gotJSON struct {
		Decision config.Decision `json:"decision"`
		// Layer and Rule are the deciding layer's spelling and its rule's
		// pattern, or "default".
		Layer string `json:"layer"`
		Rule  string `json:"rule"`
		Error string `json:"error,omitempty"`
	}
	coverageJSON struct {
		Percent float64             `json:"percent"`
		Covered int                 `json:"covered"`
		Rules   int                 `json:"rules"`
		Layers  []layerCoverageJSON `json:"layers"`
	}
	layerCoverageJSON struct {
		Layer      string          `json:"layer"`
		File       string          `json:"file"`
		Percent    float64         `json:"percent"`
		Covered    int             `json:"covered"`
		Rules      int             `json:"rules"`
		NotCovered []eval.RuleMeta `json:"not_covered"`
	}
)

// round2 keeps two decimals of a percentage.
func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

func (r *testReport) json() testJSON {
	out := testJSON{Expectations: []expectJSON{}, Passed: len(r.results) - r.failed(), Failed: r.failed()}
	for _, res := range r.results {
		x, d := res.Expect, res.Got
		e := expectJSON{
			Action:  x.Action.Value,
			Phase:   x.Phase.Value,
			Want:    wantJSON{Decision: x.Decision.Value, Layer: x.Layer.Value, Rule: x.Rule.Value},
			Got:     gotJSON{Decision: d.Decision, Error: d.Error},
			Span:    r.policy.Respell(x.Span),
			Pass:    res.Passed(),
			Failure: res.Failure,
		}
		if l := d.Decider(); l != nil {
			e.Got.Layer, e.Got.Rule = l.Spelling(), "default"
			if l.Rule != nil {
				e.Rule, e.Got.Rule = l.Rule, l.Rule.Pattern
			}
		}
		out.Expectations = append(out.Expectations, e)
	}
	c := r.coverage
	out.Coverage = coverageJSON{Percent: round2(c.Percent()), Covered: c.Covered, Rules: c.Rules, Layers: []layerCoverageJSON{}}
	for _, l := range c.Layers {
		out.Coverage.Layers = append(out.Coverage.Layers, layerCoverageJSON{
			Layer: l.Layer, File: l.File, Percent: round2(l.Percent()), Covered: l.Covered, Rules: l.Rules, NotCovered: l.NotCovered,
		})
	}
	return out
}
