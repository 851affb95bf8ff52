package main

import (
	"context"
	"fmt"

	"github.com/chockhq/chock/compile/action"
)

const actionUsage = `usage: chock action mcp-host SERVER URL   the action for reaching a remote server's host
       chock action fetch URL             the action for fetch_url reaching a URL's host
       chock action exec PATH             the action for running a program`

// runAction implements `chock action`: it builds action names so nobody
// reverses host labels by hand.
func runAction(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 {
		fmt.Fprintln(io.err, actionUsage)
		return exitUsage
	}
	var (
		a   string
		err error
	)
	switch {
	case args[0] == "mcp-host" && len(args) == 3:
		if !action.ValidServerName(args[1]) {
			fmt.Fprintf(io.err, "chock action: server name %q: %s\n", args[1], action.ServerNameRule)
			return exitFailed
		}
		a, err = action.MCPHost(args[1], args[2])
	case args[0] == "fetch" && len(args) == 2:
		a, err = action.Fetch(args[1])
	case args[0] == "exec" && len(args) == 2:
		a, err = action.Exec(args[1])
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		fmt.Fprintln(io.out, actionUsage)
		return exitOK
	default:
		fmt.Fprintln(io.err, actionUsage)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(io.err, "chock action: %s\n", oneLine(err.Error()))
		return exitFailed
	}
	if _, err := action.ParseAction(a); err != nil {
		fmt.Fprintf(io.err, "chock action: %q is not a valid action: %s\n", a, err)
		return exitFailed
	}
	fmt.Fprintln(io.out, a)
	return exitOK
}
