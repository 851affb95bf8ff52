package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chockhq/chock/internal/safefile"
	"github.com/chockhq/chock/internal/udiff"
	"github.com/chockhq/chock/zon"
	"github.com/spf13/cobra"
)

// newFmtCmd is `chock fmt [-w] [-d] [--check] [PATH...]`.
func newFmtCmd(std stdio) *cobra.Command {
	var write, check, showDiff bool
	c := &cobra.Command{
		Use:   "fmt [-w] [-d] [--check] [PATH...]",
		Short: "lay ZON files out as zig fmt does",
		Long: `fmt prints each ZON file laid out as zig fmt lays it out: 4-space indent;
a container ending in a trailing comma, or holding a comment or a
multiline string, gets one element per line. Comments and literal
spellings are kept; the value never changes. A PATH that is a folder is
walked for *.zon files (names starting with '.' skipped, as gofmt skips
them); no PATH, or -, reads standard input.

-w rewrites the files atomically; -d prints a unified diff of each change
instead of the file (as gofmt -d does); --check lists the files it would
change (with -d, shows their diffs) and exits 1 if any.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if write && check {
				return failedf(exitUsage, "specify -w or --check but not both")
			}
			if len(args) == 0 {
				args = []string{"-"}
			}
			ctx := cmd.Context()
			code := exitOK
			for _, name := range fmtTargets(args, std, &code) {
				if ctx.Err() != nil {
					return reported(exitFailed)
				}
				src, err := readInput(name, std)
				if err != nil {
					fmt.Fprintf(std.err, "chock fmt: %s\n", oneLine(err.Error()))
					code = max(code, exitUsage)
					continue
				}
				doc, err := zon.ParseDocument(displayName(name), src)
				if err != nil {
					fmt.Fprintln(std.err, oneLine(err.Error()))
					code = max(code, exitFailed)
					continue
				}
				out := zon.Format(doc)
				changed := !bytes.Equal(out, src)
				if showDiff && changed {
					shown := displayName(name)
					std.out.Write(udiff.Unified(shown+".orig", shown, src, out))
				}
				switch {
				case check:
					if changed {
						if !showDiff {
							fmt.Fprintln(std.out, displayName(name))
						}
						code = max(code, exitFailed)
					}
				case write && name != "-":
					if !changed {
						continue
					}
					if err := std.aborts.critical(func() error { return safefile.Write(name, out, 0o644) }); err != nil {
						fmt.Fprintf(std.err, "chock fmt: %s\n", oneLine(err.Error()))
						code = max(code, exitFailed)
					}
				case showDiff:
				default:
					stdoutFile(std).Write(out) // the file itself, byte for byte, unless shown on a terminal
				}
			}
			// Each file's error is reported as it comes: fmt goes on with
			// the next.
			return reported(code)
		},
	}
	c.Flags().BoolVarP(&write, "write", "w", false, "write the result back to each file instead of printing it")
	c.Flags().BoolVarP(&showDiff, "diff", "d", false, "print a unified diff of each change instead of the file")
	c.Flags().BoolVar(&check, "check", false, "change nothing; list the files fmt would change and exit 1 if any")
	return c
}

// fmtTargets are the files fmt formats: each argument that is not a
// folder as it is, and the *.zon files under each folder, walked in
// lexical order without following links to folders; a name starting with
// '.' below a folder given is skipped. A folder that cannot be read is
// reported, raising code to exit 2.
func fmtTargets(args []string, std stdio, code *int) []string {
	var out []string
	for _, arg := range args {
		if fi, err := os.Stat(arg); arg == "-" || err != nil || !fi.IsDir() {
			out = append(out, arg) // read, or reported, as a file
			continue
		}
		root := arg
		if fi, err := os.Lstat(arg); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			root = arg + string(filepath.Separator) // a link to a folder given: walk the folder
		}
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				fmt.Fprintf(std.err, "chock fmt: %s\n", oneLine(err.Error()))
				*code = max(*code, exitUsage)
				return nil
			}
			if p != root && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !strings.HasSuffix(d.Name(), ".zon") {
				return nil
			}
			if !d.Type().IsRegular() {
				// A link is formatted when it leads to a file.
				if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
					return nil
				}
			}
			out = append(out, p)
			return nil
		})
		if err != nil {
			fmt.Fprintf(std.err, "chock fmt: %s\n", oneLine(err.Error()))
			*code = max(*code, exitUsage)
		}
	}
	return out
}
