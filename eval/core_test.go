package eval

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/open-policy-agent/opa/v1/rego"
)

// corePolicy is a project and its orgs, as sources.
type corePolicy struct {
	name    string
	project string
	orgs    []string
}

// randomPolicy is a project of n rules and two orgs of n/4 rules each, of
// random shapes over a few segments: literals, a literal holding glob
// metacharacters, inner and trailing '*'.
func randomPolicy(n int, seed uint64) corePolicy {
	r := rand.New(rand.NewPCG(seed, 11))
	segs := []string{"exec", "mcp", "a", "b", "[::1]", "*", "*"}
	pattern := func() string {
		for {
			k := 1 + r.IntN(5)
			parts := make([]string, k)
			for i := range parts {
				parts[i] = segs[r.IntN(len(segs))]
			}
			p := strings.Join(parts, ".")
			if _, err := action.ParsePattern(p); err == nil {
				return p
			}
		}
	}
	layer := func(n int, withDefault bool) string {
		var b strings.Builder
		b.WriteString(".policy = .{ ")
		if withDefault {
			fmt.Fprintf(&b, ".default = .%s, ", []string{"allow", "ask", "deny"}[r.IntN(3)])
		}
		b.WriteString(".rules = .{ ")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, ".{ .action = %q, .decision = .%s, .why = \"r%d\" }, ", pattern(), []string{"allow", "ask", "deny"}[r.IntN(3)], i)
		}
		b.WriteString("} }")
		return b.String()
	}
	return corePolicy{fmt.Sprintf("random%d", seed), ".{ " + layer(n, true) + " }",
		[]string{`.{ .name = "o1", ` + layer(n/4, true) + ` }`, `.{ .name = "o2", ` + layer(n/4, false) + ` }`}}
}

// segmentsOf are the distinct segments of a policy's patterns, and x.
func segmentsOf(c *config.Config, orgs []*config.Org) []string {
	set := map[string]bool{"x": true}
	add := func(p *config.Policy) {
		for _, r := range p.Rules {
			for _, s := range r.Pattern.Segments() {
				if s != "*" {
					set[s] = true
				}
			}
		}
	}
	add(&c.Policy)
	for _, o := range orgs {
		add(&o.Policy)
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// nativeDecision is the native matcher's decision in Decision's shape.
func nativeDecision(a string, phase config.Phase, r native.Result) *Decision {
	d := &Decision{Action: a, Phase: phase, Decision: r.Decision, StartRefusal: r.StartRefusal}
	for _, lr := range r.Layers {
		l := Layer{Layer: lr.Layer.Kind, Name: lr.Layer.Name, Decision: lr.Decision, Default: lr.Rule == nil}
		if lr.Rule != nil {
			l.Rule = &Rule{Pattern: lr.Rule.Pattern.String(), Decision: lr.Rule.Decision, Why: lr.Rule.Why.Value, Span: lr.Rule.Span}
			if lr.Rule.Args != nil {
				l.Rule.Args = lr.Rule.Args.String()
			}
		} else if lr.Layer.Policy.Default.Set {
			sp := lr.Layer.Policy.Default.Span
			l.DefaultSpan = &sp
		}
		d.Layers = append(d.Layers, l)
	}
	if r.CappedBy != nil {
		name := r.CappedBy.Name
		d.CappedBy = &name
	}
	return d
}

// TestCoreMatchesNative is the property test of the compact query: on
// random actions drawn from each policy's own segments, at both phases,
// the engine's decision (data.chock.core, filled in from the bundle's
// meta) equals the native matcher's, layers, deciding rules, positions
// and capping org included.
func TestCoreMatchesNative(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	policies := []corePolicy{
		{"examples", read("chock.zon"), []string{read("org.zon")}},
		{"seed", seedProject, []string{seedOrg}},
		{"empty", `.{}`, nil},
		randomPolicy(60, 1), randomPolicy(200, 2), randomPolicy(400, 3),
	}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for _, pol := range policies {
		t.Run(pol.name, func(t *testing.T) {
			e, c := build(t, pol.project, pol.orgs...)
			var orgs []*config.Org
			for i, o := range pol.orgs {
				org, _ := config.LoadOrg(fmt.Sprintf("org%d.zon", i+1), []byte(o))
				orgs = append(orgs, org)
			}
			ev := native.New(c, orgs)
			segs := segmentsOf(c, orgs)
			r := rand.New(rand.NewPCG(uint64(len(pol.name)), 5))
			p := e.cur.Load()
			for i := 0; i < n; i++ {
				parts := make([]string, 1+r.IntN(7))
				for j := range parts {
					parts[j] = segs[r.IntN(len(segs))]
				}
				a := strings.Join(parts, ".")
				phase := []config.Phase{config.Loop, config.Start}[i%2]
				got, err := p.decide(context.Background(), a, nil, phase)
				if err != nil {
					t.Fatal(err)
				}
				act, _ := action.ParseAction(a)
				if want := nativeDecision(a, phase, ev.Decide(act, phase)); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s at %s:\n core   %+v\n native %+v", a, phase, got, want)
				}
			}
		})
	}
}

// TestValidIsTheRegex: the engine's own check of an action (action.Valid)
// accepts exactly what the compiled policy's input check does.
func TestValidIsTheRegex(t *testing.T) {
	e, _ := build(t, `.{ .policy = .{ .allow = .{"exec.*"} } }`)
	p := e.cur.Load()
	c, _ := config.Load("chock.zon", []byte(`.{ .policy = .{ .allow = .{"exec.*"} } }`))
	out, err := compile.Compile(compile.Input{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	b, err := out.Bundle(nil)
	if err != nil {
		t.Fatal(err)
	}
	full, err := rego.New(rego.Query("data.chock.decision"), rego.ParsedBundle("chock", b)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cases := []string{"", ".", "a", "a.", ".a", "a..b", "a.b", "a*b", "a.*", "a b", "a\tb", "a\x7fb", "a\u0085b", "a\u00a0b", "a\u200bb",
		"a\ufffdb", "a\xffb", "é.ü", "a\u2028b", strings.Repeat("a.", action.MaxSegments-1) + "a", strings.Repeat("a.", action.MaxSegments) + "a"}
	r := rand.New(rand.NewPCG(9, 9))
	alphabet := []rune{'a', '.', '*', ' ', 0x7f, 0x85, 0xad, 0x200b, 0xfffd, 'é', 0x1f600}
	for i := 0; i < 3000; i++ {
		k := r.IntN(8)
		var b strings.Builder
		for j := 0; j < k; j++ {
			b.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, a := range cases {
		_, valid := action.Valid(a)
		_, perr := action.ParseAction(a)
		d, err := p.decide(context.Background(), a, nil, config.Loop)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := full.Eval(context.Background(), rego.EvalParsedInput(actionInput(a, config.Loop)))
		if err != nil || len(rs) != 1 {
			t.Fatal(rs, err)
		}
		fullErr, _ := rs[0].Expressions[0].Value.(map[string]any)["error"].(string)
		if valid != (perr == nil) || valid != (fullErr == "") || valid != (d.Error == "") || !valid && d.Error != fullErr {
			t.Fatalf("%q: Valid %v, ParseAction %v, data.chock.decision's error %q, the engine's %q", a, valid, perr, fullErr, d.Error)
		}
	}
}

// argsPolicy has rules with .args of every kind: an allow's prefix, a
// deny's and an ask's words anywhere, "*", alternatives, over a project
// and an org layer.
const argsPolicy = `.{
    .policy = .{
        .allow = .{ "exec.path.git", "exec.path.gh" },
        .rules = .{
            .{ .action = "exec.path.git", .decision = .deny, .args = .{ "push" } },
            .{ .action = "exec.path.git", .decision = .allow, .args = .{ "push", "--dry-run" } },
            .{ .action = "exec.path.git", .decision = .ask, .args = .{ "reset", .{ "--hard", "--merge" } } },
            .{ .action = "exec.path.*", .decision = .deny, .args = .{ "-rf", "*" } },
            .{ .action = "exec.path.gh", .decision = .deny, .args = .{ "pr", "merge" } },
            .{ .action = "exec.path.rm", .decision = .allow, .args = .{ "-i" } },
        },
    },
}`

const argsOrg = `.{ .name = "acme", .policy = .{ .default = .allow, .rules = .{
    .{ .action = "exec.path.git", .decision = .deny, .args = .{ "push", .{ "-f", "--force" } } },
} } }`

// TestCoreMatchesNativeArgs: for calls with random arguments, the
// engine's decision through data.chock.core, the full data.chock.decision
// entrypoint and the native matcher agree.
func TestCoreMatchesNativeArgs(t *testing.T) {
	e, ev, full := threeWays(t, argsPolicy, argsOrg)
	p := e.cur.Load()
	words := []string{"push", "--dry-run", "-f", "--force", "reset", "--hard", "--merge", "-rf", "pr", "merge", "-C", "x", "-i", "status", action.Unknown}
	progs := []string{"git", "gh", "rm", "ls"}
	r := rand.New(rand.NewPCG(4, 4))
	seen := map[config.Decision]int{}
	for i := 0; i < 4000; i++ {
		var args []string
		if i%50 != 0 {
			args = []string{}
			for k := r.IntN(5); k > 0; k-- {
				args = append(args, words[r.IntN(len(words))])
			}
		}
		a := "exec.path." + progs[r.IntN(len(progs))]
		got, err := p.decide(context.Background(), a, args, config.Loop)
		if err != nil {
			t.Fatal(err)
		}
		act, _ := action.ParseAction(a)
		want := nativeDecision(a, config.Loop, ev.DecideArgs(act, args, config.Loop))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s %q:\n core   %+v\n native %+v", a, args, got, want)
		}
		in := map[string]any{"action": a, "phase": "loop"}
		if args != nil {
			in["args"] = args
		}
		rs, err := full.Eval(context.Background(), rego.EvalInput(in))
		if err != nil || len(rs) != 1 {
			t.Fatal(rs, err)
		}
		if d := rs[0].Expressions[0].Value.(map[string]any)["decision"]; d != want.Decision.String() {
			t.Fatalf("%s %q: data.chock.decision says %v, native %s", a, args, d, want.Decision)
		}
		seen[want.Decision]++
	}
	if len(seen) != 3 {
		t.Errorf("the random calls reached only %v", seen)
	}
	// Many arguments cost the compiled match no more than a scan of them
	// (the greedy match; all pairs of positions took 30 s at 4000).
	many := make([]string, 4000)
	for i := range many {
		many[i] = action.Unknown
	}
	if d, err := p.decide(context.Background(), "exec.path.git", many, config.Loop); err != nil || d.Decision != config.Deny {
		t.Fatalf("4000 unknown arguments: %v %v", d, err)
	}
	// The cases the rules are for.
	for _, tc := range []struct {
		prog string
		args []string
		want config.Decision
	}{
		{"git", []string{"status"}, config.Allow},
		{"git", []string{"push"}, config.Deny},
		{"git", []string{"-C", "x", "push"}, config.Deny},
		{"git", []string{"-c", "a=b", "push", "origin"}, config.Deny},
		{"git", []string{"push", "--dry-run"}, config.Allow},
		{"git", []string{"push", "-f", "--dry-run"}, config.Deny}, // the org's force push
		{"git", []string{action.Unknown}, config.Deny},            // $X could be push
		{"git", []string{"reset", "--hard"}, config.Ask},
		{"git", nil, config.Allow}, // no arguments known: the action's decision
		{"rm", []string{"-i", "f"}, config.Allow},
		{"rm", []string{"-i", "-rf", "/"}, config.Allow}, // exec.path.rm is more specific than exec.path.*, whatever the .args
		{"ls", []string{"-rf", "/"}, config.Deny},
		{"rm", []string{"f", "-i"}, config.Deny}, // an allow's .args are the first arguments
	} {
		d, err := e.DecideArgs(context.Background(), "exec.path."+tc.prog, tc.args, config.Loop)
		if err != nil {
			t.Fatal(err)
		}
		if d.Decision != tc.want {
			t.Errorf("%s %q: %s, want %s (%s)", tc.prog, tc.args, d.Decision, tc.want, d.Decider().RuleText())
		}
	}
}

// TestOnlyDecidesAsWhole: a policy compiled for a few actions alone
// (compile.Input.Only, chock hook's) decides each of them as the whole
// policy does, arguments and file defaults included, and refuses to
// decide any other.
func TestOnlyDecidesAsWhole(t *testing.T) {
	ctx := context.Background()
	for _, pol := range []corePolicy{{"args", argsPolicy, []string{argsOrg}}, {"seed", seedProject, []string{seedOrg}}, randomPolicy(300, 7)} {
		t.Run(pol.name, func(t *testing.T) {
			whole, c := build(t, pol.project, pol.orgs...)
			var orgs []*config.Org
			for i, o := range pol.orgs {
				org, _ := config.LoadOrg(fmt.Sprintf("org%d.zon", i+1), []byte(o))
				orgs = append(orgs, org)
			}
			segs := append(segmentsOf(c, orgs), "fs", "read", "write", "~/.ssh/id_rsa", ".git/config", "git", "path", "exec")
			r := rand.New(rand.NewPCG(3, uint64(len(pol.name))))
			for i := 0; i < 60; i++ {
				var acts []string
				for k := 1 + r.IntN(3); k > 0; k-- {
					parts := make([]string, 1+r.IntN(4))
					for j := range parts {
						parts[j] = segs[r.IntN(len(segs))]
					}
					acts = append(acts, strings.Join(parts, "."))
				}
				acts = append(acts, "exec.path.git", "fs.write..git/config")
				in := input(t, pol.project, pol.orgs...)
				in.Only = acts
				out, err := compile.Compile(in)
				if err != nil {
					t.Fatal(err)
				}
				part, err := FromOutput(ctx, out)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range acts {
					for _, args := range [][]string{nil, {"push"}, {"-C", "x", "push"}} {
						want, err := whole.DecideArgs(ctx, a, args, config.Loop)
						if err != nil {
							t.Fatal(err)
						}
						got, err := part.DecideArgs(ctx, a, args, config.Loop)
						if err != nil {
							t.Fatal(err)
						}
						same := got.Decision == want.Decision && got.Error == want.Error && len(got.Layers) == len(want.Layers)
						for i := 0; same && i < len(got.Layers); i++ {
							same = reflect.DeepEqual(got.Layers[i], want.Layers[i])
						}
						if !same {
							t.Fatalf("%s %q compiled for %q:\n%s\nwhole:\n%s", a, args, acts, describeLayers(got), describeLayers(want))
						}
					}
				}
				if _, err := part.Decide(ctx, "exec.path.not-asked", config.Loop); !errors.Is(err, ErrUnavailable) {
					t.Fatalf("an action it was not compiled for: %v", err)
				}
			}
		})
	}
}

func describeLayers(d *Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", d.Decision, d.Error)
	for _, l := range d.Layers {
		fmt.Fprintf(&b, "\n  %s %s %s", l.Spelling(), l.Decision, l.RuleText())
	}
	return b.String()
}

// TestPathActionsMatchAsNative: an action that ends in a path (fs.read.,
// fs.write.) has its path as one segment, dots and all, in the compiled
// policy as in the native matcher: a pattern of '*' segments (an org's
// *.*.*.*, fs.*.*) matches it or not by that count. Before, OPA split the
// path at its dots, so an org's deny fs.*.* missed fs.read.~/.ssh/id_rsa.
func TestPathActionsMatchAsNative(t *testing.T) {
	project := `.{ .policy = .{ .default = .allow, .deny = .{ "*.*.*.*" }, .ask = .{ "*.write.*" } } }`
	org := `.{ .name = "acme", .policy = .{ .default = .allow, .rules = .{
    .{ .action = "fs.*.*", .decision = .deny },
    .{ .action = "fs.read.~/notes/**", .decision = .allow },
} } }`
	e, ev, full := threeWays(t, project, org)
	p := e.cur.Load()
	for _, a := range []string{"fs.read.~/.ssh/id_rsa", "fs.write..git/config", "fs.read./etc/hosts", "fs.read.~/notes/a.b.c", "fs.write.x", "exec.path.a.b", "exec.path.python3.12"} {
		act, err := action.ParseAction(a)
		if err != nil {
			t.Fatal(a, err)
		}
		want := nativeDecision(a, config.Loop, ev.Decide(act, config.Loop))
		got, err := p.decide(context.Background(), a, nil, config.Loop)
		if err != nil {
			t.Fatal(err)
		}
		if got.Decision != want.Decision || describeLayers(got) != describeLayers(want) {
			t.Errorf("%s:\n core   %s\n native %s", a, describeLayers(got), describeLayers(want))
		}
		rs, err := full.Eval(context.Background(), rego.EvalInput(map[string]any{"action": a}))
		if err != nil || len(rs) != 1 {
			t.Fatal(rs, err)
		}
		if d := rs[0].Expressions[0].Value.(map[string]any)["decision"]; d != want.Decision.String() {
			t.Errorf("%s: data.chock.decision says %v, native %s", a, d, want.Decision)
		}
	}
}

// TestRegoMatchesAreGoMatches: rule by rule, the compiled condition of a
// pattern (data.chock.core) matches exactly the actions its Go
// Pattern.Matches does, over path-shaped patterns, chock's file defaults
// and actions with dots, ~, / and .. in their paths. A policy compiled
// for some actions only (chock hook's) keeps the rules Matches keeps: a
// rule the Rego matched and Go did not would be left out, and decide
// differently.
func TestRegoMatchesAreGoMatches(t *testing.T) {
	pats := []string{
		"fs.*.*", "*.read.*", "fs.read.*", "fs.write.*", "*.*", "*.*.*", "*.*.*.*", "fs.*", "*.write.*",
		"fs.read.~/.ssh/**", "fs.read.**/.env", "fs.read.**/.env.*", "fs.read./etc/**", "fs.read.**", "fs.read.*.env",
		"fs.read.~/**", "fs.read./**", "fs.read.a/**/b", "fs.read.~*", "fs.write..git/**", "fs.read.a.*", "fs.read.x/*",
		"exec.path.python3.*", "exec.*.python3.12", "exec.path.*.12", "exec.*.*", "exec.path.*", "*.path.*", "*.path.git",
		"mcp.*.tool.*", "mcp.*.tool.search", "net.fetch.*.[::1]", "net.*.[::1]", "*.fetch.*",
		"fs.*.~/.ssh/id_rsa", "fs.*.a", "*.read.a", "*.read.~/", "fs.*.x.y", "*.*.~/.ssh/id_rsa",
		"fs.read.~/.ssh/id_rsa", "fs.read.~", "fs.read./", "*.read.a.b", "fs.*.a.b", "*.*.a.*", "fs.*.*.*",
		"exec.path.{a,b}", "exec.*.a?", "exec.*.[ab]",
	}
	var b strings.Builder
	b.WriteString(".{ .policy = .{ .default = .allow, .rules = .{ ")
	for i, p := range pats {
		fmt.Fprintf(&b, ".{ .action = %q, .decision = .deny, .why = \"r%d\" }, ", p, i)
	}
	b.WriteString("} } }")
	in := input(t, b.String())
	out, err := compile.Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	e, err := FromOutput(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	p := e.cur.Load()
	rules := config.WithBuiltins(&in.Config.Policy, "project").Rules
	n := int64(len(rules))
	segs := []string{"fs", "read", "write", "exec", "path", "python3", "12", "mcp", "tool", "search", "net", "fetch", "[::1]", "a", "b", "x", "y",
		"~/.ssh/id_rsa", "~/.env", ".env", "a/.env", "/etc/passwd", "~", "/", "~foo", "a.b", "a/b", "a/x/b", "x/y", "x.env", "~/", ".env.local",
		"...", "a..b", "a.", "{a,b}", "a?", "ab", ".git/config", "~/.env.x"}
	check := func(a string) {
		cnt, ok := action.Valid(a)
		if !ok {
			return
		}
		act, err := action.ParseAction(a)
		if err != nil {
			t.Fatalf("%s is valid but does not parse: %v", a, err)
		}
		rs, err := p.core.Eval(context.Background(), rego.EvalParsedInput(p.coreInput(a, cnt, nil)))
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]bool{}
		for _, x := range rs[0].Expressions[0].Value.([]any) {
			k, _ := ruleNumber(x)
			got[k%n] = true
		}
		for i, rl := range rules {
			if g := rl.Pattern.Matches(act); got[int64(i)] != g {
				t.Fatalf("%q on %q: the compiled policy %v, Pattern.Matches %v", rl.Pattern.String(), a, got[int64(i)], g)
			}
		}
	}
	for _, s := range segs {
		check("fs.read." + s)
		check("fs.write." + s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 8000; i++ {
		parts := make([]string, 1+r.IntN(5))
		for j := range parts {
			parts[j] = segs[r.IntN(len(segs))]
		}
		check(strings.Join(parts, "."))
	}
}

// threeWays decides a project and its one org three ways: the engine, the
// native matcher, and the bundle's data.chock.decision in stock OPA.
func threeWays(t *testing.T, project, org string) (*Engine, *native.Evaluator, rego.PreparedEvalQuery) {
	t.Helper()
	e, c := build(t, project, org)
	o, _ := config.LoadOrg("org1.zon", []byte(org))
	out, err := compile.Compile(compile.Input{Config: c, Orgs: []*config.Org{o}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := out.Bundle(nil)
	if err != nil {
		t.Fatal(err)
	}
	full, err := rego.New(rego.Query("data.chock.decision"), rego.ParsedBundle("chock", b)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return e, native.New(c, []*config.Org{o}), full
}
