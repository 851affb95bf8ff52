package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runBuffered runs a chock command line in-process, standard input empty
// and the session logs and file store in a folder of the test's, and
// returns its exit code, stdout and stderr.
func runBuffered(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	state := t.TempDir()
	t.Setenv("CHOCK_STATE_DIR", filepath.Join(state, "state"))
	t.Setenv("CHOCK_CONFIG_DIR", filepath.Join(state, "config"))
	var out, errb bytes.Buffer
	code := run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

// commandTree is every command of chock's tree that a user can name, as
// the arguments that name it (nil for chock itself): all but the hidden
// ones, with cobra's help command, which it adds when it runs.
func commandTree(t *testing.T) [][]string {
	t.Helper()
	root := newRootCmd(stdio{in: strings.NewReader(""), out: new(bytes.Buffer), err: new(bytes.Buffer)})
	root.InitDefaultHelpCmd()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, s := range listedCommands(c) {
			walk(s, append(append([]string(nil), path...), s.Name()))
		}
	}
	walk(root, nil)
	if len(paths) < 20 {
		t.Fatalf("the tree has %d commands; walked it wrong?", len(paths))
	}
	return paths
}

// TestUnknownFlagsEveryCommand: every command and subcommand refuses a flag
// it does not have, long or short, as a usage error (exit 2) that names
// the flag, and does nothing else (sessions list and chock action exec
// took anything once).
func TestUnknownFlagsEveryCommand(t *testing.T) {
	for _, path := range commandTree(t) {
		name := strings.Join(append([]string{"chock"}, path...), " ")
		for _, flag := range []string{"--no-such-flag", "-Z"} {
			args := append(append([]string(nil), path...), flag)
			code, out, errs := runBuffered(t, args...)
			want := name + ": unknown flag: --no-such-flag\n"
			if flag == "-Z" {
				want = name + ": unknown shorthand flag: 'Z'\n"
			}
			if code != exitUsage || errs != want || out != "" {
				t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want exit 2 and stderr %q", name, flag, code, out, errs, want)
			}
		}
	}
}

// TestHelpEveryCommand: chock help CMD and chock CMD --help print the
// same help on stdout, exit 0; the help starts with the command's path
// and its summary, and shows its usage line.
func TestHelpEveryCommand(t *testing.T) {
	root := newRootCmd(stdio{in: strings.NewReader(""), out: new(bytes.Buffer), err: new(bytes.Buffer)})
	root.InitDefaultHelpCmd()
	for _, path := range commandTree(t) {
		name := strings.Join(append([]string{"chock"}, path...), " ")
		code, viaHelp, errs := runBuffered(t, append([]string{"help"}, path...)...)
		if code != exitOK || errs != "" {
			t.Errorf("chock help %s: exit %d, stderr %q", strings.Join(path, " "), code, errs)
		}
		code, viaFlag, errs := runBuffered(t, append(append([]string(nil), path...), "--help")...)
		if code != exitOK || errs != "" {
			t.Errorf("%s --help: exit %d, stderr %q", name, code, errs)
		}
		if viaHelp != viaFlag {
			t.Errorf("chock help %s and %s --help differ:\n%s\n----\n%s", strings.Join(path, " "), name, viaHelp, viaFlag)
		}
		c, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(viaFlag, name+": "+c.Short+"\n\nusage: "+c.UseLine()+"\n") {
			t.Errorf("%s --help begins\n%.200s", name, viaFlag)
		}
	}
}

// TestUseLinesNameRealFlags: every --flag a usage line names is a flag of
// the command (the usage lines are written by hand).
func TestUseLinesNameRealFlags(t *testing.T) {
	root := newRootCmd(stdio{in: strings.NewReader(""), out: new(bytes.Buffer), err: new(bytes.Buffer)})
	root.InitDefaultHelpCmd()
	flagRE := regexp.MustCompile(`(?:^|[\s\[|])--?([a-z][a-z-]*)`)
	visit(root, func(c *cobra.Command) {
		for _, m := range flagRE.FindAllStringSubmatch(c.Use, -1) {
			name := m[1]
			if c.Flags().Lookup(name) == nil && c.Flags().ShorthandLookup(name) == nil {
				t.Errorf("%s: the usage line %q names --%s, which is not a flag of the command", c.CommandPath(), c.Use, name)
			}
		}
	})
}

// TestReport: how each kind of error a command returns is shown, and the
// exit code it ends with.
func TestReport(t *testing.T) {
	root := newRootCmd(stdio{in: strings.NewReader(""), out: new(bytes.Buffer), err: new(bytes.Buffer)})
	lint, _, err := root.Find([]string{"lint"})
	if err != nil {
		t.Fatal(err)
	}
	exec, _, err := root.Find([]string{"action", "exec"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cmd  *cobra.Command
		err  error
		code int
		want string // stderr; a prefix when usage follows
	}{
		{"nil", lint, nil, exitOK, ""},
		{"failed", lint, failed(exitFailed, errors.New("it broke")), exitFailed, "chock lint: it broke\n"},
		{"failedf wraps", lint, failedf(exitUsage, "reading: %w", errors.New("gone")), exitUsage, "chock lint: reading: gone\n"},
		{"one line", lint, failed(exitFailed, errors.New("two\nlines")), exitFailed, "chock lint: two lines\n"},
		{"input", lint, inputError(exitUsage, errors.New("open x.zon: no such file")), exitUsage, "chock: open x.zon: no such file\n"},
		{"line", lint, lineError(exitFailed, errors.New("x.zon:1:2: bad")), exitFailed, "x.zon:1:2: bad\n"},
		{"reported", lint, reported(exitFailed), exitFailed, ""},
		{"prefix annotation", exec, failed(exitFailed, errors.New("no")), exitFailed, "chock action: no\n"},
		{"cobra's own", lint, errors.New(`unknown command "x"`), exitUsage, "chock lint: unknown command \"x\"\n"},
		{"usage", exec, usageError(), exitUsage, "usage: chock action exec PATH\n"},
	} {
		var errb bytes.Buffer
		code := report(stdio{err: &errb}, tc.cmd, tc.err)
		got := errb.String()
		ok := got == tc.want
		if tc.name == "usage" {
			ok = strings.HasPrefix(got, tc.want) && strings.Contains(got, "\nflags:\n")
		}
		if code != tc.code || !ok {
			t.Errorf("%s: exit %d, stderr %q; want exit %d, stderr %q", tc.name, code, got, tc.code, tc.want)
		}
	}
	if reported(exitOK) != nil {
		t.Error("reported(0) is an error")
	}
	var ee *exitError
	if err := failed(exitFailed, context.Canceled); !errors.Is(err, context.Canceled) || !errors.As(err, &ee) || ee.code != exitFailed {
		t.Errorf("failed does not wrap its error: %v", err)
	}
}

// TestPanicIsExit3: a panic in a command is a bug in chock, reported on
// one line; the exit code is 3.
func TestPanicIsExit3(t *testing.T) {
	build := func(std stdio) *cobra.Command {
		root := newRootCmd(std)
		root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error { panic("boom") }})
		return root
	}
	var out, errb bytes.Buffer
	code := runTree(context.Background(), build, []string{"boom"}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	if want := "chock: internal error (a bug in chock; please report it): boom\n"; code != exitInternal || errb.String() != want {
		t.Errorf("exit %d, stderr %q; want exit 3, %q", code, errb.String(), want)
	}
}

// TestConfigFiles: --config and the positional CONFIG name one config.
func TestConfigFiles(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the files, space-separated, or the error
	}{
		{nil, "chock.zon"},
		{[]string{"a.zon"}, "a.zon"},
		{[]string{"a.zon", "b.zon"}, "a.zon b.zon"},
		{[]string{"--config", "a.zon"}, "a.zon"},
		{[]string{"--config", "a.zon", "./a.zon"}, "a.zon"},
		{[]string{"--config", "chock.zon", "chock.zon"}, "chock.zon"},
		{[]string{"--config", "a.zon", "b.zon"}, "--config a.zon and the argument b.zon name different configs; give one"},
		{[]string{"--config", "a.zon", "a.zon", "b.zon"}, "--config a.zon and the arguments a.zon b.zon name different configs; give one"},
		{[]string{"--config", "-", "b.zon"}, "--config <stdin> and the argument b.zon name different configs; give one"},
	} {
		var config, got string
		c := &cobra.Command{Use: "x", RunE: func(cmd *cobra.Command, args []string) error {
			files, err := configFiles(cmd, config, args)
			if err != nil {
				got = err.Error()
				return nil
			}
			got = strings.Join(files, " ")
			return nil
		}}
		addConfigFlag(c.Flags(), &config)
		c.SetArgs(append([]string{}, tc.args...))
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
}
