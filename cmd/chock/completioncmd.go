package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newCompletionCmd is `chock completion bash|zsh|fish`: cobra's generated
// completion scripts, which ask chock itself (its hidden __complete
// command) for the words that can come next.
func newCompletionCmd(std stdio) *cobra.Command {
	shells := []string{"bash", "zsh", "fish"}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "print a shell completion script",
		Long: `completion prints the completion script of the shell named; load it in
the shell's own way:

    bash: source <(chock completion bash)
    zsh:  chock completion zsh > "${fpath[1]}/_chock"
    fish: chock completion fish > ~/.config/fish/completions/chock.fish`,
		Args:      exactArgs(1),
		ValidArgs: shells,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, w := cmd.Root(), stdoutFile(std)
			var err error
			switch args[0] {
			case "bash":
				err = root.GenBashCompletionV2(w, true)
			case "zsh":
				err = root.GenZshCompletion(w)
			case "fish":
				err = root.GenFishCompletion(w, true)
			default:
				return &exitError{code: exitUsage, err: fmt.Errorf("unknown shell %q (want bash, zsh or fish)", args[0]), usage: true}
			}
			if err != nil {
				return failed(exitFailed, err)
			}
			return nil
		},
	}
}
