package eval

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/action"
)

// TestOffersAgreeWithConfig: the secrets the compiled policy offers a call
// or a server (data.chock.secrets, what the run time asks) are those
// config.Secret's OfferedToCall and OfferedToServer name, which chock diff
// and chock reach compare; random .to patterns, random targets.
func TestOffersAgreeWithConfig(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 3))
	words := []string{"exec", "path", "mcp", "gh", "s1", "s2", "tool"}
	ctx := context.Background()
	for round := 0; round < 12; round++ {
		var secrets []string
		for i := 0; i < 12; i++ {
			var to string
			for {
				segs := make([]string, 1+r.IntN(4))
				for k := range segs {
					if r.IntN(3) == 0 {
						segs[k] = "*"
					} else {
						segs[k] = words[r.IntN(len(words))]
					}
				}
				segs[0] = []string{"exec", "mcp"}[r.IntN(2)]
				to = strings.Join(segs, ".")
				if _, err := action.ParsePattern(to); err == nil {
					break
				}
			}
			secrets = append(secrets, fmt.Sprintf(`.{ .name = "S%d", .to = %q }`, i, to))
		}
		e, c := build(t, `.{ .secrets = .{ `+strings.Join(secrets, ", ")+` } }`)
		names := func(list []Secret) string {
			var out []string
			for _, s := range list {
				out = append(out, s.Name)
			}
			return strings.Join(out, ",")
		}
		for k := 0; k < 40; k++ {
			a := action.Action{"exec"}
			for n := r.IntN(4); n > 0; n-- {
				a = append(a, words[r.IntN(len(words))])
			}
			got, err := e.Secrets(ctx, Target{Action: a.String()})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range c.Secrets {
				if s.OfferedToCall(a) {
					want = append(want, s.Name.Value)
				}
			}
			if names(got) != strings.Join(want, ",") {
				t.Fatalf("round %d: %s is offered %s by the policy, %v by config", round, a, names(got), want)
			}
		}
		for _, server := range []string{"s1", "s2", "gh"} {
			got, err := e.Secrets(ctx, Target{Server: server})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range c.Secrets {
				if s.OfferedToServer(server) {
					want = append(want, s.Name.Value)
				}
			}
			if names(got) != strings.Join(want, ",") {
				t.Fatalf("round %d: server %s is offered %s by the policy, %v by config", round, server, names(got), want)
			}
		}
	}
}
