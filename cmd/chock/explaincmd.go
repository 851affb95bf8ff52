package main

import (
	"github.com/chockhq/chock/eval"
	"github.com/spf13/cobra"
)

// newExplainCmd is `chock explain ACTION`.
func newExplainCmd(io stdio) *cobra.Command {
	var (
		pf     policyFlags
		phase  string
		asJSON bool
	)
	c := &cobra.Command{
		Use:   "explain [--config FILE] [--org FILE]... [--bundle FILE] [--phase start|loop] [--json] ACTION",
		Short: "why an action is decided as it is, and what would permit it",
		Long: `explain decides ACTION as eval does and says why: the resolution rule,
each layer's deciding rule with its .why and a source excerpt, the org that
capped the result, the start note, and a hint: a concrete edit the project
can make, or the org file and rule that forbid it. --json gives the same as
data.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ph, p, err := pf.forActions(cmd, phase, args, io)
			if err != nil {
				return err
			}
			d, err := p.Engine.Decide(ctx, args[0], ph)
			if err != nil {
				return failed(exitFailed, err)
			}
			x := eval.Explain(d, p.Config)
			if asJSON {
				writeJSON(io, x, true)
				return nil
			}
			x.WriteText(io.out, p.Sources)
			return nil
		},
	}
	pf.add(c.Flags())
	addPhaseFlag(c, &phase)
	c.Flags().BoolVar(&asJSON, "json", false, "print the explanation as JSON")
	return c
}
