package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/chockhq/chock/internal/safefile"
	"github.com/chockhq/chock/zon"
)

// runFmt implements `chock fmt [-w] [--check] FILE...`.
func runFmt(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("fmt", io)
	write := fs.BoolP("write", "w", false, "write the result back to each file instead of printing it")
	check := fs.Bool("check", false, "change nothing; list the files fmt would change and exit 1 if any")
	fs.Usage = func() {
		fmt.Fprintln(io.err, "usage: chock fmt [-w] [--check] FILE...")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	if *write && *check {
		fmt.Fprintln(io.err, "chock fmt: specify -w or --check but not both")
		return exitUsage
	}
	code := exitOK
	for _, name := range fs.Args() {
		if ctx.Err() != nil {
			return exitFailed
		}
		src, err := readInput(name, io)
		if err != nil {
			fmt.Fprintf(io.err, "chock fmt: %s\n", oneLine(err.Error()))
			code = max(code, exitUsage)
			continue
		}
		doc, err := zon.ParseDocument(displayName(name), src)
		if err != nil {
			fmt.Fprintln(io.err, oneLine(err.Error()))
			code = max(code, exitFailed)
			continue
		}
		out := zon.Format(doc)
		switch {
		case *check:
			if !bytes.Equal(out, src) {
				fmt.Fprintln(io.out, displayName(name))
				code = max(code, exitFailed)
			}
		case *write && name != "-":
			if bytes.Equal(out, src) {
				continue
			}
			if err := io.aborts.critical(func() error { return safefile.Write(name, out, 0o644) }); err != nil {
				fmt.Fprintf(io.err, "chock fmt: %s\n", oneLine(err.Error()))
				code = max(code, exitFailed)
			}
		default:
			stdoutFile(io).Write(out) // the file itself, byte for byte, unless shown on a terminal
		}
	}
	return code
}
