package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goio "io"
	"os"
	"sort"
	"strings"

	"github.com/chockhq/chock/internal/safetext"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Exit codes shared by every command.
const (
	exitOK      = 0 // success
	exitFailed  = 1 // the input is wrong or a check failed
	exitUsage   = 2 // bad flags or arguments, or unreadable input
	exitUnknown = 2
)

// stdio is where a command reads and writes.
//
// run shows everything written to out and err through the one printer
// for untrusted text (safetext): control characters as \xNN. JSON goes to
// raw through writeJSON, which keeps JSON's own escapes; only a bundle
// or a formatted file, which must stay byte for byte, is written to raw
// as it is.
type stdio struct {
	in  goio.Reader
	out goio.Writer
	err goio.Writer
	raw goio.Writer // stdout as it is
	// aborts run before chock exits at once on a second signal.
	aborts *aborts
}

// writeJSON writes v as JSON, one value a line (indented when indent),
// with every character a terminal acts on escaped as JSON escapes it.
func writeJSON(io stdio, v any, indent bool) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.raw.Write(safetext.JSON(b.Bytes()))
	return err
}

// command is one chock subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, io stdio) int
}

func commands() map[string]command {
	cs := []command{
		{"zon", "zon json FILE|-: print a ZON document as JSON", runZON},
		{"fmt", "fmt [-w] [--check] FILE...: lay ZON files out as zig fmt does", runFmt},
		{"compile", "compile [--org FILE]... [-o OUT] [--format bundle|rego] [--signing-key FILE] [CONFIG]: build the OPA bundle", runCompile},
		{"eval", "eval [--config FILE] [--org FILE]... [--bundle FILE] [--phase P] [--json] [--exit-code] ACTION...: decide actions", runEval},
		{"explain", "explain [--config FILE] [--org FILE]... [--bundle FILE] [--phase P] [--json] ACTION: why, and what would permit it", runExplain},
		{"action", "action mcp-host SERVER URL | fetch URL | exec PATH: build an action name", runAction},
		{"test", "test [--org FILE]... [--coverage] [CONFIG]: run the .expect policy tests", runTest},
		{"reach", "reach [--org FILE]... [--write FILE | --check FILE] [CONFIG]: what the policy grants", runReach},
		{"run", "run [--config FILE] [--org FILE]... [--bundle FILE] [--ask prompt|deny] --script FILE: a session driven by a script of tool calls", runRun},
		{"login", "login --tool-secret NAME: store a secret's value, read from standard input", runLogin},
		{"logout", "logout --tool-secret NAME: remove a stored secret", runLogout},
		{"mcp", "mcp tools SERVER [--config FILE] [--org FILE]... [--json]: start one MCP server under policy and list its tools with their decisions", runMCP},
		{"sessions", "sessions list | sessions show ID [--json]: the session logs", runSessions},
		{"lint", "lint [--org FILE]... [--format text|json|sarif|github] [--strict] [FILE...]: check chock.zon", runLint},
	}
	m := make(map[string]command, len(cs))
	for _, c := range cs {
		m[c.name] = c
	}
	return m
}

func usage(w goio.Writer) {
	fmt.Fprintln(w, "usage: chock COMMAND [ARGS]")
	fmt.Fprintln(w, "\ncommands:")
	cs := commands()
	names := make([]string, 0, len(cs))
	for n := range cs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %s\n", cs[n].summary)
	}
}

// exitInternal is the exit code of a bug in chock itself.
const exitInternal = 3

// run dispatches to a subcommand and returns the process exit code. A
// panic is a bug in chock: it is reported in one line, never as a crash.
func run(ctx context.Context, args []string, io stdio) (code int) {
	out, errw := safetext.NewWriter(io.out), safetext.NewWriter(io.err)
	io.raw, io.out, io.err = io.out, out, errw
	defer func() {
		out.Flush()
		errw.Flush()
	}()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(io.err, "chock: internal error (a bug in chock; please report it): %v\n", r)
			code = exitInternal
		}
	}()
	if len(args) == 0 {
		usage(io.err)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "--help":
		usage(io.out)
		return exitOK
	}
	c, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(io.err, "chock: unknown command %q\n", args[0])
		usage(io.err)
		return exitUnknown
	}
	return c.run(ctx, args[1:], io)
}

// newFlags makes a flag set that reports errors instead of exiting.
func newFlags(name string, io stdio) *pflag.FlagSet {
	fs := pflag.NewFlagSet("chock "+name, pflag.ContinueOnError)
	fs.SetOutput(io.err)
	fs.SortFlags = false
	return fs
}

// parseFlags parses args; it returns false and the exit code to use when
// parsing stopped (bad flags, or --help).
func parseFlags(fs *pflag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK, false
		}
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
		return exitUsage, false
	}
	return 0, true
}

// readInput reads a named file, or standard input for "-". A regular
// file is read in one allocation of its size (io.ReadAll would grow its
// buffer to about 2.6 times that, which counts against lint's memory).
func readInput(name string, io stdio) ([]byte, error) {
	if name == "-" {
		return readAllLimited(io.in)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		if fi.Size() > maxInput {
			return nil, fmt.Errorf("%s: input larger than %d MiB", displayName(name), maxInput>>20)
		}
		b := make([]byte, fi.Size()+1) // one byte more tells a file that grew
		n, err := goio.ReadFull(f, b)
		if err == nil || errors.Is(err, goio.ErrUnexpectedEOF) || errors.Is(err, goio.EOF) {
			if int64(n) <= fi.Size() {
				return b[:n:n], nil
			}
		} else {
			return nil, err
		}
		// The file grew while it was read: read it as a stream.
		rest, err := readAllLimited(f)
		if err != nil {
			return nil, err
		}
		return append(b[:n], rest...), nil
	}
	return readAllLimited(f)
}

// maxInput bounds what chock reads from one file.
const maxInput = 256 << 20

func readAllLimited(r goio.Reader) ([]byte, error) {
	b, err := goio.ReadAll(goio.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxInput {
		return nil, fmt.Errorf("input larger than %d MiB", maxInput>>20)
	}
	return b, nil
}

// displayName is how a file is named in messages and positions ("-"
// reads as <stdin>), shown on one line through the printer: a file name
// is untrusted text too (a repository can hold "x\nchock: all files
// formatted.zon").
func displayName(name string) string {
	if name == "-" {
		return "<stdin>"
	}
	return safetext.Line(name)
}

// stdoutFile is where a command writes a file's bytes as they are (a
// bundle, a formatted file): stdout itself, unless stdout is a terminal,
// where they go through the printer like any other text.
func stdoutFile(io stdio) goio.Writer {
	if isTerminalWriter(io.raw) {
		return io.out
	}
	return io.raw
}

// isTerminalWriter says whether w is, under its wrappers, a terminal.
func isTerminalWriter(w goio.Writer) bool {
	switch x := w.(type) {
	case pipeWatch:
		return isTerminalWriter(x.w)
	case *os.File:
		return term.IsTerminal(int(x.Fd()))
	}
	return false
}

// oneLine keeps an error message on one line.
func oneLine(s string) string {
	return strings.ReplaceAll(s, "\n", " ")
}
