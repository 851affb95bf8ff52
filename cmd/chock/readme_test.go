package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chockhq/chock/runtime/telemetry"
	"github.com/spf13/cobra"
)

// TestREADMECommandTable checks README.md's command table against the
// command tree.
//
// The table is the one under "## Commands". Each row is one command that
// does something of its own (a leaf of the tree: `chock action exec`, not
// `chock action`, whose subcommands' rows name it), and its first cell is
// one code span holding the command's usage line exactly as its help
// prints it (cobra's UseLine: "chock", the path, then Use), with | written
// \| as Markdown tables need. Hidden commands (__complete, __man) have no
// row. Every leaf has a row, and every row is a leaf, once.
func TestREADMECommandTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := commandTableRows(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	root := newRootCmd(stdio{in: strings.NewReader(""), out: new(bytes.Buffer), err: new(bytes.Buffer)})
	root.InitDefaultHelpCmd()
	var want []string
	visit(root, func(c *cobra.Command) {
		if len(listedCommands(c)) == 0 && !hiddenPath(c) {
			want = append(want, c.UseLine())
		}
	})
	if len(want) < 15 {
		t.Fatalf("%d leaf commands; walked the tree wrong?", len(want))
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r] {
			t.Errorf("README.md lists %q twice", r)
		}
		seen[r] = true
		if !slices.Contains(want, r) {
			t.Errorf("README.md lists %q, which is no command's usage line", r)
		}
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("README.md's command table has no row %q", "`"+strings.ReplaceAll(w, "|", `\|`)+"`")
		}
	}
}

// hiddenPath says whether c or a command above it is hidden.
func hiddenPath(c *cobra.Command) bool {
	for ; c != nil; c = c.Parent() {
		if c.Hidden {
			return true
		}
	}
	return false
}

// commandTableRows are the usage lines of the table under "## Commands":
// the first cell of each row, a code span, with \| read as |.
func commandTableRows(readme string) ([]string, error) {
	_, section, ok := strings.Cut(readme, "\n## Commands\n")
	if !ok {
		return nil, errors.New("README.md has no \"## Commands\" section")
	}
	if i := strings.Index(section, "\n#"); i >= 0 {
		section = section[:i]
	}
	var rows []string
	inTable := false
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break // the table ended
			}
			continue
		}
		inTable = true
		if strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| command |") {
			continue
		}
		cell, ok := strings.CutPrefix(line, "| `")
		if !ok {
			return nil, fmt.Errorf("a row of the command table does not start with a code span: %s", line)
		}
		end := strings.Index(cell, "` |")
		if end < 0 {
			return nil, fmt.Errorf("the first cell of a row is not one code span: %s", line)
		}
		rows = append(rows, strings.ReplaceAll(cell[:end], `\|`, "|"))
	}
	if len(rows) == 0 {
		return nil, errors.New("README.md's \"## Commands\" section has no table")
	}
	return rows, nil
}

// TestREADMETelemetryTable checks the README's attribute table against
// runtime/telemetry's: every attribute chock exports, in its order, once.
func TestREADMETelemetryTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(string(readme), "\n") {
		if m := regexp.MustCompile("^\\| `([a-z_.]+)` \\|").FindStringSubmatch(line); m != nil && strings.Contains(line, "|") {
			if strings.HasPrefix(m[1], "gen_ai.") || strings.HasPrefix(m[1], "chock.") || strings.HasPrefix(m[1], "mcp.") || m[1] == "error.type" || m[1] == "network.transport" {
				got = append(got, m[1])
			}
		}
	}
	var want []string
	for _, a := range telemetry.Attributes {
		want = append(want, string(a.Key))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("README's attribute table:\n got %v\nwant %v", got, want)
	}
}
