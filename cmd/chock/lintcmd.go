package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/lint"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/runtime/sandbox"
	"github.com/spf13/cobra"
)

// readSources reads the named files for load.Read; a file that cannot be
// read is an input error (exit 2).
func readSources(names []string, std stdio) ([]load.Source, error) {
	return readSourcesAs(names, false, std)
}

// readConfigSources is readSources for the project's configuration: a
// file that is not there says what writes one.
func readConfigSources(names []string, std stdio) ([]load.Source, error) {
	return readSourcesAs(names, true, std)
}

func readSourcesAs(names []string, project bool, std stdio) ([]load.Source, error) {
	var out []load.Source
	for _, name := range names {
		src, err := readInput(name, std)
		if err != nil {
			if project && errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("%w; chock init writes a chock.zon to start from (chock init DIR, in DIR)", err)
			}
			return nil, inputError(exitUsage, err)
		}
		out = append(out, load.Source{Name: displayName(name), Data: src})
	}
	return out, nil
}

// loadSources reads the project configs and the orgs (org sources, or org
// bundles read as ro says). A file that cannot be read is exit 2, an org
// refused exit 1.
func loadSources(files, orgFiles []string, ro compile.ReadOptions, std stdio) (*load.Loaded, error) {
	return loadAs(files, orgFiles, load.Input{Read: ro}, std)
}

// loadAs is loadSources with in's options (its sources are the files').
func loadAs(files, orgFiles []string, in load.Input, std stdio) (*load.Loaded, error) {
	configs, err := readConfigSources(files, std)
	if err != nil {
		return nil, err
	}
	orgs, err := readSources(orgFiles, std)
	if err != nil {
		return nil, err
	}
	in.Configs, in.Orgs = configs, orgs
	l, err := load.Read(in)
	if err != nil {
		return nil, inputError(exitFailed, err)
	}
	return l, nil
}

// loadConfigs is loadSources for a command that takes the config as
// --config or as its arguments (configFiles), its orgs read as keys say.
func loadConfigs(cmd *cobra.Command, config string, args, orgs []string, keys keyFlags, std stdio) (*load.Loaded, error) {
	files, err := configFiles(cmd, config, args)
	if err != nil {
		return nil, err
	}
	ro, err := keys.readOptions()
	if err != nil {
		return nil, failed(exitUsage, err)
	}
	return loadSources(files, orgs, ro, std)
}

// refuseErrors reports lint errors on stderr and, when there are any,
// returns the error that ends the command (exit 1): a policy with errors
// is not compiled, nor anything written.
func refuseErrors(ds diag.List, src diag.Sources, std stdio, what string) error {
	errs := load.Errors(ds)
	if len(errs) == 0 {
		return nil
	}
	diag.WriteText(std.err, errs, src)
	fmt.Fprintf(std.err, "chock %s: %s; nothing written (chock lint shows every finding)\n", what, diag.Plural(len(errs), "error"))
	return reported(exitFailed)
}

// newLintCmd is `chock lint`.
func newLintCmd(std stdio) *cobra.Command {
	var (
		config string
		orgs   []string
		format string
		strict bool
		keys   keyFlags
	)
	c := &cobra.Command{
		Use:   "lint [--org FILE]... [--verification-key FILE | --skip-verify] [--format text|json|sarif|github] [--strict] [--config FILE | FILE...]",
		Short: "check chock.zon and report every finding",
		Long: `lint checks the project's chock.zon (--config, or the files given; - reads
standard input) and the org bundle sources given with --org, and reports
every mistake it finds with a position, a stable code and a hint. text
shows the source line with a caret; json is {"diagnostics":[...]}; sarif
is SARIF 2.1.0 for code scanning; github prints workflow annotations.

Exit 0 when clean or only warnings, 1 on errors (or on warnings with
--strict), 2 on usage errors or unreadable files. The catalog of checks is
docs/lint.md.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "text", "json", "sarif", "github":
			default:
				return failedf(exitUsage, "unknown --format %q (want text, json, sarif or github)", format)
			}
			l, err := loadConfigs(cmd, config, args, orgs, keys, std)
			if err != nil {
				return err
			}
			l.SharedFiles = sharedFiles(os.Getenv("PATH"), l.Configs)
			all := l.Lint()
			switch format {
			case "text":
				err = diag.WriteText(std.out, all, l.Sources)
				if len(all) > 0 {
					fmt.Fprintf(std.out, "%s, %s, %s\n", diag.Plural(all.Count(diag.Error), "error"), diag.Plural(all.Count(diag.Warning), "warning"), diag.Plural(all.Count(diag.Info), "note"))
				}
			case "json":
				jw := safetext.NewJSONWriter(std.raw)
				err = errors.Join(diag.WriteJSON(jw, all), jw.Flush())
			case "sarif":
				jw := safetext.NewJSONWriter(std.raw)
				err = errors.Join(diag.WriteSARIF(jw, all, diag.Tool{Name: "chock", InformationURI: "https://github.com/chockhq/chock/blob/main/docs/lint.md"}, sarifRules()), jw.Flush())
			case "github":
				err = diag.WriteGitHub(std.out, all)
			}
			if err != nil {
				return failed(exitFailed, err)
			}
			if all.HasErrors() || (strict && all.Count(diag.Warning) > 0) {
				return reported(exitFailed)
			}
			return nil
		},
	}
	fs := c.Flags()
	addConfigFlag(fs, &config)
	fs.StringArrayVar(&orgs, "org", nil, "add the org bundle source (org.zon) or org bundle in `FILE`, whose ceiling applies; repeatable")
	fs.StringVar(&format, "format", "text", "the output `FORMAT`: text, json, sarif or github")
	fs.BoolVar(&strict, "strict", false, "exit 1 on warnings too")
	keys.addAlg(fs)
	keys.addVerification(fs)
	c.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]cobra.Completion{"text", "json", "sarif", "github"}, cobra.ShellCompDirectiveNoFileComp))
	return c
}

func sarifRules() []diag.Rule {
	rs := make([]diag.Rule, 0, len(lint.Catalog))
	for _, c := range lint.Catalog {
		rs = append(rs, diag.Rule{Code: c.Code, Severity: c.Severity, Summary: c.Summary})
	}
	return rs
}

// sharedFiles are the files PATH (and the configs' pinned programs) mean
// under more than one name, as a session started here would scan them.
func sharedFiles(path string, configs []*config.Config) []lint.SharedFile {
	var pins []sandbox.Pin
	for _, c := range configs {
		for _, p := range c.Programs {
			if p.Paths.Set {
				pin := sandbox.Pin{Name: p.Name.Value}
				for _, t := range p.Paths.Value {
					pin.Paths = append(pin.Paths, t.Value)
				}
				pins = append(pins, pin)
			}
		}
	}
	progs, err := sandbox.Scan(path, pins)
	if err != nil {
		return nil
	}
	var out []lint.SharedFile
	for _, sh := range progs.Shared() {
		out = append(out, lint.SharedFile{Path: sh.File.Path, Names: sh.Names})
	}
	return out
}
