package main

import (
	"bytes"
	"fmt"

	"github.com/chockhq/chock/internal/safefile"
	"github.com/chockhq/chock/zon"
	"github.com/spf13/cobra"
)

// newFmtCmd is `chock fmt [-w] [--check] FILE...`.
func newFmtCmd(io stdio) *cobra.Command {
	var write, check bool
	c := &cobra.Command{
		Use:   "fmt [-w] [--check] FILE...",
		Short: "lay ZON files out as zig fmt does",
		Long: `fmt prints each ZON FILE (- reads standard input) laid out as zig fmt lays
it out: 4-space indent; a container ending in a trailing comma, or holding
a comment or a multiline string, gets one element per line. Comments and
literal spellings are kept; the value never changes. -w rewrites the files
atomically; --check lists the files it would change and exits 1.`,
		Args: minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if write && check {
				return failedf(exitUsage, "specify -w or --check but not both")
			}
			ctx := cmd.Context()
			code := exitOK
			for _, name := range args {
				if ctx.Err() != nil {
					return reported(exitFailed)
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
				case check:
					if !bytes.Equal(out, src) {
						fmt.Fprintln(io.out, displayName(name))
						code = max(code, exitFailed)
					}
				case write && name != "-":
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
			// Each file's error is reported as it comes: fmt goes on with
			// the next.
			return reported(code)
		},
	}
	c.Flags().BoolVarP(&write, "write", "w", false, "write the result back to each file instead of printing it")
	c.Flags().BoolVar(&check, "check", false, "change nothing; list the files fmt would change and exit 1 if any")
	return c
}
