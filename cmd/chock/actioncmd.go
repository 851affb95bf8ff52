package main

import (
	"fmt"

	"github.com/chockhq/chock/compile/action"
	"github.com/spf13/cobra"
)

// newActionCmd is `chock action`: it builds action names so nobody
// reverses host labels by hand. Its subcommands take flags like any
// other (chock action exec --help is help); a program path that starts
// with a dash comes after -- (chock action exec -- --help).
func newActionCmd(std stdio) *cobra.Command {
	sub := func(use, short, long string, n int, build func(args []string) (string, error)) *cobra.Command {
		return &cobra.Command{
			Use:         use,
			Short:       short,
			Long:        long,
			Args:        exactArgs(n),
			Annotations: map[string]string{prefixAnnotation: "chock action"},
			RunE: func(cmd *cobra.Command, args []string) error {
				a, err := build(args)
				if err != nil {
					return err
				}
				if _, err := action.ParseAction(a); err != nil {
					return failedf(exitFailed, "%q is not a valid action: %w", a, err)
				}
				fmt.Fprintln(std.out, a)
				return nil
			},
		}
	}
	return newGroupCmd(std, "action COMMAND", "build an action name",
		sub("mcp-host SERVER URL", "the action for reaching a remote server's host",
			`mcp-host prints the action a session asks before it reaches the host
of the remote MCP server SERVER at URL: mcp.SERVER.host. followed by the
host's labels reversed, in punycode.`, 2,
			func(args []string) (string, error) {
				if !action.ValidServerName(args[0]) {
					return "", failedf(exitFailed, "server name %q: %s", args[0], action.ServerNameRule)
				}
				a, err := action.MCPHost(args[0], args[1])
				if err != nil {
					return "", failed(exitFailed, err)
				}
				return a, nil
			}),
		sub("fetch URL", "the action for fetch_url reaching a URL's host",
			`fetch prints the action fetch_url asks before it reaches URL's host:
net.fetch. followed by the host's labels reversed, in punycode.`, 1,
			func(args []string) (string, error) {
				a, err := action.Fetch(args[0])
				if err != nil {
					return "", failed(exitFailed, err)
				}
				return a, nil
			}),
		sub("connect HOST", "the action for a call's connection to a host",
			`connect prints the action chock's egress proxy asks before a program a
call runs connects to HOST (a name, or an IP literal): net.connect.
followed by the host's labels reversed, in punycode; an IPv4 address in
its own order, an IPv6 address in brackets. Any port: it is not decided.`, 1,
			func(args []string) (string, error) {
				a, err := action.Connect(args[0])
				if err != nil {
					return "", failed(exitFailed, err)
				}
				return a, nil
			}),
		sub("exec PATH", "the action for running a program",
			`exec prints the action a session asks before it runs the program PATH:
exec.path. followed by the program's name. A PATH that starts with a
dash comes after --.`, 1,
			func(args []string) (string, error) {
				a, err := action.Exec(args[0])
				if err != nil {
					return "", failed(exitFailed, err)
				}
				return a, nil
			}),
	)
}
