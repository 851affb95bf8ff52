package eval

import (
	"testing"

	"github.com/chockhq/chock/compile"
)

// TestCoverageBelow: the threshold is compared exactly, and a policy with
// no rules is fully covered.
func TestCoverageBelow(t *testing.T) {
	c := Coverage{Covered: 3, Rules: 12}
	for threshold, below := range map[float64]bool{0: false, 25: false, 25.01: true, 100: true} {
		if got := c.Below(threshold); got != below {
			t.Errorf("3 of 12 below %v: %v", threshold, got)
		}
	}
	none := Coverage{}
	if none.Percent() != 100 || none.Below(100) {
		t.Errorf("no rules: %v%%, below 100: %v", none.Percent(), none.Below(100))
	}
}

// TestCoverageOf: each layer counts its rules, those RunExpectations left
// unused listed as not covered.
func TestCoverageOf(t *testing.T) {
	m := Meta{Layers: []compile.LayerMeta{
		{Kind: "project", Name: "project", File: "chock.zon", Rules: []RuleMeta{{Pattern: "a.b"}, {Pattern: "a.*"}}},
		{Kind: "org", Name: "acme", File: "org.zon", Rules: []RuleMeta{{Pattern: "a.c"}}},
	}}
	c := CoverageOf(m, []RuleRef{{Layer: "project", Name: "project", Rule: RuleMeta{Pattern: "a.*"}}})
	if c.Covered != 2 || c.Rules != 3 || len(c.Layers) != 2 {
		t.Fatalf("%+v", c)
	}
	p, o := c.Layers[0], c.Layers[1]
	if p.Layer != "project" || p.Covered != 1 || len(p.NotCovered) != 1 || p.NotCovered[0].Pattern != "a.*" || p.Percent() != 50 {
		t.Errorf("project %+v", p)
	}
	if o.Layer != "org:acme" || o.Covered != 1 || len(o.NotCovered) != 0 {
		t.Errorf("org %+v", o)
	}
}
