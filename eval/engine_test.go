package eval

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
)

// input loads a project chock.zon and its org sources.
func input(t testing.TB, project string, orgs ...string) compile.Input {
	t.Helper()
	c, ds := config.Load("chock.zon", []byte(project))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	in := compile.Input{Config: c}
	for i, o := range orgs {
		org, ds := config.LoadOrg(fmt.Sprintf("org%d.zon", i+1), []byte(o))
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		in.Orgs = append(in.Orgs, org)
	}
	return in
}

func build(t testing.TB, project string, orgs ...string) (*Engine, *config.Config) {
	t.Helper()
	in := input(t, project, orgs...)
	out, err := compile.Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	e, err := FromOutput(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	return e, in.Config
}

// The seeds' own examples (000, 001) and SPEC §5–6.
const seedProject = `.{
    .policy = .{
        .allow = .{ "secret.use.*", "exec.path.gh", "secret.use.GITHUB_TOKEN" },
        .ask = .{"secret.use.DEPLOY_KEY"},
        .deny = .{"exec.path.curl"},
        .rules = .{
            .{ .action = "mcp.notion.host.com.notion.*", .decision = .allow, .why = "the docs team's workspace" },
            .{ .action = "mcp.probe.host.com.probe.*", .decision = .ask },
        },
    },
    .secrets = .{
        .{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" },
        .{ .name = "NOTION_TOKEN", .to = "mcp.notion.*", .bind = "header" },
        .{ .name = "KEY", .to = "mcp.probe.*", .bind = "header", .as = "X-Api-Key" },
    },
    .mcp_servers = .{
        .{ .name = "notion", .url = "https://mcp.notion.com/mcp" },
        .{ .name = "probe", .url = "https://mcp.probe.com/mcp" },
    },
}`

const seedOrg = `.{ .name = "acme", .policy = .{ .deny = .{"exec.path.gh"} } }`

func TestSeedDecisions(t *testing.T) {
	e, _ := build(t, seedProject, seedOrg)
	ctx := context.Background()
	tests := []struct {
		action  string
		phase   config.Phase
		want    config.Decision
		rule    string
		capped  string
		refusal bool
	}{
		// The host rule alone gets a server to start (seed 000).
		{"mcp.notion.host.com.notion.mcp", config.Start, config.Allow, "mcp.notion.host.com.notion.*", "", false},
		// ask at start reads as refused, and says which rule (seed 000).
		{"mcp.probe.host.com.probe.mcp", config.Start, config.Deny, "mcp.probe.host.com.probe.*", "", true},
		// A tool rule is needed on top of the host rule.
		{"mcp.notion.tool.search", config.Loop, config.Deny, "", "", false},
		// secret.use.DEPLOY_KEY is asked while secret.use.* is allowed (seed 001).
		{"secret.use.DEPLOY_KEY", config.Loop, config.Ask, "secret.use.DEPLOY_KEY", "", false},
		{"secret.use.OTHER", config.Loop, config.Allow, "secret.use.*", "", false},
		// Only allow gives a server a secret at start (seed 001).
		{"secret.use.DEPLOY_KEY", config.Start, config.Deny, "secret.use.DEPLOY_KEY", "", true},
		// An org ceiling caps a project allow.
		{"exec.path.gh", config.Loop, config.Deny, "exec.path.gh", "acme", false},
		{"exec.path.curl", config.Loop, config.Deny, "exec.path.curl", "", false},
	}
	for _, tt := range tests {
		d, err := e.Decide(ctx, tt.action, tt.phase)
		if err != nil {
			t.Fatal(err)
		}
		rule := ""
		if d.Layers[0].Rule != nil {
			rule = d.Layers[0].Rule.Pattern
		}
		capped := ""
		if d.CappedBy != nil {
			capped = *d.CappedBy
		}
		if d.Decision != tt.want || rule != tt.rule || capped != tt.capped || d.StartRefusal != tt.refusal {
			t.Errorf("%s at %v: %v by %q capped %q refusal %v; want %v by %q capped %q refusal %v",
				tt.action, tt.phase, d.Decision, rule, capped, d.StartRefusal, tt.want, tt.rule, tt.capped, tt.refusal)
		}
	}
	d, _ := e.Decide(ctx, "mcp.notion.host.com.notion.mcp", config.Start)
	if r := d.Layers[0].Rule; r == nil || r.Why != "the docs team's workspace" || r.Span.File != "chock.zon" || r.Span.Start.Line != 7 || r.Span.Start.Col != 26 {
		t.Errorf("provenance: %+v", r)
	}
	bad, err := e.Decide(ctx, "exec..gh", config.Loop)
	if err != nil || bad.Decision != config.Deny || bad.Error == "" {
		t.Errorf("malformed action: %+v %v", bad, err)
	}
}

func TestSecrets(t *testing.T) {
	e, _ := build(t, seedProject)
	ctx := context.Background()
	s, err := e.Secrets(ctx, Target{Action: "exec.path.gh"})
	if err != nil || len(s) != 1 || s[0].Name != "GITHUB_TOKEN" || s[0].Bind != config.BindEnv || s[0].As != "GITHUB_TOKEN" {
		t.Fatalf("gh: %+v %v", s, err)
	}
	s, err = e.Secrets(ctx, Target{Server: "probe"})
	if err != nil || len(s) != 1 || s[0].As != "X-Api-Key" || s[0].Bind != config.BindHeader || s[0].Span.Start.Line != 14 {
		t.Fatalf("probe: %+v %v", s, err)
	}
	s, _ = e.Secrets(ctx, Target{Server: "notion"})
	if len(s) != 1 || s[0].As != "Authorization" {
		t.Fatalf("notion: %+v", s)
	}
	if _, err := e.Secrets(ctx, Target{}); err == nil {
		t.Error("an empty target must be an error")
	}
}

// TestHotSwap decides from many goroutines while the policy is swapped;
// every decision comes whole from one policy or the other. Run with -race.
func TestHotSwap(t *testing.T) {
	allow, _ := build(t, `.{ .policy = .{ .allow = .{"exec.path.gh"} } }`)
	deny, _ := build(t, `.{ .policy = .{ .deny = .{"exec.path.gh"} } }`)
	denyBundle := deny.cur.Load()
	allowBundle := allow.cur.Load()
	e := &Engine{}
	e.cur.Store(allowBundle)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, err := e.Decide(ctx, "exec.path.gh", config.Loop)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Layers[0].Rule == nil || d.Layers[0].Rule.Decision != d.Decision {
					t.Errorf("a torn decision: %+v", d)
					return
				}
			}
		}()
	}
	for i := 0; i < 200; i++ {
		if i%2 == 0 {
			e.cur.Store(denyBundle)
		} else {
			e.cur.Store(allowBundle)
		}
	}
	close(stop)
	wg.Wait()
	// Swap through the API too, and refuse a bundle that is not chock's.
	out, _ := compile.Compile(compile.Input{Config: mustConfig(t, `.{ .policy = .{ .default = .allow } }`)})
	b, _ := out.Bundle(nil)
	if err := e.Swap(ctx, b); err != nil {
		t.Fatal(err)
	}
	if d, _ := e.Decide(ctx, "exec.path.x", config.Loop); d.Decision != config.Allow {
		t.Errorf("after Swap: %v", d.Decision)
	}
	b.Data = map[string]any{}
	if err := e.Swap(ctx, b); err == nil || e.Revision() != out.Revision {
		t.Errorf("a foreign bundle must be refused and change nothing: %v", err)
	}
}

func mustConfig(t testing.TB, src string) *config.Config {
	c, ds := config.Load("chock.zon", []byte(src))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	return c
}

// TestHintsApply: for refused actions, applying the hint's edits to the
// file and compiling again makes the action allowed.
func TestHintsApply(t *testing.T) {
	projects := []string{
		seedProject,
		`.{}`,
		`.{ .theme = .dark }`,
		`.{ .policy = .{} }`,
		`.{ .policy = .{ .deny = .{"exec.*"} } }`,
		`.{ .policy = .{ .allow = .{}, .deny = .{ "exec.path.a", "exec.path.b" } } }`,
		`.{ .policy = .{ .rules = .{ .{ .action = "exec.path.a", .decision = .ask, .why = "x" } } } }`,
		".{\n    .policy = .{\n        .allow = .{\n            \"exec.path.z\",\n        },\n        .deny = .{\"exec.path.b\"},\n    },\n}\n",
	}
	actions := []string{"exec.path.a", "exec.path.b", "exec.path.curl", "secret.use.DEPLOY_KEY", "mcp.probe.host.com.probe.mcp", "mcp.notion.tool.search", "net.fetch.com.example"}
	ctx := context.Background()
	for pi, project := range projects {
		e, cfg := build(t, project)
		for _, a := range actions {
			for _, phase := range []config.Phase{config.Loop, config.Start} {
				d, err := e.Decide(ctx, a, phase)
				if err != nil {
					t.Fatal(err)
				}
				if d.Decision == config.Allow {
					continue
				}
				x := Explain(d, cfg)
				if x.Hint == nil || !x.Hint.ProjectCan || len(x.Hint.Edits) == 0 {
					t.Fatalf("project %d, %s: no applicable hint: %+v", pi, a, x.Hint)
				}
				fixed := string(Apply([]byte(project), x.Hint.Edits))
				e2, _ := build(t, fixed)
				d2, err := e2.Decide(ctx, a, phase)
				if err != nil {
					t.Fatal(err)
				}
				if d2.Decision != config.Allow {
					t.Fatalf("project %d, %s at %v: after the hint (%s) it is %v\n%s", pi, a, phase, x.Hint.Text, d2.Decision, fixed)
				}
			}
		}
	}
}

func TestHintNamesTheOrg(t *testing.T) {
	e, cfg := build(t, seedProject, seedOrg)
	d, _ := e.Decide(context.Background(), "exec.path.gh", config.Loop)
	x := Explain(d, cfg)
	if x.Hint == nil || x.Hint.ProjectCan || x.Hint.Org == nil || x.Hint.Org.At == nil || x.Hint.Org.At.File != "org1.zon" || x.Hint.Org.Rule != "exec.path.gh" || x.Hint.Org.At.Start.Line != 1 {
		t.Fatalf("hint: %+v", x.Hint)
	}
	if !strings.Contains(x.Hint.Text, `the org ceiling "acme" forbids it`) {
		t.Errorf("text: %s", x.Hint.Text)
	}
}

func TestStartNote(t *testing.T) {
	e, cfg := build(t, seedProject)
	d, _ := e.Decide(context.Background(), "secret.use.DEPLOY_KEY", config.Start)
	x := Explain(d, cfg)
	if !strings.Contains(x.StartNote, `"secret.use.DEPLOY_KEY" at chock.zon:4:18`) {
		t.Errorf("start note: %q", x.StartNote)
	}
}

// BenchmarkEngineDecide measures decisions through the Engine on one core
// and on all of them: "cached" asks five actions over and over (a session
// asks the same actions again), "uncached" never asks the same action
// twice, so every decision is an OPA evaluation.
func BenchmarkEngineDecide(b *testing.B) {
	e, _ := build(b, seedProject, seedOrg)
	acts := []string{"exec.path.gh", "secret.use.DEPLOY_KEY", "mcp.notion.host.com.notion.mcp", "mcp.notion.tool.search", "net.fetch.com.x"}
	ctx := context.Background()
	var counter atomic.Int64
	action := func(cached bool, i int) string {
		if cached {
			return acts[i%len(acts)]
		}
		return fmt.Sprintf("exec.path.p%d", counter.Add(1))
	}
	for _, cached := range []bool{true, false} {
		name := "uncached"
		if cached {
			name = "cached"
		}
		b.Run("serial/"+name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, err := e.Decide(ctx, action(cached, i), config.Loop); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
		b.Run("parallel/"+name, func(b *testing.B) {
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := e.Decide(ctx, action(cached, i), config.Loop); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

// TestOrgAskHint: an org's ask in the loop is the question being put, and
// its hint says a yes permits it once; at start the same ask reads as
// refused and only the org's owners can permit it.
func TestOrgAskHint(t *testing.T) {
	e, c := build(t, `.{ .policy = .{ .allow = .{"exec.path.git"} } }`, `.{ .name = "acme", .policy = .{ .ask = .{"exec.path.git"} } }`)
	d, err := e.Decide(context.Background(), "exec.path.git", config.Loop)
	if err != nil {
		t.Fatal(err)
	}
	x := Explain(d, c)
	if x.Hint == nil || !strings.Contains(x.Hint.Text, "a yes to the question permits it this once") || strings.Contains(x.Hint.Text, "only the org's owners can permit it") {
		t.Fatalf("loop: %+v", x.Hint)
	}
	d, _ = e.Decide(context.Background(), "exec.path.git", config.Start)
	x = Explain(d, c)
	if x.Hint == nil || !strings.Contains(x.Hint.Text, "reads as refused") || !strings.Contains(x.Hint.Text, "only the org's owners can permit it") {
		t.Fatalf("start: %+v", x.Hint)
	}
	// The project denies: nobody is asked, and the hint is the project's.
	e, c = build(t, `.{ .policy = .{ .deny = .{"exec.path.git"} } }`, `.{ .name = "acme", .policy = .{ .ask = .{"exec.path.git"} } }`)
	d, _ = e.Decide(context.Background(), "exec.path.git", config.Loop)
	x = Explain(d, c)
	if x.Hint == nil || strings.Contains(x.Hint.Text, "a yes to the question") || !x.Hint.ProjectCan {
		t.Fatalf("project denies: %+v", x.Hint)
	}
}

// TestExpectLayerSpellings: .layer is "project" or "org:NAME" as every
// output spells it; "org" (any org) and a bare org name still hold.
func TestExpectLayerSpellings(t *testing.T) {
	project := `.{ .policy = .{ .allow = .{"exec.path.gh"} }, .expect = .{
        .{ .action = "exec.path.gh", .decision = .deny, .layer = "org:acme-sec" },
        .{ .action = "exec.path.gh", .decision = .deny, .layer = "org" },
        .{ .action = "exec.path.gh", .decision = .deny, .layer = "acme-sec" },
        .{ .action = "exec.path.gh", .decision = .deny, .layer = "project" },
        .{ .action = "exec.path.gh", .decision = .deny, .layer = "org:other" },
    } }`
	e, c := build(t, project, `.{ .name = "acme-sec", .policy = .{ .deny = .{"exec.path.gh"} } }`)
	rs, _, err := RunExpectations(context.Background(), e, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, true, true, false, false}
	for i, r := range rs {
		if r.Passed() != want[i] {
			t.Errorf("%s: passed %v, want %v (%s)", c.Expect[i].Layer.Value, r.Passed(), want[i], r.Failure)
		}
	}
	if f := rs[3].Failure; f != `want it decided by layer "project", got "org:acme-sec"` {
		t.Errorf("failure %q", f)
	}
}

// TestHintSaysWhatItOpens: a hint that would allow a shell says it reaches
// every program, and one that undoes a rule with a .why quotes the why.
func TestHintSaysWhatItOpens(t *testing.T) {
	e, c := build(t, `.{ .policy = .{ .rules = .{ .{ .action = "exec.path.gh.*", .decision = .deny, .why = "gists are where pasted secrets end up" } } } }`)
	for action, want := range map[string]string{
		"exec.path.sh":      "sh runs other programs, so allowing it reaches every program",
		"exec.path.python3": "python3 runs other programs",
		"exec.path.gh.gist": `this undoes the rule "exec.path.gh.*", which says why it is there: gists are where pasted secrets end up`,
	} {
		d, err := e.Decide(context.Background(), action, config.Loop)
		if err != nil {
			t.Fatal(err)
		}
		if x := Explain(d, c); x.Hint == nil || !strings.Contains(x.Hint.Text, want) {
			t.Errorf("%s: hint %+v, want %q", action, x.Hint, want)
		}
	}
	d, _ := e.Decide(context.Background(), "exec.path.curl", config.Loop)
	if x := Explain(d, c); strings.Contains(x.Hint.Text, "runs other programs") || strings.Contains(x.Hint.Text, "undoes") {
		t.Errorf("curl: %q", x.Hint.Text)
	}
}
