package main

import (
	"fmt"

	"github.com/chockhq/chock/eval"
	"github.com/spf13/cobra"
)

// newExplainCmd is `chock explain ACTION`, or `--actions FILE`.
func newExplainCmd(std stdio) *cobra.Command {
	var (
		pf             policyFlags
		phase, actions string
		asJSON, short  bool
	)
	c := &cobra.Command{
		Use:   "explain [--config FILE] [--org FILE]... [--bundle FILE]... [--opa-config FILE | --opa-url URL] [--phase start|loop] [--json | --short] {ACTION [ARG]... | --actions FILE|-}",
		Short: "why an action is decided as it is, and what would permit it",
		Long: `explain decides ACTION as eval does and says why: the resolution rule,
each layer's deciding rule with its .why and a source excerpt, the org that
capped the result, the start note, and a hint: a concrete edit the project
can make, or the org file and rule that forbid it. --json gives the same as
data.

--actions FILE explains each action of FILE in turn (one a line; blank
lines and lines starting with # skipped; - reads standard input), the
explanations separated by a blank line, or with --json one JSON object
after another. The resolution rule is said once, before the first.

ARG... after an exec.path action are the call's arguments (its argv after
the program), which the rules with .args decide: chock explain
exec.path.git -- -C sub push. Without them, no rule with .args matches.

--short writes each explanation as its first line, one line per layer (no
source excerpt), the org that capped it and the hint: no resolution rule.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if (actions == "" && len(args) < 1) || (actions != "" && len(args) != 0) || (asJSON && short) {
				return usageError()
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			defer pf.opa.close()
			var callArgs []string
			if len(args) > 1 {
				args, callArgs = args[:1], args[1:]
			}
			ph, all, p, err := pf.forActions(ctx, errPrefix(cmd), phase, args, actions, std)
			if err != nil {
				return err
			}
			for i, a := range all {
				d, err := p.Engine.DecideArgs(ctx, a, callArgs, ph)
				if err != nil {
					return failed(exitFailed, err)
				}
				x := eval.Explain(d, p.Config)
				if asJSON {
					writeJSON(std, x, true)
					continue
				}
				if i > 0 {
					fmt.Fprintln(std.out)
				}
				// The resolution rule is the same for every action: said once.
				x.WriteTextWith(std.out, p.Sources, eval.TextOptions{Resolution: i == 0 && !short, Hint: true, Short: short})
			}
			return nil
		},
	}
	pf.add(c.Flags())
	pf.opa.add(c.Flags())
	addPhaseFlag(c, &phase)
	c.Flags().BoolVar(&asJSON, "json", false, "print the explanation as JSON")
	c.Flags().BoolVar(&short, "short", false, "print one line per layer, with no source excerpt and no resolution rule")
	addActionsFlag(c, &actions, "explain")
	return c
}
