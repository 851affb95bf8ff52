package native

import (
	"testing"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
)

func load(t *testing.T, project string, orgs ...string) *Evaluator {
	t.Helper()
	c, ds := config.Load("chock.zon", []byte(project))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	var os []*config.Org
	for _, o := range orgs {
		org, ds := config.LoadOrg("org.zon", []byte(o))
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		os = append(os, org)
	}
	return New(c, os)
}

func decide(t *testing.T, e *Evaluator, a string, phase config.Phase) Result {
	t.Helper()
	act, err := action.ParseAction(a)
	if err != nil {
		t.Fatal(err)
	}
	return e.Decide(act, phase)
}

// TestSpecExamples are the decisions SPEC §5–6 and the seeds describe.
func TestSpecExamples(t *testing.T) {
	project := `.{ .policy = .{
        .allow = .{ "secret.use.*", "exec.path.gh", "exec.*" },
        .ask = .{ "secret.use.DEPLOY_KEY" },
        .deny = .{ "exec.path.curl" },
        .rules = .{ .{ .action = "mcp.notion.host.com.notion.*", .decision = .allow, .why = "docs" } },
    } }`
	org := `.{ .name = "acme", .policy = .{ .deny = .{"exec.path.gh"}, .ask = .{"exec.path.git"} } }`
	e := load(t, project, org)
	tests := []struct {
		action string
		phase  config.Phase
		want   config.Decision
		rule   string // project layer's deciding pattern; "" for the default
		capped bool
		start  bool
	}{
		{"secret.use.DEPLOY_KEY", config.Loop, config.Ask, "secret.use.DEPLOY_KEY", false, false},
		{"secret.use.GITHUB_TOKEN", config.Loop, config.Allow, "secret.use.*", false, false},
		{"secret.use.DEPLOY_KEY", config.Start, config.Deny, "secret.use.DEPLOY_KEY", false, true},
		{"exec.path.curl", config.Loop, config.Deny, "exec.path.curl", false, false},
		{"exec.path.ls", config.Loop, config.Allow, "exec.*", false, false},
		{"exec.path.gh", config.Loop, config.Deny, "exec.path.gh", true, false},
		{"exec.path.git", config.Loop, config.Ask, "exec.*", true, false},
		{"mcp.notion.host.com.notion.mcp", config.Start, config.Allow, "mcp.notion.host.com.notion.*", false, false},
		{"mcp.notion.host.com.notion", config.Start, config.Deny, "", false, false},
		{"mcp.notion.tool.search", config.Loop, config.Deny, "", false, false},
	}
	for _, tt := range tests {
		r := decide(t, e, tt.action, tt.phase)
		rule := ""
		if r.Layers[0].Rule != nil {
			rule = r.Layers[0].Rule.Pattern.String()
		}
		if r.Decision != tt.want || rule != tt.rule || (r.CappedBy != nil) != tt.capped || r.StartRefusal != tt.start {
			t.Errorf("%s at %v: got %v by %q capped %v start %v; want %v by %q capped %v start %v",
				tt.action, tt.phase, r.Decision, rule, r.CappedBy != nil, r.StartRefusal, tt.want, tt.rule, tt.capped, tt.start)
		}
	}
}

func TestIdenticalPatternsTie(t *testing.T) {
	e := load(t, `.{ .policy = .{ .allow = .{"exec.path.gh"}, .ask = .{"exec.path.gh"} } }`)
	if r := decide(t, e, "exec.path.gh", config.Loop); r.Decision != config.Ask {
		t.Errorf("ask must beat allow on a tie, got %v", r.Decision)
	}
}

func TestDefaults(t *testing.T) {
	e := load(t, `.{ .policy = .{ .default = .ask } }`, `.{ .name = "o", .policy = .{ .default = .deny, .allow = .{"exec.*"} } }`)
	if r := decide(t, e, "exec.path.x", config.Loop); r.Decision != config.Ask || r.Layers[0].Rule != nil {
		t.Errorf("exec.path.x: %v", r.Decision)
	}
	if r := decide(t, e, "net.fetch.com.x", config.Loop); r.Decision != config.Deny || r.CappedBy == nil || r.CappedBy.Name != "o" {
		t.Errorf("net.fetch: %v capped %v", r.Decision, r.CappedBy)
	}
	if r := decide(t, New(nil, nil), "exec.path.x", config.Loop); r.Decision != config.Deny {
		t.Errorf("no policy: %v", r.Decision)
	}
}
