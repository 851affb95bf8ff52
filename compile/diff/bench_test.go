package diff

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/region"
)

// scalePolicy is a project of about n rules in chock's own namespaces, as
// a large team writes them: programs, tools of many servers (some servers
// whole), fetch hosts with their subdomains, secrets.
func scalePolicy(n int) *config.Config {
	c := &config.Config{File: "chock.zon"}
	add := func(p string, d config.Decision) {
		c.Policy.Rules = append(c.Policy.Rules, &config.Rule{Pattern: action.MustPattern(p), Decision: d})
	}
	decisions := []config.Decision{config.Allow, config.Ask, config.Deny}
	for i := 0; len(c.Policy.Rules) < n; i++ {
		add(fmt.Sprintf("exec.path.prog%d", i), decisions[i%3])
		add(fmt.Sprintf("mcp.srv%d.tool.t%d", i%200, i), decisions[(i+1)%3])
		if i%10 == 0 {
			add(fmt.Sprintf("mcp.srv%d.tool.*", i%200), config.Ask)
		}
		add(fmt.Sprintf("net.fetch.com.site%d.*", i), decisions[i%2])
		add(fmt.Sprintf("secret.use.S%d", i), decisions[i%3])
	}
	return c
}

// edited is c with one rule's decision changed, in a copy.
func edited(c *config.Config, i int) *config.Config {
	e := *c
	e.Policy.Rules = append([]*config.Rule(nil), c.Policy.Rules...)
	r := *e.Policy.Rules[i]
	r.Decision = (r.Decision + 1) % 3
	e.Policy.Rules[i] = &r
	return &e
}

// BenchmarkDiff diffs a policy of 10, 100, 1,000 and 10,000 rules
// against itself with one rule's decision changed (make bench prints the
// 10,000-rule figure, whose target is under 100 ms), and, for scale, the
// same policy with its default changed, which compares every region.
func BenchmarkDiff(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		old := scalePolicy(n)
		cur := edited(old, len(old.Policy.Rules)/2)
		b.Run("one-edit/rules="+strconv.Itoa(n), func(b *testing.B) {
			var rep *Report
			for b.Loop() {
				var err error
				if rep, err = Diff(Side{Config: old}, Side{Config: cur}, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			if len(rep.Changes) == 0 {
				b.Fatal("the edit changed nothing")
			}
			b.ReportMetric(float64(rep.Regions), "regions")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/diff")
		})
		whole := *old
		whole.Policy.Default = config.Field[config.Decision]{Value: config.Ask, Set: true}
		b.Run("default/rules="+strconv.Itoa(n), func(b *testing.B) {
			var rep *Report
			for b.Loop() {
				var err error
				if rep, err = Diff(Side{Config: old}, Side{Config: &whole}, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rep.Regions), "regions")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/diff")
		})
	}
}

// adversarial is the worst case for the region walk: rules that each fix
// one of k positions to one of 3 literals and leave every other position
// '*', so that every combination of literals and other segments is a
// region of its own, about 4^k of them.
func adversarial(k int) *config.Config {
	c := &config.Config{File: "worst.zon"}
	for pos := 0; pos < k; pos++ {
		for _, lit := range []string{"a", "b", "c"} {
			segs := make([]string, k)
			for i := range segs {
				segs[i] = "*"
			}
			segs[pos] = lit
			p := action.MustPattern("plugin." + strings.Join(segs, "."))
			c.Policy.Rules = append(c.Policy.Rules, &config.Rule{Pattern: p, Decision: config.Decision(pos % 3)})
		}
	}
	return c
}

// BenchmarkDiffWorst diffs the adversarial policy against itself with its
// default changed, so that every region is compared and changed, for k = 2
// to 9 positions; from k = 8 the walk meets the cap (region.Limit) and
// stops there.
func BenchmarkDiffWorst(b *testing.B) {
	for _, k := range []int{2, 4, 6, 8, 9} {
		old := adversarial(k)
		cur := *old
		cur.Policy.Default = config.Field[config.Decision]{Value: config.Allow, Set: true}
		b.Run("k="+strconv.Itoa(k), func(b *testing.B) {
			regions, capped := 0, false
			for b.Loop() {
				regions, capped = worst(b, old, &cur)
			}
			b.ReportMetric(float64(len(old.Policy.Rules)), "rules")
			b.ReportMetric(float64(regions), "regions")
			if capped {
				b.ReportMetric(1, "capped")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e6/float64(b.N), "ms/diff")
		})
	}
}

// worst diffs old with cur and returns the regions compared, or the cap
// and true when the walk met it. (A function of its own: Go 1.26's
// compiler fails on this body written inside the b.Loop loop.)
func worst(b *testing.B, old, cur *config.Config) (int, bool) {
	rep, err := Diff(Side{Config: old}, Side{Config: cur}, Options{})
	var le *region.LimitError
	switch {
	case errors.As(err, &le):
		return le.Max, true
	case err != nil:
		b.Fatal(err)
	}
	return rep.Regions, false
}

// TestWorstCaseCapped: the adversarial policy with its default changed
// stops at the cap with a LimitError, and one edit of it is walked only
// where that rule reaches.
func TestWorstCaseCapped(t *testing.T) {
	old := adversarial(8)
	cur := *old
	cur.Policy.Default = config.Field[config.Decision]{Value: config.Allow, Set: true}
	_, err := Diff(Side{Config: old}, Side{Config: &cur}, Options{Max: 5000})
	var le *region.LimitError
	if !errors.As(err, &le) || le.Max != 5000 {
		t.Fatalf("want the cap, got %v", err)
	}
	small := adversarial(4)
	rep, err := Diff(Side{Config: small}, Side{Config: edited(small, 0)}, Options{})
	if err != nil || len(rep.Changes) == 0 {
		t.Fatalf("one edit: %+v %v", rep, err)
	}
	all, err := Diff(Side{Config: small}, Side{Config: &config.Config{File: "x", Policy: config.Policy{Rules: small.Policy.Rules, Default: config.Field[config.Decision]{Value: config.Allow, Set: true}}}}, Options{})
	if err != nil || rep.Regions >= all.Regions {
		t.Fatalf("one edit compared %d regions, a default change %d (%v)", rep.Regions, all.Regions, err)
	}
}
