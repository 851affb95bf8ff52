package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A command's help, which `chock help CMD` and `chock CMD --help` print on
// stdout:
//
//	chock CMD: SHORT
//
//	usage: chock CMD ...
//
//	LONG
//
//	commands:            (a command with subcommands)
//	  NAME  SHORT
//
//	flags:
//	  --flag VALUE  what it does
//
// Its usage, printed on stderr after a usage error, is the same without
// the first line and LONG.

// writeHelp prints c's help.
func writeHelp(w io.Writer, c *cobra.Command) {
	var sections []string
	sections = append(sections, fmt.Sprintf("%s: %s", c.CommandPath(), c.Short))
	sections = append(sections, usageSections(c, true)...)
	fmt.Fprintln(w, strings.Join(sections, "\n\n"))
}

// writeUsage prints c's usage.
func writeUsage(w io.Writer, c *cobra.Command) {
	fmt.Fprintln(w, strings.Join(usageSections(c, false), "\n\n"))
}

func usageSections(c *cobra.Command, long bool) []string {
	c.InitDefaultHelpFlag()
	sections := []string{"usage: " + c.UseLine()}
	if long && c.Long != "" {
		sections = append(sections, strings.TrimSpace(c.Long))
	}
	if subs := listedCommands(c); len(subs) > 0 {
		width := 0
		for _, s := range subs {
			width = max(width, len(s.Name()))
		}
		var b strings.Builder
		b.WriteString("commands:")
		for _, s := range subs {
			fmt.Fprintf(&b, "\n  %-*s  %s", width, s.Name(), s.Short)
		}
		sections = append(sections, b.String())
	}
	if fs := c.LocalFlags(); fs.HasAvailableFlags() {
		sections = append(sections, "flags:\n"+flagUsages(fs))
	}
	if len(listedCommands(c)) > 0 {
		sections = append(sections, fmt.Sprintf("Run 'chock help %sCOMMAND' for a command's help.", strings.TrimPrefix(c.CommandPath()+" ", "chock ")))
	}
	return sections
}

// flagUsages lists the flags of fs that are not hidden, one a line, as
// pflag's FlagUsages does but without its [=true|false] after a boolean
// flag: "  -o, --output OUT  where to write (default ...)".
func flagUsages(fs *pflag.FlagSet) string {
	type row struct{ flag, usage string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		name := "    --" + f.Name
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			name = "-" + f.Shorthand + ", --" + f.Name
		}
		varname, usage := pflag.UnquoteUsage(f)
		if f.Value.Type() != "bool" && varname != "" {
			name += " " + varname
		}
		if d := f.DefValue; d != "" && d != "false" && d != "[]" && d != "0" {
			if f.Value.Type() == "string" {
				usage += fmt.Sprintf(" (default %q)", d)
			} else {
				usage += fmt.Sprintf(" (default %s)", d)
			}
		}
		rows = append(rows, row{name, usage})
		width = max(width, len(name))
	})
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = fmt.Sprintf("  %-*s  %s", width, r.flag, r.usage)
	}
	return strings.Join(lines, "\n")
}

// listedCommands are the subcommands of c that its help lists: all but
// the hidden ones (cobra's __complete, chock's __man).
func listedCommands(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, s := range c.Commands() {
		if !s.Hidden && s.Deprecated == "" {
			out = append(out, s)
		}
	}
	return out
}

// newHelpCmd is `chock help [COMMAND]...`: the help of chock, or of the
// command named.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]...",
		Short: "print chock's help, or a command's",
		Long: `chock help CMD prints the help chock CMD --help prints: what CMD does,
its usage and its flags.`,
		Args:                  cobra.ArbitraryArgs,
		DisableFlagsInUseLine: true, // cobra adds help to the tree after newRootCmd's visit
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			c, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, s := range listedCommands(c) {
				if strings.HasPrefix(s.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(s.Name(), s.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return failedf(exitUsage, "unknown command %q", strings.Join(args, " "))
			}
			return c.Help()
		},
	}
}
