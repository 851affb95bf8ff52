package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/chockhq/chock/internal/safetext"
)

// runMCP implements `chock mcp tools SERVER`: it starts one server under
// policy, as a session would, and lists the tools it declares with what the
// policy says of calling each. Looking grants nothing.
func runMCP(ctx context.Context, args []string, io stdio) int {
	usage := "usage: chock mcp tools SERVER [--config FILE] [--org FILE]... [--bundle FILE] [--json]"
	if len(args) == 0 || args[0] != "tools" {
		fmt.Fprintln(io.err, usage)
		return exitUsage
	}
	fs := newFlags("mcp tools", io)
	var sf sessionFlags
	sf.add(fs)
	asJSON := fs.Bool("json", false, "print the server's status and tools as JSON")
	fs.Usage = func() {
		fmt.Fprintln(io.err, usage)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	name := fs.Arg(0)
	s, _, code, ok := sf.open(ctx, "mcp tools", io)
	if !ok {
		return code
	}
	sts, err := s.StartServers(ctx, name)
	if cerr := s.End(endReason(ctx, "done")); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(io.err, "chock mcp tools: %s\n", oneLine(err.Error()))
		return exitFailed
	}
	st := sts[0]
	if *asJSON {
		writeJSON(io, st, true)
	} else if st.Started {
		fmt.Fprintf(io.err, "session %s\n", s.ID)
		printServer(io.err, st)
		tw := tabwriter.NewWriter(io.out, 0, 4, 2, ' ', 0)
		for _, t := range st.Tools {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", safetext.Line(t.Action), t.Decision, t.Rule, safetext.Line(t.Description))
		}
		tw.Flush()
	}
	if !st.Started {
		if !*asJSON {
			printServer(io.err, st)
		}
		return exitFailed
	}
	return exitOK
}
