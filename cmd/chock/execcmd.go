package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/runtime"
	"github.com/spf13/cobra"
)

// exitRefused is chock exec's exit code for a command the policy refuses,
// as a shell's for a command found but not run.
const exitRefused = 126

// execParams are the flags of chock exec.
type execParams struct {
	sf      sessionFlags
	timeout time.Duration
}

// newExecCmd is `chock exec [--] ARGV...`: one command as a one-call
// session.
func newExecCmd(std stdio) *cobra.Command {
	var p execParams
	c := &cobra.Command{
		Use:   "exec [--config FILE] [--org FILE]... [--bundle FILE]... [--timeout DURATION] [--] ARGV...",
		Short: "run one command under the policy, in chock's sandbox",
		Long: `exec runs one command as a session of one exec call: decided under the
policy as exec.path.NAME, run in the per-call sandbox (its nested programs
under the policy too), given the secrets the policy offers it, its output
redacted, the session logged. Its network is chock's egress proxy only:
each connection decided as net.connect.HOST, a refused one named on stderr
with its rule after the program's output. Its stdout and stderr are the program's
(redacted); its exit status is the program's, 126 when the policy refuses
it (the reason, with the deciding rule, on stderr: what an agent may read,
so never the edit that would permit it), 1 when chock cannot run it. Standard input is not passed on. chock hook --sandbox rewrites a
client's shell command to run under it.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError()
			}
			return nil
		},
		RunE: paramsRunE(&p, runExec, std),
	}
	p.sf.add(c.Flags())
	c.Flags().DurationVar(&p.timeout, "timeout", 0, "the `DURATION` the command may run (default the session's, 60s)")
	c.Flags().SetInterspersed(false)
	return c
}

func (p *execParams) validate([]string) error {
	if p.timeout < 0 {
		return failedf(exitUsage, "--timeout %s: a time limit is positive", p.timeout)
	}
	return nil
}

// runExec runs argv as the one call of a session.
func runExec(ctx context.Context, argv []string, p execParams, std stdio) error {
	defer p.sf.opa.close()
	ctx, stop, err := p.sf.otel.start(ctx, std.err)
	if err != nil {
		return err
	}
	defer stop()
	s, _, err := p.sf.open(ctx, std)
	if err != nil {
		return err
	}
	defer s.End("stopped by an internal error")
	dir, err := os.Getwd()
	if err != nil {
		return failed(exitFailed, err)
	}
	call := &runtime.Call{Tool: runtime.ExecTool.Name, Timeout: p.timeout, Exec: &runtime.ExecRequest{Argv: argv, Dir: dir}}
	res, err := s.Run(ctx, call)
	red := s.Redactor()
	if endErr := s.End(endReason(ctx, "done")); endErr != nil && err == nil {
		return failedf(exitFailed, "closing the session: %w", endErr)
	}
	var refused *runtime.RefusedError
	switch {
	case errors.As(err, &refused):
		// What the command's caller reads is often the agent's: the
		// reason and rule, never the edit that would permit it.
		fmt.Fprintf(std.err, "chock exec: refused: %s\n", safetext.Line(red.String(refused.Reason)))
		return reported(exitRefused)
	case err != nil:
		return failed(exitFailed, errors.New(red.String(err.Error())))
	}
	std.raw.Write([]byte(res.Stdout))
	std.err.Write([]byte(res.Stderr))
	for _, l := range res.Network {
		fmt.Fprintf(std.err, "chock exec: %s\n", safetext.Line(l))
	}
	if res.TimedOut {
		fmt.Fprintln(std.err, "chock exec: the time limit was reached")
	}
	if res.Truncated {
		fmt.Fprintln(std.err, "chock exec: output cut at 1 MiB")
	}
	if res.ExitCode != 0 {
		return reported(res.ExitCode)
	}
	return nil
}
