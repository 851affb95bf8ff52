package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chockhq/chock/internal/safetext"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Exit codes shared by every command.
const (
	exitOK       = 0 // success
	exitFailed   = 1 // the input is wrong or a check failed
	exitUsage    = 2 // bad flags or arguments, or unreadable input
	exitInternal = 3 // a bug in chock (a panic)
	// 128+n: signal n stopped chock (signals.go).
)

// stdio is where a command reads and writes.
//
// run shows everything written to out and err through the one printer
// for untrusted text (safetext): control characters as \xNN. JSON goes to
// raw through writeJSON, which keeps JSON's own escapes; only a bundle
// or a formatted file, which must stay byte for byte, is written to raw
// as it is.
type stdio struct {
	in  io.Reader
	out io.Writer
	err io.Writer
	raw io.Writer // stdout as it is
	// aborts run before chock exits at once on a second signal.
	aborts *aborts
}

// writeJSON writes v as JSON, one value a line (indented when indent),
// with every character a terminal acts on escaped as JSON escapes it.
func writeJSON(std stdio, v any, indent bool) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := std.raw.Write(safetext.JSON(b.Bytes()))
	return err
}

// exitError ends a command with an exit code: every command's RunE
// returns nil or an *exitError, and run turns it into the process's exit
// code after report has printed what it says.
//
// err, when not nil, is what went wrong: report prints it on stderr on
// one line, as "chock CMD: message" (errPrefix names the command), or as
// it is when whole (a message that carries its own prefix: "chock: ..."
// for input every command reads alike, a bare FILE:LINE:COL position).
// A nil err means the command has already said what it had to (lint's
// findings, a list of errors). usage adds the command's usage on stderr.
type exitError struct {
	code  int
	err   error
	whole bool
	usage bool
}

// Error is the message report prints, or the exit status when the
// command has said everything already.
func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

// Unwrap is what went wrong, for errors.Is and errors.As.
func (e *exitError) Unwrap() error { return e.err }

// failed is an error that ends the command with code, reported as
// "chock CMD: err".
func failed(code int, err error) error { return &exitError{code: code, err: err} }

// failedf is failed with a formatted message.
func failedf(code int, format string, args ...any) error {
	return &exitError{code: code, err: fmt.Errorf(format, args...)}
}

// inputError is an error about input that every command reads alike (a
// file that cannot be read, a policy that cannot be loaded), reported as
// "chock: err" whichever command met it.
func inputError(code int, err error) error {
	return &exitError{code: code, err: fmt.Errorf("chock: %w", err), whole: true}
}

// lineError is an error reported as it is: a diagnostic that names its
// own position ("FILE:LINE:COL: message").
func lineError(code int, err error) error {
	return &exitError{code: code, err: err, whole: true}
}

// reported ends the command with code, everything said already.
func reported(code int) error {
	if code == exitOK {
		return nil
	}
	return &exitError{code: code}
}

// usageError is a usage error that prints the command's usage.
func usageError() error { return &exitError{code: exitUsage, usage: true} }

// prefixAnnotation names, in a command's Annotations, the prefix of its
// messages when it is not the command's path ("chock action" for every
// action subcommand, as before they were subcommands).
const prefixAnnotation = "chock:prefix"

// errPrefix is how the messages of c begin.
func errPrefix(c *cobra.Command) string {
	if p := c.Annotations[prefixAnnotation]; p != "" {
		return p
	}
	return c.CommandPath()
}

// report prints what err says on stderr and returns the exit code. An
// error that is not an *exitError is cobra's own: a flag, an argument or
// a command it could not take, a usage error.
func report(std stdio, c *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		ee = &exitError{code: exitUsage, err: err}
	}
	if ee.err != nil {
		msg := oneLine(ee.err.Error())
		if !ee.whole {
			msg = errPrefix(c) + ": " + msg
		}
		fmt.Fprintln(std.err, msg)
	}
	if ee.usage {
		writeUsage(std.err, c)
	}
	return ee.code
}

// run runs one chock command line and returns the process exit code. A
// panic is a bug in chock: it is reported in one line, never as a crash.
func run(ctx context.Context, args []string, std stdio) int {
	return runTree(ctx, newRootCmd, args, std)
}

// runTree is run with the command tree that build makes.
func runTree(ctx context.Context, build func(stdio) *cobra.Command, args []string, std stdio) (code int) {
	out, errw := safetext.NewWriter(std.out), safetext.NewWriter(std.err)
	std.raw, std.out, std.err = std.out, out, errw
	defer func() {
		out.Flush()
		errw.Flush()
	}()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(std.err, "chock: internal error (a bug in chock; please report it): %v\n", r)
			code = exitInternal
		}
	}()
	root := build(std)
	if args == nil {
		args = []string{} // cobra reads os.Args for nil
	}
	// An unknown command is a usage error even with --help after it
	// (cobra would print the root's help and exit 0).
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") && !strings.HasPrefix(args[0], "__") && args[0] != "help" {
		if c, rest, err := root.Find(args); err == nil && c == root && len(rest) > 0 && rest[0] == args[0] {
			return report(std, root, &exitError{code: exitUsage, err: fmt.Errorf("unknown command %q", args[0]), usage: true})
		}
	}
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	return report(std, c, err)
}

// newRootCmd builds the command tree: chock and every command under it,
// each writing to std.
func newRootCmd(std stdio) *cobra.Command {
	var showVersion bool
	root := &cobra.Command{
		Use:   "chock COMMAND [ARGS]",
		Short: "the policy toolchain of the Chock agent harness",
		Long: `chock reads a project's chock.zon, lints and compiles it into an OPA
bundle, explains its decisions and runs agent sessions under it.

Exit codes: 0 success; 1 the input is wrong or a check failed; 2 a usage
error or unreadable input; 3 a bug in chock; 128+n when signal n stopped
it (130 SIGINT, 143 SIGTERM, 129 SIGHUP).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if showVersion {
				if len(args) > 0 {
					return usageError()
				}
				return writeVersion(std)
			}
			if len(args) == 0 {
				return usageError()
			}
			return &exitError{code: exitUsage, err: fmt.Errorf("unknown command %q", args[0]), usage: true}
		},
		SilenceErrors:         true,
		SilenceUsage:          true,
		DisableFlagsInUseLine: true,
		DisableAutoGenTag:     true,
		CompletionOptions:     cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.Flags().BoolVar(&showVersion, "version", false, "print chock's version, as chock version does")
	root.SetIn(std.in)
	root.SetOut(std.out)
	root.SetErr(std.err)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: %s", c.CommandPath(), flagError(err)), whole: true}
	})
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { writeHelp(std.out, c) })
	root.SetUsageFunc(func(c *cobra.Command) error {
		writeUsage(std.err, c)
		return nil
	})
	root.SetHelpCommand(newHelpCmd())
	root.AddCommand(
		newZONCmd(std),
		newFmtCmd(std),
		newLintCmd(std),
		newCompileCmd(std),
		newEvalCmd(std),
		newExplainCmd(std),
		newActionCmd(std),
		newTestCmd(std),
		newHookCmd(std),
		newExecCmd(std),
		newReachCmd(std),
		newDiffCmd(std),
		newInitCmd(std),
		newRunCmd(std),
		newLoginCmd(std),
		newLogoutCmd(std),
		newMCPCmd(std),
		newConnectCmd(std),
		newSessionsCmd(std),
		newVersionCmd(std),
		newCompletionCmd(std),
		newManCmd(),
	)
	visit(root, func(c *cobra.Command) {
		c.DisableFlagsInUseLine = true
		c.Flags().SortFlags = false
		// pflag's warnings (a deprecated flag) go to stderr, not to
		// cobra's output, which is stdout.
		c.Flags().SetOutput(std.err)
	})
	return root
}

// visit calls f on c and every command under it.
func visit(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		visit(sub, f)
	}
}

// newGroupCmd is a command that holds subcommands and does nothing of its
// own: without one it prints its usage (exit 2), and `chock GROUP help`
// its help.
func newGroupCmd(std stdio, use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usageError()
			case len(args) == 1 && args[0] == "help":
				writeHelp(std.out, cmd)
				return nil
			}
			return &exitError{code: exitUsage, err: fmt.Errorf("unknown command %q", args[0]), usage: true}
		},
	}
	c.AddCommand(subs...)
	return c
}

// commandParams are a command's flags, held in a struct the flags bind to:
// validate makes the usage checks that open the command (and reads what
// they parse into the struct's own fields).
type commandParams interface {
	validate(args []string) error
}

// flagsSeen are commandParams that also hold what only the command
// knows: which flags were given (cmd.Flags().Changed), the prefix of its
// messages.
type flagsSeen interface {
	seen(cmd *cobra.Command)
}

// paramsRunE is the RunE of a command whose logic is the plain function
// run: the flags p are noted (flagsSeen), validated, and run is given a
// copy of them, the command's context and arguments, and std.
func paramsRunE[P any, PP interface {
	*P
	commandParams
}](p PP, run func(ctx context.Context, args []string, p P, std stdio) error, std stdio) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if s, ok := any(p).(flagsSeen); ok {
			s.seen(cmd)
		}
		if err := p.validate(args); err != nil {
			return err
		}
		return run(cmd.Context(), args, *p, std)
	}
}

// Argument checks: a wrong number of arguments prints the command's usage
// and exits 2.

func noArgs(_ *cobra.Command, args []string) error {
	if len(args) != 0 {
		return usageError()
	}
	return nil
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError()
		}
		return nil
	}
}

func minArgs(n int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < n {
			return usageError()
		}
		return nil
	}
}

func maxArgs(n int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) > n {
			return usageError()
		}
		return nil
	}
}

// defaultConfig is the project's policy file a command reads unless told.
const defaultConfig = "chock.zon"

// addConfigFlag adds --config FILE, the project's chock.zon.
func addConfigFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "config", defaultConfig, "read the project's policy from `FILE`")
}

// configFiles are the configs a command that also takes them as
// arguments reads: the arguments, else --config (chock.zon by default).
// --config and arguments that name other files are a usage error; naming
// the same file twice is one config.
func configFiles(cmd *cobra.Command, config string, args []string) ([]string, error) {
	return configArgs(cmd.Flags().Changed("config"), config, args)
}

// configArgs is configFiles for a command whose --config was given when
// configSet.
func configArgs(configSet bool, config string, args []string) ([]string, error) {
	if len(args) == 0 {
		return []string{config}, nil
	}
	if !configSet {
		return args, nil
	}
	if len(args) == 1 && sameFile(args[0], config) {
		return []string{config}, nil
	}
	what := "the argument"
	if len(args) > 1 {
		what = "the arguments"
	}
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = displayName(a)
	}
	return nil, failedf(exitUsage, "--config %s and %s %s name different configs; give one", displayName(config), what, strings.Join(names, " "))
}

// flagError words a flag parsing error without the argument it was met
// in: pflag says "unknown shorthand flag: 'p' in -phunter2", and a value
// typed where a flag was read must not be echoed.
func flagError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "' in -"); i >= 0 && strings.HasPrefix(msg, "unknown shorthand flag:") {
		msg = msg[:i+1]
	}
	return msg
}

// sameFile says whether two names are one file: "-" only "-", and two
// paths the same file as the file system sees it (through links, however
// spelled).
func sameFile(a, b string) bool {
	if a == "-" || b == "-" {
		return a == b
	}
	fa, err := os.Stat(a)
	if err != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// readInput reads a named file, or standard input for "-". A regular
// file is read in one allocation of its size (io.ReadAll would grow its
// buffer to about 2.6 times that, which counts against lint's memory).
func readInput(name string, std stdio) ([]byte, error) {
	if name == "-" {
		return readAllLimited(std.in)
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
		n, err := io.ReadFull(f, b)
		if err == nil || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
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

func readAllLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxInput+1))
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
func stdoutFile(std stdio) io.Writer {
	if isTerminalWriter(std.raw) {
		return std.out
	}
	return std.raw
}

// isTerminalWriter says whether w is, under its wrappers, a terminal.
func isTerminalWriter(w io.Writer) bool {
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
