package main

import (
	"fmt"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/spf13/cobra"
)

// newTestCmd is `chock test [--org FILE]... [--coverage] [CONFIG]`.
func newTestCmd(io stdio) *cobra.Command {
	var (
		pf                policyFlags
		coverage, verbose bool
	)
	c := &cobra.Command{
		Use:   "test [--org FILE]... [--coverage] [-v] [--config FILE | CONFIG]",
		Short: "run the .expect policy tests",
		Long: `test runs the project's .expect entries (a decision, and optionally
.layer, .rule and .phase) under the policy of chock.zon (--config, or the
argument) and its --org ceilings, and ends with N passed, N failed; exit 1
when any failed. --coverage lists the rules no expectation exercised.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			files, err := configFiles(cmd, pf.config, args)
			if err != nil {
				return err
			}
			pf.config = files[0]
			ctx := cmd.Context()
			p, err := pf.load(ctx, io)
			if err != nil {
				return err
			}
			results, unused, err := eval.RunExpectations(ctx, p.Engine, p.Config)
			if err != nil {
				return failed(exitFailed, err)
			}
			passed, failures := 0, 0
			for _, r := range results {
				x := r.Expect
				where := x.Span.String()
				if r.Passed() {
					passed++
					if verbose {
						fmt.Fprintf(io.out, "%s: ok %s at %s: %s\n", where, x.Action.Value, x.Phase.Value, eval.Describe(r.Got))
					}
					continue
				}
				failures++
				fmt.Fprintf(io.out, "%s: FAIL %s at %s: %s\n    decided: %s\n", where, x.Action.Value, x.Phase.Value, r.Failure, eval.Describe(r.Got))
			}
			if coverage {
				for _, u := range unused {
					who := config.LayerSpelling(u.Layer, u.Name)
					fmt.Fprintf(io.out, "%s: not covered: %s rule %q (%s)\n", u.Rule.Span, who, u.Rule.Pattern, u.Rule.Decision)
				}
			}
			fmt.Fprintf(io.out, "%d passed, %d failed\n", passed, failures)
			if failures > 0 {
				return reported(exitFailed)
			}
			return nil
		},
	}
	fs := c.Flags()
	addConfigFlag(fs, &pf.config)
	pf.addOrgs(fs)
	fs.BoolVar(&coverage, "coverage", false, "list every rule that no expectation exercised")
	fs.BoolVarP(&verbose, "verbose", "v", false, "print passing expectations too")
	pf.keys.addAlg(fs)
	pf.keys.addVerification(fs)
	return c
}
