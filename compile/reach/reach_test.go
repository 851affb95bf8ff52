package reach

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/chockhq/chock/compile/region"
)

func TestDiff(t *testing.T) {
	added, removed := Diff([]string{"a", "b"}, []string{"b", "c"})
	if !reflect.DeepEqual(added, []string{"c"}) || !reflect.DeepEqual(removed, []string{"a"}) {
		t.Errorf("added %v removed %v", added, removed)
	}
}

func TestReport(t *testing.T) {
	c, ds := config.Load("chock.zon", []byte(`.{
		.policy = .{ .allow = .{ "secret.use.*", "mcp.s.host.*", "mcp.*.tool.read", "exec.path.node" } },
		.secrets = .{ .{ .name = "T", .to = "mcp.*", .bind = "header" }, .{ .name = "F", .to = "mcp.s.*", .bind = "file" } },
		.mcp_servers = .{ .{ .name = "s", .url = "https://s.example.com/mcp" } },
	}`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	o, _ := config.LoadOrg("org.zon", []byte(`.{ .name = "o", .policy = .{ .deny = .{"secret.use.T"} } }`))
	lines, err := Report(c, []*config.Org{o})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"secret T -> server s: secret.use deny at start, not given (header Authorization)",
		"secret F -> server s: secret.use allow at start, not given (file F)",
		"server s: host mcp.s.host.com.example.s allow at start (starts)",
		"server s: tool mcp.s.tool.read allow",
		"broad: exec.path.node allow reaches node, which runs other programs, so every program",
		"grant mcp.<not s>.tool.read allow",
		"grant secret.use.<not T> allow",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

// TestEveryGrant: each grant the issue that made reach exact tried (a
// fetch host, a program that was denied, a new program, model.select,
// nix.build) shows as a line of its own.
func TestEveryGrant(t *testing.T) {
	const base = `.{ .policy = .{ .allow = .{ "exec.path.gh", "exec.path.terraform" }, .deny = .{ "exec.path.terraform" } } }`
	report := func(src string) []string {
		c, ds := config.Load("chock.zon", []byte(src))
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		lines, err := Report(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		return lines
	}
	before := report(base)
	for grant, line := range map[string]string{
		"net.fetch.com.evil.*": "grant net.fetch.com.evil.* allow",
		"exec.path.rm":         "grant exec.path.rm allow",
		"model.select":         "grant model.select allow",
		"nix.build":            "grant nix.build allow",
	} {
		after := report(strings.Replace(base, `"exec.path.gh",`, `"exec.path.gh", "`+grant+`",`, 1))
		added, removed := Diff(before, after)
		if !reflect.DeepEqual(added, []string{line}) || len(removed) != 0 {
			t.Errorf("allow %s: added %q, removed %q", grant, added, removed)
		}
	}
	after := report(strings.Replace(base, `.deny = .{ "exec.path.terraform" }`, `.deny = .{}`, 1))
	if added, _ := Diff(before, after); !reflect.DeepEqual(added, []string{"grant exec.path.terraform allow"}) {
		t.Errorf("terraform no longer denied: added %q", added)
	}
}

// TestCheckAgainstBruteForce: checking the reach pinned from one random
// policy against another names, for every random action whose grant
// changed, exactly one region holding it, with what it was and is; and
// checking a policy against its own reach names nothing.
func TestCheckAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 9))
	words := []string{"exec", "path", "gh", "mcp", "tool", "x"}
	pattern := func() string {
		for {
			segs := make([]string, 1+r.IntN(4))
			for i := range segs {
				if r.IntN(3) == 0 {
					segs[i] = "*"
				} else {
					segs[i] = words[r.IntN(len(words))]
				}
			}
			if p := strings.Join(segs, "."); p != "*" {
				return p
			}
		}
	}
	policy := func() *config.Config {
		c := &config.Config{File: "chock.zon"}
		if r.IntN(3) == 0 {
			c.Policy.Default = config.Field[config.Decision]{Value: config.Decision(r.IntN(3)), Set: true}
		}
		for i := 0; i < 1+r.IntN(8); i++ {
			c.Policy.Rules = append(c.Policy.Rules, &config.Rule{Pattern: action.MustPattern(pattern()), Decision: config.Decision(r.IntN(3))})
		}
		return c
	}
	changeRE := regexp.MustCompile(`^grant (.*) (allow|ask|deny)(?: \((deny) at start\))? \((?:was|now) (allow|ask|deny)(?: \((deny) at start\))?\)$`)
	for round := 0; round < 300; round++ {
		a, b := policy(), policy()
		pinned, err := Report(a, nil)
		if err != nil {
			t.Fatal(err)
		}
		if added, removed, err := Check(pinned, a, nil); err != nil || len(added)+len(removed) > 0 {
			t.Fatalf("round %d: a policy against its own reach: +%q -%q %v", round, added, removed, err)
		}
		added, removed, err := Check(pinned, b, nil)
		if err != nil {
			t.Fatal(err)
		}
		type change struct {
			reg      region.Region
			was, now grant
		}
		var changes []change
		read := func(line string, isNow bool) {
			m := changeRE.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("round %d: line %q", round, line)
			}
			reg, err := region.Parse(m[1])
			if err != nil {
				t.Fatal(err)
			}
			g := func(loop, start string) grant {
				d, _ := config.ParseDecision(loop)
				s := d
				if start != "" {
					s, _ = config.ParseDecision(start)
				}
				return grant{d, s}
			}
			first, second := g(m[2], m[3]), g(m[4], m[5])
			if isNow {
				changes = append(changes, change{reg, second, first})
			} else {
				changes = append(changes, change{reg, first, second})
			}
		}
		for _, l := range added {
			read(l, true)
		}
		for _, l := range removed {
			read(l, false)
		}
		ea, eb := native.New(a, nil), native.New(b, nil)
		for k := 0; k < 500; k++ {
			act := make(action.Action, 1+r.IntN(6))
			for i := range act {
				act[i] = words[r.IntN(len(words))]
				if r.IntN(5) == 0 {
					act[i] = "fresh"
				}
			}
			was := grant{ea.Decide(act, config.Loop).Decision, ea.Decide(act, config.Start).Decision}
			now := grant{eb.Decide(act, config.Loop).Decision, eb.Decide(act, config.Start).Decision}
			var in []change
			for _, c := range changes {
				if c.reg.Contains(act) {
					in = append(in, c)
				}
			}
			switch {
			case len(in) > 1:
				t.Fatalf("round %d: %s in %d changed regions", round, act, len(in))
			case was != now && len(in) == 0:
				t.Fatalf("round %d: %s changed %v -> %v; Check said +%q -%q", round, act, was, now, added, removed)
			case len(in) == 1 && (in[0].was != was || in[0].now != now):
				t.Fatalf("round %d: %s changed %v -> %v, its region %s says %v -> %v", round, act, was, now, in[0].reg, in[0].was, in[0].now)
			}
		}
	}
}

// TestSecretToAProgramNoRuleNames: a secret's .to splits the space as the
// rules do, whether or not a rule names what it names.
func TestSecretToAProgramNoRuleNames(t *testing.T) {
	c, ds := config.Load("chock.zon", []byte(`.{ .policy = .{ .allow = .{ "exec.*", "secret.use.*" } }, .secrets = .{ .{ .name = "T", .to = "exec.path.gh" } } }`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	lines, err := Report(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "secret T -> call exec.path.gh: secret.use allow at loop; the call itself allow (env T)"
	if !slices.Contains(lines, want) {
		t.Errorf("no %q in\n%s", want, strings.Join(lines, "\n"))
	}
}

func TestCheckRefusesABadGrant(t *testing.T) {
	c := &config.Config{File: "chock.zon"}
	for _, bad := range []string{"grant exec.path.gh", "grant exec..gh allow", "grant exec.path.gh maybe", "grant x.<not a allow"} {
		if _, _, err := Check([]string{bad}, c, nil); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// FuzzCheck: any snapshot text is read without a panic; a grant line that
// reads back is a region and decisions, and checking the policy's own
// reach names nothing.
func FuzzCheck(f *testing.F) {
	c, ds := config.Load("chock.zon", []byte(`.{ .policy = .{ .allow = .{ "exec.path.gh", "mcp.*.tool.x" }, .ask = .{"net.fetch.*"} } }`))
	if ds.HasErrors() {
		f.Fatal(ds)
	}
	own, err := Report(c, nil)
	if err != nil {
		f.Fatal(err)
	}
	if added, removed, err := Check(own, c, nil); err != nil || len(added)+len(removed) > 0 {
		f.Fatalf("own reach: +%q -%q %v", added, removed, err)
	}
	f.Add(strings.Join(own, "\n"))
	f.Add("grant exec.path.<not gh,\\<> ask (deny at start)\ngrant * allow")
	f.Fuzz(func(t *testing.T, snapshot string) {
		lines := strings.Split(snapshot, "\n")
		if _, _, err := Check(lines, c, nil); err != nil && !strings.HasPrefix(err.Error(), "line ") {
			t.Fatalf("an error that names no line: %v", err)
		}
	})
}

// TestSecretCallsAgainstBruteForce: a secret's call lines name exactly
// the programs it is offered to and the policy does not deny, each with
// the call's decision.
func TestSecretCallsAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 1))
	words := []string{"exec", "path", "gh", "x"}
	pattern := func(first string) action.Pattern {
		for {
			segs := []string{first}
			for i := r.IntN(4); i > 0; i-- {
				if r.IntN(3) == 0 {
					segs = append(segs, "*")
				} else {
					segs = append(segs, words[r.IntN(len(words))])
				}
			}
			if p, err := action.ParsePattern(strings.Join(segs, ".")); err == nil {
				return p
			}
		}
	}
	lineRE := regexp.MustCompile(`^secret (\w+) -> call (.*): secret.use \w+ at loop; the call itself (allow|ask) \(env \w+\)$`)
	for round := 0; round < 300; round++ {
		c := &config.Config{File: "chock.zon"}
		for i := 0; i < 1+r.IntN(6); i++ {
			c.Policy.Rules = append(c.Policy.Rules, &config.Rule{Pattern: pattern(words[r.IntN(len(words))]), Decision: config.Decision(r.IntN(3))})
		}
		for i := 0; i < 1+r.IntN(2); i++ {
			p := pattern("exec")
			c.Secrets = append(c.Secrets, &config.Secret{Name: config.Text{Value: fmt.Sprintf("S%d", i)}, To: config.Text{Value: p.String()}, ToPattern: config.Field[action.Pattern]{Value: p, Set: true}})
		}
		lines, err := Report(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		type call struct {
			secret string
			reg    region.Region
			d      string
		}
		var calls []call
		for _, l := range lines {
			if m := lineRE.FindStringSubmatch(l); m != nil {
				reg, err := region.Parse(m[2])
				if err != nil {
					t.Fatal(err)
				}
				calls = append(calls, call{m[1], reg, m[3]})
			}
		}
		ev := native.New(c, nil)
		for k := 0; k < 300; k++ {
			a := action.Action{"exec", "path"}
			for n := 1 + r.IntN(3); n > 0; n-- {
				a = append(a, []string{"gh", "x", "exec", "fresh"}[r.IntN(4)])
			}
			d := ev.Decide(a, config.Loop).Decision
			for _, s := range c.Secrets {
				var in []call
				for _, cl := range calls {
					if cl.secret == s.Name.Value && cl.reg.Contains(a) {
						in = append(in, cl)
					}
				}
				want := s.OfferedToCall(a) && d != config.Deny
				switch {
				case len(in) > 1:
					t.Fatalf("round %d: %s in %d call lines of %s", round, a, len(in), s.Name.Value)
				case want != (len(in) == 1):
					t.Fatalf("round %d: %s -> %s: offered and allowed %v, lines %v\n%s", round, s.Name.Value, a, want, in, strings.Join(lines, "\n"))
				case want && in[0].d != d.String():
					t.Fatalf("round %d: %s is %v, its line says %s", round, a, d, in[0].d)
				}
			}
		}
	}
}

// TestExampleSnapshot: examples/reach.txt is the example's reach, as make
// example checks it.
func TestExampleSnapshot(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	c, ds := config.Load("examples/chock.zon", read("chock.zon"))
	o, ds2 := config.LoadOrg("examples/org.zon", read("org.zon"))
	if ds.HasErrors() || ds2.HasErrors() {
		t.Fatal(ds, ds2)
	}
	var pinned []string
	for _, l := range strings.Split(string(read("reach.txt")), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			pinned = append(pinned, l)
		}
	}
	added, removed, err := Check(pinned, c, []*config.Org{o})
	if err != nil || len(added)+len(removed) > 0 {
		t.Errorf("examples/reach.txt is out of date (chock reach --org examples/org.zon --write examples/reach.txt examples/chock.zon): +%q -%q %v", added, removed, err)
	}
}

// TestProgramsHiddenReach: reach lists a program's pins and the hidden
// reach of its declared calls, capped by the org as at run time.
func TestProgramsHiddenReach(t *testing.T) {
	cfg, ds := config.Load("chock.zon", []byte(`.{ .policy = .{ .deny = .{"exec.path.id"} }, .programs = .{
    .{ .name = "gh", .paths = .{"/usr/bin/gh"} },
    .{ .name = "git", .calls = .{"exec.path.git-remote-https", "exec.path.curl", "exec.path.id"} },
    .{ .name = "python3", .connects = .{"net.connect.org.pypi.*", "net.connect.com.evil", "net.connect.org.example"} },
} }`))
	org, ods := config.LoadOrg("org.zon", []byte(`.{ .name = "acme", .policy = .{ .default = .allow, .deny = .{"exec.path.curl", "net.connect.com.evil"} } }`))
	if ds.HasErrors() || ods.HasErrors() {
		t.Fatal(ds, ods)
	}
	lines, err := Report(cfg, []*config.Org{org})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"program gh: pinned to /usr/bin/gh",
		"program git: calls exec.path.curl refused (org:acme gives deny)",
		"program git: calls exec.path.git-remote-https allow (declared: it runs inside git's calls)",
		"program git: calls exec.path.id refused (the project's rule gives deny)",
		"program python3: connects net.connect.com.evil refused (org:acme gives deny)",
		"program python3: connects net.connect.org.example allow (declared: only python3's calls reach them)",
		"program python3: connects net.connect.org.pypi.* allow (declared: only python3's calls reach them)",
	}
	var got []string
	for _, l := range lines {
		if strings.HasPrefix(l, "program ") {
			got = append(got, l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
