package eval

import (
	"testing"

	"github.com/chockhq/chock/compile/config"
)

// TestDecider: the org that caps decides; where the project decides by its
// default and an org reaches the same decision by a rule, the org's rule
// does (it is what the project cannot change); else the project.
func TestDecider(t *testing.T) {
	rule := func(p string) *Rule { return &Rule{Pattern: p} }
	acme := "acme"
	for _, c := range []struct {
		name string
		d    Decision
		want string
	}{
		{"org rule, project default", Decision{Decision: config.Deny, Layers: []Layer{
			{Layer: "project", Decision: config.Deny, Default: true},
			{Layer: "org", Name: "acme", Decision: config.Deny, Rule: rule("exec.path.curl")},
		}}, "org:acme"},
		{"org default, project default", Decision{Decision: config.Deny, Layers: []Layer{
			{Layer: "project", Decision: config.Deny, Default: true},
			{Layer: "org", Name: "acme", Decision: config.Deny, Default: true},
		}}, "project"},
		{"org rule, project rule", Decision{Decision: config.Deny, Layers: []Layer{
			{Layer: "project", Decision: config.Deny, Rule: rule("exec.path.curl")},
			{Layer: "org", Name: "acme", Decision: config.Deny, Rule: rule("exec.path.curl")},
		}}, "project"},
		{"the first org at it", Decision{Decision: config.Ask, Layers: []Layer{
			{Layer: "project", Decision: config.Ask, Default: true},
			{Layer: "org", Name: "other", Decision: config.Ask, Default: true},
			{Layer: "org", Name: "acme", Decision: config.Ask, Rule: rule("exec.path.gh")},
		}}, "org:acme"},
		{"an org's allow permits nothing", Decision{Decision: config.Allow, Layers: []Layer{
			{Layer: "project", Decision: config.Allow, Default: true},
			{Layer: "org", Name: "acme", Decision: config.Allow, Rule: rule("exec.path.gh")},
		}}, "project"},
		{"capped", Decision{Decision: config.Deny, CappedBy: &acme, Layers: []Layer{
			{Layer: "project", Decision: config.Allow, Rule: rule("exec.path.gh")},
			{Layer: "org", Name: "acme", Decision: config.Deny, Rule: rule("exec.path.gh")},
		}}, "org:acme"},
	} {
		if got := c.d.Decider().Spelling(); got != c.want {
			t.Errorf("%s: decider %s, want %s", c.name, got, c.want)
		}
	}
}
