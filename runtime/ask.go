package runtime

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval"
)

// Question is an ask decision put to a person.
type Question struct {
	Action      string
	Phase       config.Phase
	Explanation *eval.Explanation
}

// Asker answers ask decisions. An answer holds for that one decision: it
// is never remembered, within the session or past it.
type Asker interface {
	Ask(ctx context.Context, q Question) (bool, error)
}

// DenyAsker refuses every ask: the default where nobody is at a terminal.
type DenyAsker struct{}

// Ask refuses.
func (DenyAsker) Ask(context.Context, Question) (bool, error) { return false, nil }

// TerminalAsker puts the question on a terminal with the explanation
// chock explain gives, and reads y or n. One question is put at a time
// (its caller sees to that).
type TerminalAsker struct {
	In      io.Reader
	Out     io.Writer
	Sources diag.Sources
	r       *bufio.Reader
	// pending is a read still under way for a question whose caller gave
	// up (its context ended): the next question takes its line, rather
	// than starting a second read of the same terminal beside it.
	pending chan termLine
	// mu puts one question at a time to the terminal.
	mu sync.Mutex
	// explained is set once a question has said the resolution rule: the
	// questions after it leave it out.
	explained bool
}

type termLine struct {
	line string
	err  error
}

// Ask prompts and reads one answer; anything but y or yes is no.
func (t *TerminalAsker) Ask(ctx context.Context, q Question) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.r == nil {
		t.r = bufio.NewReader(t.In)
	}
	fmt.Fprintf(t.Out, "\nThe policy asks before %s:\n\n", q.Action)
	q.Explanation.WriteTextWith(t.Out, t.Sources, eval.TextOptions{Resolution: !t.explained, Hint: true})
	t.explained = true
	fmt.Fprintf(t.Out, "\nAllow %s this once? [y/N] ", q.Action)
	return t.answer(ctx)
}

// Confirm writes text, asks [y/N] and reads one answer; anything but y or
// yes is no. It is for the person at the terminal, never the agent.
func (t *TerminalAsker) Confirm(ctx context.Context, text string) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.r == nil {
		t.r = bufio.NewReader(t.In)
	}
	fmt.Fprintf(t.Out, "\n%s [y/N] ", text)
	return t.answer(ctx)
}

// answer reads one line of answer, or gives up when ctx ends (the read
// left for the next question).
func (t *TerminalAsker) answer(ctx context.Context) (bool, error) {
	ch := t.pending
	if ch == nil {
		ch = make(chan termLine, 1)
		go func() {
			line, err := t.r.ReadString('\n')
			ch <- termLine{line, err}
		}()
	}
	t.pending = nil
	select {
	case <-ctx.Done():
		t.pending = ch
		return false, ctx.Err()
	case a := <-ch:
		if a.err != nil && a.line == "" {
			if errors.Is(a.err, io.EOF) {
				return false, nil
			}
			return false, a.err
		}
		s := strings.ToLower(strings.TrimSpace(a.line))
		return s == "y" || s == "yes", nil
	}
}
