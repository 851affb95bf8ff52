package main

import (
	"context"
	"fmt"

	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/zon"
)

// runZON implements `chock zon json [--tagged] FILE|-`.
func runZON(ctx context.Context, args []string, io stdio) int {
	if len(args) == 0 || args[0] != "json" {
		fmt.Fprintln(io.err, "usage: chock zon json [--tagged] FILE|-")
		return exitUsage
	}
	fs := newFlags("zon json", io)
	tagged := fs.Bool("tagged", false, "print the lossless tagged form ({\"int\":\"1\"}, {\"struct\":[...]}, ...)")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: chock zon json [--tagged] FILE|-")
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
	src, err := readInput(name, io)
	if err != nil {
		fmt.Fprintf(io.err, "chock: %s\n", oneLine(err.Error()))
		return exitUsage
	}
	v, err := zon.Parse(displayName(name), src)
	if err != nil {
		fmt.Fprintln(io.err, oneLine(err.Error()))
		return exitFailed
	}
	out := zon.JSON(v)
	if *tagged {
		out = zon.TaggedJSON(v)
	}
	io.raw.Write(safetext.JSON(append(out, '\n')))
	return exitOK
}
