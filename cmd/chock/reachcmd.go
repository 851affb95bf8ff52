package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chockhq/chock/compile/reach"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/safefile"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/spf13/cobra"
)

const reachHeader = "# chock reach: what the policy grants, org ceilings applied. Pin it with --write, check it with --check.\n"

// newReachCmd is `chock reach [--org FILE]... [--write FILE | --check FILE] [CONFIG]`.
func newReachCmd(std stdio) *cobra.Command {
	var (
		config, write, check string
		orgs                 []string
		keys                 keyFlags
	)
	c := &cobra.Command{
		Use:   "reach [--org FILE]... [--write FILE | --check FILE] [--config FILE | CONFIG]",
		Short: "what the policy grants",
		Long: `reach prints what the policy of chock.zon (--config, or the argument)
grants, org ceilings applied: every grant (each region of the action space
it allows or asks about, exactly, in every namespace), secrets and where
they reach, servers and their tools, broad grants. --write pins the table
in a file; --check compares a pinned snapshot with the policy, the grants
region by region, names what is newly granted and what was removed, and
exits 1 when they differ. chock diff compares two policies.`,
		Args: maxArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if write != "" && check != "" {
				return usageError()
			}
			l, err := loadConfigs(cmd, config, args, orgs, keys, std)
			if err != nil {
				return err
			}
			if err := refuseErrors(l.Lint(), l.Sources, std, "reach"); err != nil {
				return err
			}
			if check != "" {
				return checkReach(check, l, std)
			}
			lines, err := reach.Report(l.Configs[0], l.Orgs)
			if err != nil {
				return failed(exitFailed, err)
			}
			text := reachHeader + strings.Join(lines, "\n") + "\n"
			if write != "" {
				ours := func(r io.Reader) bool {
					head := make([]byte, 14)
					n, _ := io.ReadFull(r, head)
					return string(head[:n]) == reachHeader[:14]
				}
				err := safefile.Check(write, ours, "a reach snapshot (its first line is \"# chock reach\")")
				if err == nil {
					err = std.aborts.critical(func() error { return safefile.Write(write, []byte(text), 0o644) })
				}
				if err != nil {
					return failed(exitFailed, err)
				}
				return nil
			}
			fmt.Fprint(std.out, text)
			return nil
		},
	}
	fs := c.Flags()
	addConfigFlag(fs, &config)
	fs.StringArrayVar(&orgs, "org", nil, "add the org ceiling in `FILE`: an org source (org.zon) or an org bundle; repeatable")
	fs.StringVar(&write, "write", "", "write the table to `FILE` (a snapshot to pin in the repository)")
	fs.StringVar(&check, "check", "", "compare with the pinned snapshot `FILE`; exit 1 naming what is newly granted and what was removed")
	keys.addAlg(fs)
	keys.addVerification(fs)
	return c
}

// checkReach is reach --check FILE: the pinned snapshot against the
// policy, exit 1 naming what changed.
func checkReach(check string, l *load.Loaded, std stdio) error {
	pinned, err := os.ReadFile(check)
	if err != nil {
		return failed(exitUsage, err)
	}
	var old []string
	for _, ln := range strings.Split(string(pinned), "\n") {
		if ln != "" && !strings.HasPrefix(ln, "#") {
			old = append(old, ln)
		}
	}
	added, removed, err := reach.Check(old, l.Configs[0], l.Orgs)
	if err != nil {
		return failed(exitFailed, fmt.Errorf("%s: %w", safetext.Line(check), err))
	}
	if len(added) == 0 && len(removed) == 0 {
		return nil
	}
	fmt.Fprintf(std.out, "the policy's reach differs from %s:\n", safetext.Line(check))
	for _, a := range added {
		fmt.Fprintf(std.out, "+ newly granted: %s\n", a)
	}
	for _, r := range removed {
		fmt.Fprintf(std.out, "- removed: %s\n", r)
	}
	fmt.Fprintf(std.out, "if this is intended, run: chock reach --write %s\n", safetext.Line(check))
	return reported(exitFailed)
}
