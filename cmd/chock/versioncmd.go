package main

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/safetext"

	"github.com/spf13/cobra"
)

// opaModule is the module whose version chock version names: the policy
// engine every decision goes through.
const opaModule = "github.com/open-policy-agent/opa"

// newVersionCmd is `chock version`.
func newVersionCmd(std stdio) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print chock's version, and the Go and OPA it was built with",
		Long: `version prints chock's module version (a pseudo-version,
v0.0.0-DATE-COMMIT, for a build in a git work tree; (devel) for one without
VCS information), the Go version it was built with, the version of OPA it
decides with, and the managed org ceilings in force (/etc/chock/org.d,
which every command that decides applies). chock --version prints the
same.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return writeVersion(std)
		},
	}
}

// writeVersion prints versionText for this binary.
func writeVersion(std stdio) error {
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprint(std.out, versionText(bi, ok))
	fmt.Fprintln(std.out, managedText(load.ManagedDir))
	return nil
}

// managedText is the line chock version prints of the managed org
// ceilings in dir: which are in force, none, or why chock decides nothing.
func managedText(dir string) string {
	srcs, err := load.Managed(dir)
	var names []string
	if err == nil {
		names, err = load.OrgNames(srcs, compile.ReadOptions{})
	}
	switch {
	case err != nil:
		return fmt.Sprintf("managed org ceilings: %s; chock decides nothing until it is fixed", safetext.Line(err.Error()))
	case len(names) == 0:
		return fmt.Sprintf("managed org ceilings: none (%s has none)", dir)
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s (%s)", safetext.Line(n), safetext.Line(srcs[i].Name))
	}
	return "managed org ceilings: " + strings.Join(parts, ", ")
}

// versionText is what chock version prints, from the build info:
//
//	chock VERSION
//	go GOVERSION
//	opa OPAVERSION
//
// VERSION is the main module's (a pseudo-version for a build in a git
// work tree, (devel) for one without VCS information),
// OPAVERSION that of the OPA module among the dependencies (its
// replacement's, when replaced); "unknown" when the binary carries no
// build info.
func versionText(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "chock unknown\ngo unknown\nopa unknown\n"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	opa := "unknown"
	for _, d := range bi.Deps {
		if d.Path != opaModule {
			continue
		}
		opa = d.Version
		if d.Replace != nil && d.Replace.Version != "" {
			opa = d.Replace.Version
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "chock %s\n", version)
	fmt.Fprintf(&b, "go %s\n", bi.GoVersion)
	fmt.Fprintf(&b, "opa %s\n", opa)
	return b.String()
}
