package main

import (
	"context"
	"fmt"

	"github.com/chockhq/chock/eval"
	"github.com/spf13/cobra"
)

// explainParams are chock explain's flags.
type explainParams struct {
	decideFlags
	asJSON, short bool
}

// validate checks that chock explain has one action (and its arguments),
// or --actions, and not both --json and --short.
func (p *explainParams) validate(args []string) error {
	if (p.actions == "" && len(args) < 1) || (p.actions != "" && len(args) != 0) || (p.asJSON && p.short) {
		return usageError()
	}
	return nil
}

// newExplainCmd is `chock explain ACTION [ARG]...`, or `--actions FILE`.
func newExplainCmd(std stdio) *cobra.Command {
	var p explainParams
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
		RunE: paramsRunE(&p, runExplain, std),
	}
	p.add(c)
	c.Flags().BoolVar(&p.asJSON, "json", false, "print the explanation as JSON")
	c.Flags().BoolVar(&p.short, "short", false, "print one line per layer, with no source excerpt and no resolution rule")
	addActionsFlag(c, &p.actions, "explain")
	return c
}

// runExplain explains each action asked, in turn.
func runExplain(ctx context.Context, args []string, p explainParams, std stdio) error {
	defer p.pf.opa.close()
	var callArgs []string
	if len(args) > 1 {
		args, callArgs = args[:1], args[1:]
	}
	ph, all, pol, err := p.policy(ctx, args, std)
	if err != nil {
		return err
	}
	for i, a := range all {
		d, err := pol.Engine.DecideArgs(ctx, a, callArgs, ph)
		if err != nil {
			return failed(exitFailed, err)
		}
		x := eval.Explain(d, pol.Config)
		if p.asJSON {
			writeJSON(std, x, true)
			continue
		}
		if i > 0 {
			fmt.Fprintln(std.out)
		}
		// The resolution rule is the same for every action: said once.
		x.WriteTextWith(std.out, pol.Sources, eval.TextOptions{Resolution: i == 0 && !p.short, Hint: true, Short: p.short})
	}
	return nil
}
