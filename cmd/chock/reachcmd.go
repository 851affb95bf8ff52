package main

import (
	"context"
	"fmt"
	goio "io"
	"os"
	"strings"

	"github.com/chockhq/chock/compile/reach"
	"github.com/chockhq/chock/internal/safefile"
	"github.com/chockhq/chock/internal/safetext"
)

const reachHeader = "# chock reach: what the policy grants, org ceilings applied. Pin it with --write, check it with --check.\n"

// runReach implements `chock reach [--org FILE]... [--write FILE | --check FILE] [CONFIG]`.
func runReach(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("reach", io)
	orgs := fs.StringArray("org", nil, "an org ceiling: an org source (org.zon) or an org bundle; repeatable")
	write := fs.String("write", "", "write the table to FILE (a snapshot to pin in the repository)")
	check := fs.String("check", "", "compare with the pinned snapshot FILE; exit 1 naming what is newly granted and what was removed")
	var keys keyFlags
	keys.addAlg(fs)
	keys.addVerification(fs)
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: chock reach [--org FILE]... [--write FILE | --check FILE] [CONFIG]")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 1 || (*write != "" && *check != "") {
		fs.Usage()
		return exitUsage
	}
	file := "chock.zon"
	if fs.NArg() == 1 {
		file = fs.Arg(0)
	}
	ro, err := keys.readOptions()
	if err != nil {
		fmt.Fprintf(io.err, "chock reach: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	l, code, ok := loadSources([]string{file}, *orgs, ro, io)
	if !ok {
		return code
	}
	if refuseErrors(l.Lint(), l.Sources, io, "reach") {
		return exitFailed
	}
	lines := reach.Report(l.Configs[0], l.Orgs)
	text := reachHeader + strings.Join(lines, "\n") + "\n"
	switch {
	case *write != "":
		ours := func(r goio.Reader) bool {
			head := make([]byte, 14)
			n, _ := goio.ReadFull(r, head)
			return string(head[:n]) == reachHeader[:14]
		}
		err := safefile.Check(*write, ours, "a reach snapshot (its first line is \"# chock reach\")")
		if err == nil {
			err = io.aborts.critical(func() error { return safefile.Write(*write, []byte(text), 0o644) })
		}
		if err != nil {
			fmt.Fprintf(io.err, "chock reach: %s\n", oneLine(err.Error()))
			return exitFailed
		}
		return exitOK
	case *check != "":
		pinned, err := os.ReadFile(*check)
		if err != nil {
			fmt.Fprintf(io.err, "chock reach: %s\n", oneLine(err.Error()))
			return exitUsage
		}
		var old []string
		for _, ln := range strings.Split(string(pinned), "\n") {
			if ln != "" && !strings.HasPrefix(ln, "#") {
				old = append(old, ln)
			}
		}
		added, removed := reach.Diff(old, lines)
		if len(added) == 0 && len(removed) == 0 {
			return exitOK
		}
		fmt.Fprintf(io.out, "the policy's reach differs from %s:\n", safetext.Line(*check))
		for _, a := range added {
			fmt.Fprintf(io.out, "+ newly granted: %s\n", a)
		}
		for _, r := range removed {
			fmt.Fprintf(io.out, "- removed: %s\n", r)
		}
		fmt.Fprintf(io.out, "if this is intended, run: chock reach --write %s\n", safetext.Line(*check))
		return exitFailed
	}
	fmt.Fprint(io.out, text)
	return exitOK
}
