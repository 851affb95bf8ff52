package eval

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
)

// TestDecideManyAsOneByOne: a batch decided one evaluation per signature
// (path actions each on its own)
// (decideMany) is, action for action, what data.chock.core decides for
// each on its own, over patterns of every kind (literals, '*', trailing
// '*', path globs, the file defaults) and actions of one to five segments,
// path actions among them, at both phases.
func TestDecideManyAsOneByOne(t *testing.T) {
	pats := []string{
		"fs.*.*", "*.read.*", "fs.read.*", "fs.write.*", "*.*", "*.*.*", "*.*.*.*", "fs.*", "*.write.*",
		"fs.read.~/.ssh/**", "fs.read.**/.env", "fs.read./etc/**", "fs.read.*.env", "fs.write..git/**", "fs.read.a.*",
		"exec.path.python3.*", "exec.*.python3.12", "exec.path.*.12", "exec.*.*", "exec.path.*", "*.path.*", "*.path.git",
		"exec.path.git", "exec.path.sh", "exec", "exec.*", "mcp.*.tool.*", "mcp.*.tool.search", "net.fetch.*.[::1]", "*.fetch.*",
		"fs.*.a", "*.read.a", "fs.*.x.y", "fs.read.~/.ssh/id_rsa", "*.*.a.*", "exec.path.{a,b}",
	}
	decisions := []string{"allow", "ask", "deny"}
	var b strings.Builder
	b.WriteString(".{ .policy = .{ .default = .ask, .rules = .{ ")
	for i, p := range pats {
		fmt.Fprintf(&b, ".{ .action = %q, .decision = .%s }, ", p, decisions[i%3])
	}
	b.WriteString(`.{ .action = "exec.path.git", .decision = .deny, .args = .{"push"} }, } } }`)
	out, err := compile.Compile(input(t, b.String()))
	if err != nil {
		t.Fatal(err)
	}
	e, err := FromOutput(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	segs := []string{"fs", "read", "write", "exec", "path", "python3", "12", "git", "sh", "mcp", "tool", "search", "net", "fetch",
		"[::1]", "a", "b", "x", "y", "~/.ssh/id_rsa", "~/.ssh/k", ".env", "a/.env", "/etc/passwd", "a.b", ".git/config", "{a,b}"}
	r := rand.New(rand.NewPCG(7, 7))
	var acts []string
	seen := map[string]bool{}
	for len(acts) < 3000 {
		n := 1 + r.IntN(5)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = segs[r.IntN(len(segs))]
		}
		a := strings.Join(parts, ".")
		if !seen[a] {
			seen[a] = true
			acts = append(acts, a)
		}
	}
	for _, phase := range []config.Phase{config.Loop, config.Start} {
		p := e.cur.Load()
		got, err := e.DecideManyUnlogged(context.Background(), acts, phase)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[config.Decision]int{}
		for i, a := range acts {
			want, err := p.decide(context.Background(), a, nil, phase)
			if err != nil {
				t.Fatal(err)
			}
			want.Revision = p.revision
			if !reflect.DeepEqual(got[i], want) {
				t.Fatalf("%s at %s:\n batch  %+v\n alone  %+v", a, phase, got[i], want)
			}
			kinds[want.Decision]++
		}
		if len(kinds) < 2 {
			t.Errorf("the actions reached only %v", kinds)
		}
	}
	x := e.cur.Load().index()
	if x == nil || len(x.pats) < len(pats) {
		t.Fatalf("the rule index holds %v", x)
	}
	sigs := map[string]bool{}
	for _, a := range acts {
		pa, err := action.ParseAction(a)
		if err == nil {
			sigs[x.signature(pa)] = true
		}
	}
	if len(sigs) > len(acts)/4 {
		t.Errorf("%d signatures for %d actions: the batch was not grouped", len(sigs), len(acts))
	}
	t.Logf("%d actions, %d evaluations", len(acts), len(sigs))
	if _, ok := action.Valid("exec..x"); ok {
		t.Fatal("an empty segment is valid")
	}
	// An invalid action in a batch is decided as on its own: a deny.
	ds, err := e.DecideManyUnlogged(context.Background(), []string{"exec..x", "exec.path.git"}, config.Loop)
	if err != nil || ds[0].Decision != config.Deny || ds[0].Error == "" || ds[1].Action != "exec.path.git" {
		t.Fatalf("%+v %v", ds, err)
	}
}
