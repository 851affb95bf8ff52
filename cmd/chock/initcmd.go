package main

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chockhq/chock/internal/safefile"
	"github.com/spf13/cobra"
)

// templates are the files chock init writes: one chock.zon per template
// and the org.zon of --org. Each is lint-clean alone and under org.zon,
// formatted, and its .expect covers every rule of both (initcmd_test.go).
//
//go:embed templates/*.zon
var templates embed.FS

// templateNames are chock init's --template values, the default first.
var templateNames = []string{"minimal", "github", "mcp"}

// templateFile is the chock.zon of a template.
func templateFile(name string) ([]byte, error) {
	return fs.ReadFile(templates, "templates/"+name+".zon")
}

// newInitCmd is `chock init [--template minimal|github|mcp] [--org] [DIR]`.
func newInitCmd(std stdio) *cobra.Command {
	var (
		template string
		withOrg  bool
	)
	c := &cobra.Command{
		Use:   "init [--template minimal|github|mcp] [--org] [DIR]",
		Short: "write a commented starting chock.zon",
		Long: `init writes a chock.zon into DIR (default: the current folder), commented
field by field, lint-clean, and with .expect tests that exercise each of
its rules: minimal (a few programs and hosts), github (git, gh and its
token) or mcp (a command server and a remote one, with a header secret).
--org also writes org.zon, an org ceiling the chock.zon passes under.
init never replaces a file: when chock.zon (or, with --org, org.zon) is
already there, in any form, it writes nothing and exits 1.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(templateNames, template) {
				return failedf(exitUsage, "unknown --template %q (want %s)", template, strings.Join(templateNames, ", "))
			}
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			project, err := templateFile(template)
			if err != nil {
				return failed(exitInternal, err)
			}
			files := []struct {
				name string
				data []byte
			}{{filepath.Join(dir, "chock.zon"), project}}
			if withOrg {
				org, err := fs.ReadFile(templates, "templates/org.zon")
				if err != nil {
					return failed(exitInternal, err)
				}
				files = append(files, struct {
					name string
					data []byte
				}{filepath.Join(dir, "org.zon"), org})
			}
			// Nothing is written unless every file can be.
			for _, f := range files {
				if _, err := os.Lstat(f.name); err == nil {
					return failedf(exitFailed, "%s already exists; nothing written", displayName(f.name))
				} else if !errors.Is(err, fs.ErrNotExist) {
					return failed(exitFailed, err)
				}
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return failed(exitFailed, err)
			}
			var written []string
			for _, f := range files {
				err := std.aborts.critical(func() error { return safefile.Create(f.name, f.data, 0o644) })
				if err != nil {
					for _, w := range written { // a file that appeared meanwhile: undo
						os.Remove(w)
					}
					return failed(exitFailed, err)
				}
				written = append(written, f.name)
				fmt.Fprintf(std.out, "wrote %s\n", displayName(f.name))
			}
			orgFlag := ""
			if withOrg {
				orgFlag = "--org " + displayName(files[1].name) + " "
			}
			fmt.Fprintf(std.out, "next: chock lint %[1]s%[2]s; chock test %[1]s%[2]s\n", orgFlag, displayName(files[0].name))
			return nil
		},
	}
	c.Flags().StringVar(&template, "template", templateNames[0], "start from `NAME`: "+strings.Join(templateNames, ", "))
	c.Flags().BoolVar(&withOrg, "org", false, "also write org.zon, an org ceiling")
	c.RegisterFlagCompletionFunc("template", cobra.FixedCompletions(templateNames, cobra.ShellCompDirectiveNoFileComp))
	return c
}
