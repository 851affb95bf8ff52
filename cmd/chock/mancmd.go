package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manSection is the manual section of chock's pages: user commands.
const manSection = "1"

// newManCmd is the hidden `chock __man DIR`, which `make man` runs: it
// writes a man page for chock and for every command under it into DIR
// (docs/man in the repository), generated from the command tree by
// cobra/doc. The pages carry the month of $SOURCE_DATE_EPOCH, or of now.
func newManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "__man DIR",
		Short:  "write chock's man pages into DIR",
		Hidden: true,
		Args:   exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := writeManPages(cmd.Root(), args[0]); err != nil {
				return failed(exitFailed, err)
			}
			return nil
		},
	}
}

// writeManPages writes the pages of root and its commands into dir, made
// if need be.
func writeManPages(root *cobra.Command, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	hdr := &doc.GenManHeader{Section: manSection, Source: "chock", Manual: "chock manual"}
	if err := doc.GenManTree(root, hdr, dir); err != nil {
		return fmt.Errorf("writing the man pages: %w", err)
	}
	return nil
}
