package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
)

// words are the literals of random patterns; "x" is also the fresh
// segment a witness is made of, so witnesses must step around it.
var words = []string{"exec", "path", "gh", "curl", "mcp", "tool", "use", "x"}

func randPattern(r *rand.Rand) action.Pattern {
	for {
		n := 1 + r.IntN(5)
		segs := make([]string, n)
		for i := range segs {
			if r.IntN(3) == 0 {
				segs[i] = "*"
			} else {
				segs[i] = words[r.IntN(len(words))]
			}
		}
		if r.IntN(3) == 0 && n > 1 {
			segs[0] = "exec" // secrets and program regions live under exec.path
			if r.IntN(2) == 0 {
				segs[1] = "path"
			}
		}
		if p, err := action.ParsePattern(strings.Join(segs, ".")); err == nil {
			return p
		}
	}
}

func randAction(r *rand.Rand) action.Action {
	a := make(action.Action, 1+r.IntN(7))
	for i := range a {
		if r.IntN(5) == 0 {
			a[i] = fmt.Sprintf("fresh%d", r.IntN(2))
		} else {
			a[i] = words[r.IntN(len(words))]
		}
	}
	if r.IntN(3) == 0 && len(a) > 2 {
		a[0], a[1] = "exec", "path"
	}
	return a
}

func randDecision(r *rand.Rand) config.Decision { return config.Decision(r.IntN(3)) }

func randRule(r *rand.Rand) *config.Rule {
	return &config.Rule{Pattern: randPattern(r), Decision: randDecision(r)}
}

func randPolicy(r *rand.Rand, maxRules int) config.Policy {
	var p config.Policy
	if r.IntN(2) == 0 {
		p.Default = config.Field[config.Decision]{Value: randDecision(r), Set: true}
	}
	for i := 0; i < 1+r.IntN(maxRules); i++ {
		p.Rules = append(p.Rules, randRule(r))
	}
	return p
}

func randSecret(r *rand.Rand) *config.Secret {
	p := randPattern(r)
	if r.IntN(4) == 0 {
		p = action.MustPattern([]string{"mcp.*", "mcp.s1.*", "mcp.*.*", "mcp.s2.tool.x"}[r.IntN(4)])
	}
	return &config.Secret{
		Name:      config.Text{Value: []string{"A", "B", "C"}[r.IntN(3)]},
		To:        config.Text{Value: p.String()},
		ToPattern: config.Field[action.Pattern]{Value: p, Set: true},
		Bind:      config.Field[config.Bind]{Value: config.Bind(r.IntN(3))},
	}
}

func randSide(r *rand.Rand) Side {
	c := &config.Config{File: "chock.zon", Policy: randPolicy(r, 12)}
	for i := 0; i < r.IntN(4); i++ {
		c.Secrets = append(c.Secrets, randSecret(r))
	}
	for _, n := range []string{"s1", "s2"} {
		if r.IntN(2) == 0 {
			c.Servers = append(c.Servers, &config.Server{Name: config.Text{Value: n}, URL: config.Text{Value: "https://" + n + ".example.com/mcp", Set: true}})
		}
	}
	var orgs []*config.Org
	for i := 0; i < r.IntN(3); i++ {
		orgs = append(orgs, &config.Org{File: "org.zon", Name: config.Text{Value: []string{"acme", "beta"}[i]}, Policy: randPolicy(r, 6)})
	}
	return Side{Config: c, Orgs: orgs}
}

// copySide copies a side deeply enough to mutate the copy.
func copySide(s Side) Side {
	cp := func(p config.Policy) config.Policy {
		q := p
		q.Rules = nil
		for _, r := range p.Rules {
			x := *r
			q.Rules = append(q.Rules, &x)
		}
		return q
	}
	c := *s.Config
	c.Policy = cp(s.Config.Policy)
	c.Secrets = slices.Clone(s.Config.Secrets)
	c.Servers = slices.Clone(s.Config.Servers)
	out := Side{Config: &c}
	for _, o := range s.Orgs {
		x := *o
		x.Policy = cp(o.Policy)
		out.Orgs = append(out.Orgs, &x)
	}
	return out
}

// mutate makes a few edits of the kinds a pull request makes.
func mutate(r *rand.Rand, s Side) Side {
	s = copySide(s)
	pol := func() *config.Policy {
		if len(s.Orgs) > 0 && r.IntN(3) == 0 {
			return &s.Orgs[r.IntN(len(s.Orgs))].Policy
		}
		return &s.Config.Policy
	}
	for n := 1 + r.IntN(3); n > 0; n-- {
		switch p := pol(); r.IntN(9) {
		case 0, 1:
			p.Rules = append(p.Rules, randRule(r))
		case 2:
			if len(p.Rules) > 0 {
				i := r.IntN(len(p.Rules))
				p.Rules = slices.Delete(p.Rules, i, i+1)
			}
		case 3, 4:
			if len(p.Rules) > 0 {
				p.Rules[r.IntN(len(p.Rules))].Decision = randDecision(r)
			}
		case 5:
			p.Default = config.Field[config.Decision]{Value: randDecision(r), Set: true}
		case 6:
			if len(s.Orgs) < 2 && r.IntN(2) == 0 {
				s.Orgs = append(s.Orgs, &config.Org{File: "new-org.zon", Name: config.Text{Value: "gamma"}, Policy: randPolicy(r, 4)})
			} else if len(s.Orgs) > 0 {
				s.Orgs = s.Orgs[:len(s.Orgs)-1]
			}
		case 7:
			s.Config.Secrets = append(s.Config.Secrets, randSecret(r))
		case 8:
			if k := len(s.Config.Secrets); k > 0 {
				i := r.IntN(k)
				s.Config.Secrets = slices.Delete(s.Config.Secrets, i, i+1)
			} else if len(s.Config.Servers) > 0 {
				s.Config.Servers = s.Config.Servers[1:]
			}
		}
	}
	return s
}

func offerKeys(c *config.Config, given func(*config.Secret) bool) []string {
	var out []string
	for _, s := range c.Secrets {
		if given(s) {
			out = append(out, offerOf(s).key())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func keys(list []Offer) []string {
	var out []string
	for _, o := range list {
		out = append(out, o.key())
	}
	slices.Sort(out)
	return out
}

// minus is a without b (both sorted, no repeats).
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// TestExactAgainstBruteForce: on random policy pairs (orgs included, a
// default changed now and then, secrets and servers), every random action
// whose decision changed in a phase lies in exactly one reported region of
// that phase, with its old and new decisions; every action in a reported
// region changed as reported; every witness really changed; secret offers
// likewise; and a policy compared with itself reports nothing.
func TestExactAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 2026))
	const pairs, probes = 600, 2000
	actions := 0
	for round := 0; round < pairs; round++ {
		old := randSide(r)
		var cur Side
		switch r.IntN(10) {
		case 0:
			cur = copySide(old) // the same policy: nothing to report
		case 1, 2:
			cur = randSide(r)
		default:
			cur = mutate(r, old)
		}
		rep, err := Diff(old, cur, Options{})
		if err != nil {
			t.Fatal(err)
		}
		oe, ne := native.New(old.Config, old.Orgs), native.New(cur.Config, cur.Orgs)
		for _, c := range rep.Changes {
			w, _ := action.ParseAction(c.Witness)
			if !c.Contains(w) {
				t.Fatalf("round %d: witness %s is not in region %s", round, w, c.Where(-1))
			}
			od, nd := oe.Decide(w, c.Phase).Decision, ne.Decide(w, c.Phase).Decision
			if od != c.Old || nd != c.New || od == nd {
				t.Fatalf("round %d: %s at %v reported %v -> %v, is %v -> %v", round, w, c.Phase, c.Old, c.New, od, nd)
			}
			if (c.Kind == Widened) != (nd > od) {
				t.Fatalf("round %d: kind %s for %v -> %v", round, c.Kind, od, nd)
			}
		}
		for _, s := range rep.Secrets {
			if s.Region == nil {
				continue
			}
			w, _ := action.ParseAction(s.Witness)
			if !s.Contains(w) {
				t.Fatalf("round %d: witness %s not in %s", round, w, s.Region)
			}
			o := offerKeys(old.Config, func(x *config.Secret) bool { return x.OfferedToCall(w) })
			n := offerKeys(cur.Config, func(x *config.Secret) bool { return x.OfferedToCall(w) })
			if !slices.Equal(minus(n, o), keys(s.Added)) || !slices.Equal(minus(o, n), keys(s.Removed)) || len(s.Added)+len(s.Removed) == 0 {
				t.Fatalf("round %d: %s offered %v -> %v, reported +%v -%v", round, w, o, n, keys(s.Added), keys(s.Removed))
			}
		}
		for k := 0; k < probes; k++ {
			a := randAction(r)
			actions++
			for _, phase := range []config.Phase{config.Loop, config.Start} {
				od, nd := oe.Decide(a, phase).Decision, ne.Decide(a, phase).Decision
				var in []Change
				for _, c := range rep.Changes {
					if c.Phase == phase && c.Contains(a) {
						in = append(in, c)
					}
				}
				switch {
				case len(in) > 1:
					t.Fatalf("round %d: %s at %v lies in %d reported regions", round, a, phase, len(in))
				case od != nd && len(in) == 0:
					t.Fatalf("round %d: %s at %v changed %v -> %v and no region says so (%d regions compared)", round, a, phase, od, nd, rep.Regions)
				case len(in) == 1 && (in[0].Old != od || in[0].New != nd):
					t.Fatalf("round %d: %s at %v is %v -> %v, its region %s says %v -> %v", round, a, phase, od, nd, in[0].Where(-1), in[0].Old, in[0].New)
				case len(in) == 1 && (in[0].OldRule != decider(oe.Decide(a, phase)) || in[0].NewRule != decider(ne.Decide(a, phase))):
					t.Fatalf("round %d: %s at %v is decided by %v, then %v; its region %s says %v, then %v", round, a, phase,
						decider(oe.Decide(a, phase)), decider(ne.Decide(a, phase)), in[0].Where(-1), in[0].OldRule, in[0].NewRule)
				}
			}
			if len(a) > 2 && a[0] == "exec" && a[1] == "path" {
				o := offerKeys(old.Config, func(x *config.Secret) bool { return x.OfferedToCall(a) })
				n := offerKeys(cur.Config, func(x *config.Secret) bool { return x.OfferedToCall(a) })
				var in []SecretChange
				for _, s := range rep.Secrets {
					if s.Contains(a) {
						in = append(in, s)
					}
				}
				switch {
				case len(in) > 1:
					t.Fatalf("round %d: %s lies in %d secret regions", round, a, len(in))
				case !slices.Equal(o, n) && len(in) == 0:
					t.Fatalf("round %d: %s offered %v -> %v and no region says so", round, a, o, n)
				case len(in) == 1 && (!slices.Equal(minus(n, o), keys(in[0].Added)) || !slices.Equal(minus(o, n), keys(in[0].Removed))):
					t.Fatalf("round %d: %s offered %v -> %v, its region says +%v -%v", round, a, o, n, keys(in[0].Added), keys(in[0].Removed))
				}
			}
		}
		for _, name := range []string{"s1", "s2"} {
			has := func(c *config.Config) bool {
				return slices.ContainsFunc(c.Servers, func(s *config.Server) bool { return s.Name.Value == name })
			}
			given := func(c *config.Config) []string {
				if !has(c) {
					return nil
				}
				return offerKeys(c, func(x *config.Secret) bool { return x.OfferedToServer(name) })
			}
			o, n := given(old.Config), given(cur.Config)
			i := slices.IndexFunc(rep.Secrets, func(s SecretChange) bool { return s.Server == name })
			if slices.Equal(o, n) != (i < 0) || (i >= 0 && (!slices.Equal(minus(n, o), keys(rep.Secrets[i].Added)) || !slices.Equal(minus(o, n), keys(rep.Secrets[i].Removed)))) {
				t.Fatalf("round %d: server %s offered %v -> %v, reported %+v", round, name, o, n, rep.Secrets)
			}
			j := slices.IndexFunc(rep.Servers, func(s ServerChange) bool { return s.Name == name })
			if (has(old.Config) == has(cur.Config)) != (j < 0) {
				t.Fatalf("round %d: server %s there %v -> %v, reported %+v", round, name, has(old.Config), has(cur.Config), rep.Servers)
			}
		}
		same, err := Diff(old, copySide(old), Options{})
		if err != nil || !same.Empty() || same.Regions != 0 {
			t.Fatalf("round %d: a policy against itself: %+v %v", round, same, err)
		}
	}
	t.Logf("%d policy pairs, %d random actions x 2 phases: every change in a reported region, every witness changed", pairs, actions)
}

// TestCoalescingKeepsChangesApart: on the random policy pairs of
// TestExactAgainstBruteForce, coalescing never merges regions whose change
// differs: every region of the exact report (its witness) lies in exactly
// one coalesced change of its phase, with the same decisions and rules,
// and the same phases; every coalesced region's exceptions hold none of
// its actions; and no report grows.
func TestCoalescingKeepsChangesApart(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 2026))
	merged := 0
	for round := 0; round < 600; round++ {
		old := randSide(r)
		cur := mutate(r, old)
		if r.IntN(4) == 0 {
			cur = randSide(r)
		}
		fine, err := diff(old, cur, Options{}, false)
		if err != nil {
			t.Fatal(err)
		}
		coarse, err := diff(old, cur, Options{}, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(coarse.Changes) > len(fine.Changes) {
			t.Fatalf("round %d: coalescing made %d changes of %d", round, len(coarse.Changes), len(fine.Changes))
		}
		phases := func(rep *Report, w action.Action) []config.Phase {
			var ps []config.Phase
			for _, c := range rep.Changes {
				if c.Contains(w) {
					ps = append(ps, c.Phase)
				}
			}
			return ps
		}
		for _, f := range fine.Changes {
			w, _ := action.ParseAction(f.Witness)
			var in []Change
			for _, c := range coarse.Changes {
				if c.Phase == f.Phase && c.Contains(w) {
					in = append(in, c)
				}
			}
			if len(in) != 1 {
				t.Fatalf("round %d: %s (of %s) lies in %d coalesced changes at %v", round, w, f.Region, len(in), f.Phase)
			}
			c := in[0]
			if c.Old != f.Old || c.New != f.New || c.OldRule != f.OldRule || c.NewRule != f.NewRule || c.Kind != f.Kind {
				t.Fatalf("round %d: %s: %s %v -> %v (%v, %v) coalesced into %s %v -> %v (%v, %v)", round, w, f.Region, f.Old, f.New, f.OldRule, f.NewRule,
					c.Where(-1), c.Old, c.New, c.OldRule, c.NewRule)
			}
			if !slices.Equal(phases(fine, w), phases(coarse, w)) {
				t.Fatalf("round %d: %s changes at %v, coalesced at %v", round, w, phases(fine, w), phases(coarse, w))
			}
		}
		for _, f := range fine.Secrets {
			if f.Region == nil {
				continue
			}
			w, _ := action.ParseAction(f.Witness)
			var in []SecretChange
			for _, c := range coarse.Secrets {
				if c.Contains(w) {
					in = append(in, c)
				}
			}
			if len(in) != 1 || offerKey(in[0].Added, in[0].Removed) != offerKey(f.Added, f.Removed) {
				t.Fatalf("round %d: %s's offers (of %s) lie in %d coalesced changes: %+v", round, w, f.Region, len(in), in)
			}
		}
		for _, c := range coarse.Changes {
			if len(c.Except) > 0 || c.Except != nil {
				merged++
			}
			for _, e := range c.Except {
				if c.Contains(e.Witness()) {
					t.Fatalf("round %d: %s holds its exception's witness %s", round, c.Where(-1), e.Witness())
				}
				if !c.Region.Contains(e.Witness()) {
					t.Fatalf("round %d: %s names an exception %s outside it", round, c.Where(-1), e)
				}
			}
		}
	}
	if merged == 0 {
		t.Fatal("no random pair coalesced anything: the test tests nothing")
	}
	t.Logf("%d coalesced changes", merged)
}

// TestCoalescedAllowEveryProgram: one added allow exec.path.* is one
// change, not a row per program the policy names.
func TestCoalescedAllowEveryProgram(t *testing.T) {
	side := func(allow ...string) Side {
		c := &config.Config{File: "chock.zon"}
		c.Policy.Default = config.Field[config.Decision]{Value: config.Deny}
		for _, a := range allow {
			p, err := action.ParsePattern(a)
			if err != nil {
				t.Fatal(err)
			}
			c.Policy.Rules = append(c.Policy.Rules, &config.Rule{Pattern: p, Decision: config.Allow})
		}
		for _, d := range []string{"exec.path.curl", "exec.path.rm"} {
			p, _ := action.ParsePattern(d)
			c.Policy.Rules = append(c.Policy.Rules, &config.Rule{Pattern: p, Decision: config.Deny})
		}
		return Side{Config: c}
	}
	rep, err := Diff(side("exec.path.gh", "exec.path.git.status"), side("exec.path.gh", "exec.path.git.status", "exec.path.*"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var where []string
	for _, c := range rep.Changes {
		where = append(where, fmt.Sprintf("%s at %v", c.Where(-1), c.Phase))
	}
	want := []string{"exec.path.* except exec.path.curl, exec.path.gh, exec.path.git.status, exec.path.rm at loop",
		"exec.path.* except exec.path.curl, exec.path.gh, exec.path.git.status, exec.path.rm at start"}
	if !slices.Equal(where, want) {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(where, "\n"), strings.Join(want, "\n"))
	}
}

// TestArgsRulesDiff: a rule with .args added, removed or decided
// otherwise is one entry, widened or narrowed as a call's arguments
// would be decided.
func TestArgsRulesDiff(t *testing.T) {
	side := func(src string) Side {
		c, ds := config.Load("chock.zon", []byte(src))
		if c == nil || ds.HasErrors() {
			t.Fatalf("%v", ds)
		}
		return Side{Config: c}
	}
	plain := side(`.{ .policy = .{ .allow = .{"exec.path.git"} } }`)
	push := side(`.{ .policy = .{ .allow = .{"exec.path.git"}, .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{"push"} } } } }`)
	pushAsk := side(`.{ .policy = .{ .allow = .{"exec.path.git"}, .rules = .{ .{ .action = "exec.path.git", .decision = .ask, .args = .{"push"} } } } }`)
	for _, tc := range []struct {
		name          string
		before, after Side
		want          string
	}{
		{"added", plain, push, `narrowed project rule exec.path.git .args = .{ "push" } added: deny`},
		{"removed", push, plain, `WIDENED  project rule exec.path.git .args = .{ "push" } removed: it was deny`},
		{"loosened", push, pushAsk, `WIDENED  project rule exec.path.git .args = .{ "push" }  deny -> ask at loop and start`},
		{"same", push, push, "no change"},
	} {
		rep, err := Diff(tc.before, tc.after, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		rep.WriteText(&b)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("%s:\n%s\nwant a line with %q", tc.name, b.String(), tc.want)
		}
		if rep.Widened() != strings.HasPrefix(tc.want, "WIDENED") {
			t.Errorf("%s: Widened() is %v", tc.name, rep.Widened())
		}
	}
}
