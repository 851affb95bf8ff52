package main

import (
	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/zon"
	"github.com/spf13/cobra"
)

// newZONCmd is `chock zon json [--tagged] FILE|-`.
func newZONCmd(std stdio) *cobra.Command {
	var tagged bool
	jsonCmd := &cobra.Command{
		Use:   "json [--tagged] FILE|-",
		Short: "print a ZON document as JSON",
		Long: `json prints the ZON document FILE (- reads standard input) as JSON: struct
as an object in field order, tuple as an array, enum as {"enum":...}, char
as {"char":n}, big integers as decimal strings, nan, inf and -inf as
strings. --tagged prints the lossless form of the test corpus. Invalid
input: exit 1 and one FILE:LINE:COL: message line on stderr.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			src, err := readInput(name, std)
			if err != nil {
				return inputError(exitUsage, err)
			}
			v, err := zon.Parse(displayName(name), src)
			if err != nil {
				return lineError(exitFailed, err)
			}
			out := zon.JSON(v)
			if tagged {
				out = zon.TaggedJSON(v)
			}
			std.raw.Write(safetext.JSON(append(out, '\n')))
			return nil
		},
	}
	jsonCmd.Flags().BoolVar(&tagged, "tagged", false, "print the lossless tagged form ({\"int\":\"1\"}, {\"struct\":[...]}, ...)")
	return newGroupCmd(std, "zon COMMAND", "read ZON documents", jsonCmd)
}
