package runtime

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
)

func TestTerminalAsker(t *testing.T) {
	d := &eval.Decision{Action: "exec.path.ls", Decision: config.Ask, Layers: []eval.Layer{{Layer: "project", Name: "project", Decision: config.Ask}}}
	q := Question{Action: "exec.path.ls", Explanation: eval.Explain(d, nil)}
	for input, want := range map[string]bool{"y\n": true, "yes\n": true, "n\n": false, "\n": false, "": false, "maybe\n": false} {
		var out strings.Builder
		a := &TerminalAsker{In: strings.NewReader(input), Out: &out}
		got, err := a.Ask(context.Background(), q)
		if err != nil || got != want {
			t.Errorf("%q: %v %v", input, got, err)
		}
		if !strings.Contains(out.String(), "Allow exec.path.ls this once? [y/N]") || !strings.Contains(out.String(), "exec.path.ls at loop: ASK") {
			t.Errorf("prompt: %q", out.String())
		}
	}
}

// TestTerminalAskerGivenUp: a question whose caller gives up leaves its
// read under way; the next question takes the line typed, and no second
// read of the terminal runs beside the first.
func TestTerminalAskerGivenUp(t *testing.T) {
	pr, pw := io.Pipe()
	var out strings.Builder
	a := &TerminalAsker{In: pr, Out: &out}
	d := &eval.Decision{Action: "exec.path.ls", Decision: config.Ask, Layers: []eval.Layer{{Layer: "project", Name: "project", Decision: config.Ask}}}
	q := Question{Action: "exec.path.ls", Explanation: eval.Explain(d, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, err := a.Ask(ctx, q); ok || err == nil {
		t.Fatalf("a question given up = %v, %v", ok, err)
	}
	go pw.Write([]byte("y\n"))
	if ok, err := a.Ask(context.Background(), q); !ok || err != nil {
		t.Fatalf("the next question = %v, %v", ok, err)
	}
}

// TestTerminalAskerSaysTheRuleOnce: the resolution rule is said with the
// first question of a session only.
func TestTerminalAskerSaysTheRuleOnce(t *testing.T) {
	d := &eval.Decision{Action: "exec.path.ls", Decision: config.Ask, Layers: []eval.Layer{{Layer: "project", Name: "project", Decision: config.Ask}}}
	q := Question{Action: "exec.path.ls", Explanation: eval.Explain(d, nil)}
	var out strings.Builder
	a := &TerminalAsker{In: strings.NewReader("n\nn\n"), Out: &out}
	for range 2 {
		if _, err := a.Ask(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(out.String(), eval.Resolution); n != 1 {
		t.Errorf("the resolution rule is said %d times in two questions:\n%s", n, out.String())
	}
	if n := strings.Count(out.String(), "exec.path.ls at loop: ASK"); n != 2 {
		t.Errorf("%d explanations in two questions", n)
	}
}
