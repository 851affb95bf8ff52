package main

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/diff"
	"github.com/chockhq/chock/internal/safetext"
	"github.com/chockhq/chock/runtime"
)

// guard keeps a policy that is followed from widening itself: the files
// a running session follows may be written by what the session runs (a
// local MCP server, the client's own tools), so an edit is swapped in only
// when the diff engine shows it widens nothing. One that widens anything
// (a region's decision, a secret offer, a server, a .programs entry) is
// held: the running policy stays, every session's log records policy.held
// with the widenings, stderr tells the person, and with --ask prompt the
// person may accept it at the terminal (never through the agent's channel).
type guard struct {
	mu      sync.Mutex
	running diff.Side
	// known says running holds the running policy's sources; a policy
	// from bundles has none, and then no edit can be shown to narrow.
	known bool
	// prompter is the terminal, with --ask prompt; nil otherwise.
	prompter *runtime.TerminalAsker
}

// newGuard guards the policy of cfg and orgs (cfg nil: from bundles).
func newGuard(cfg *config.Config, orgs []*config.Org, prompter *runtime.TerminalAsker) *guard {
	return &guard{running: diff.Side{Config: cfg, Orgs: orgs}, known: cfg != nil, prompter: prompter}
}

// heldError is an edit that is not swapped in because it widens.
type heldError struct{ widenings []string }

func (e *heldError) Error() string {
	return fmt.Sprintf("the edit widens what the agent may do (%s)", strings.Join(e.widenings, "; "))
}

// admit says whether the policy of cfg and orgs (cfg nil: from bundles)
// may replace the running one, asking the person at the terminal when it
// widens and there is one: nil when it may, a *heldError when it is held.
// It records it as running when admitted.
func (g *guard) admit(ctx context.Context, cfg *config.Config, orgs []*config.Org) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var widens []string
	switch {
	case !g.known || cfg == nil:
		widens = []string{"a compiled bundle replaced: chock cannot show a bundle only narrows, so it is held as a widening"}
	default:
		rep, err := diff.Diff(g.running, diff.Side{Config: cfg, Orgs: orgs}, diff.Options{})
		if err != nil {
			widens = []string{fmt.Sprintf("the change could not be worked out (%v), so it is held as a widening", err)}
		} else {
			widens = rep.Widenings()
		}
	}
	if len(widens) > 0 {
		held := &heldError{widenings: safeLines(widens)}
		if g.prompter == nil {
			return held
		}
		ok, err := g.prompter.Confirm(ctx, "chock mcp serve: the policy's files changed, and "+held.Error()+".\nSwap the edited policy in?")
		if err != nil || !ok {
			return held
		}
	}
	g.running, g.known = diff.Side{Config: cfg, Orgs: orgs}, cfg != nil
	return nil
}

// safeLines shows each line as one line: an edit's text is untrusted.
func safeLines(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = safetext.Line(l)
	}
	return out
}
