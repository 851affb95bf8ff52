package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newMCPCmd is `chock mcp tools SERVER`: it starts one server under
// policy, as a session would, and lists the tools it declares with what the
// policy says of calling each. Looking grants nothing.
func newMCPCmd(std stdio) *cobra.Command {
	var (
		sf     sessionFlags
		asJSON bool
	)
	tools := &cobra.Command{
		Use:   "tools [--config FILE] [--org FILE]... [--bundle FILE]... [--opa-config FILE | --opa-url URL] [--json] SERVER",
		Short: "start one MCP server under policy and list its tools with their decisions",
		Long: `tools starts the MCP server SERVER under start-phase policy, as a session
would, and lists the tools it declares, each with its action, its decision
and the deciding rule. Looking grants nothing: a host rule alone gets this
list, a tool rule is needed to call. Exit 1 when the server is left out,
with why.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name := args[0]
			defer sf.opa.close()
			ctx, stop, err := sf.otel.start(ctx, std.err)
			if err != nil {
				return err
			}
			defer stop()
			s, _, err := sf.open(ctx, std)
			if err != nil {
				return err
			}
			sts, err := s.StartServers(ctx, name)
			if cerr := s.End(endReason(ctx, "done")); err == nil && cerr != nil {
				err = cerr
			}
			if err != nil {
				return failed(exitFailed, err)
			}
			st := sts[0]
			if asJSON {
				writeJSON(std, st, true)
			} else if st.Started {
				fmt.Fprintf(std.err, "session %s\n", s.ID)
				printServer(std.err, st)
				tab := newTable(std.out, "ACTION", "DECISION", "RULE", "DESCRIPTION")
				for _, t := range st.Tools {
					tab.row(t.Action, t.Decision.String(), t.Rule, t.Description)
				}
				if err := tab.flush(); err != nil {
					return failed(exitFailed, err)
				}
			}
			if !st.Started {
				if !asJSON {
					printServer(std.err, st)
				}
				return reported(exitFailed)
			}
			return nil
		},
	}
	sf.add(tools.Flags())
	tools.Flags().BoolVar(&asJSON, "json", false, "print the server's status and tools as JSON")
	return newGroupCmd(std, "mcp COMMAND", "MCP under policy: list a server's tools, serve an agent client", tools, newMCPServeCmd(std))
}
