package compile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/rego"
)

// policy is a test policy: a project file and org sources.
type policy struct {
	name    string
	project string
	orgs    []string
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testPolicies(t testing.TB) []policy {
	return []policy{
		{"examples", readFile(t, filepath.Join("..", "examples", "chock.zon")), []string{readFile(t, filepath.Join("..", "examples", "org.zon"))}},
		{"spec", `.{ .policy = .{
			.allow = .{ "secret.use.*", "exec.path.gh", "exec.*", "mcp.*.tool.search", "mcp.notion.*" },
			.ask = .{ "secret.use.DEPLOY_KEY", "mcp.*.tool.*", "exec.path.gh" },
			.deny = .{ "exec.path.curl", "mcp.*.*.x" },
			.rules = .{ .{ .action = "mcp.notion.host.com.notion.*", .decision = .allow, .why = "docs" },
			            .{ .action = "net.fetch.[::1]", .decision = .allow },
			            .{ .action = "net.fetch.*.[::1].*", .decision = .ask },
			            .{ .action = "*.path.*", .decision = .ask } },
		} }`, []string{
			`.{ .name = "acme", .policy = .{ .deny = .{"exec.path.gh", "mcp.*.tool.delete"}, .ask = .{"exec.path.git"} } }`,
			`.{ .name = "strict", .policy = .{ .default = .ask, .allow = .{"secret.*", "mcp.notion.*"} } }`,
		}},
		{"empty", `.{}`, nil},
		{"default-allow", `.{ .policy = .{ .default = .allow, .deny = .{"exec.path.rm"} } }`, nil},
	}
}

func load(t testing.TB, p policy) Input {
	t.Helper()
	c, ds := config.Load("chock.zon", []byte(p.project))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	in := Input{Config: c}
	for i, o := range p.orgs {
		org, ds := config.LoadOrg(fmt.Sprintf("org%d.zon", i+1), []byte(o))
		if ds.HasErrors() {
			t.Fatal(ds)
		}
		in.Orgs = append(in.Orgs, org)
	}
	return in
}

// opaQuery prepares a query against the compiled bundle.
func opaQuery(t testing.TB, out *Output, query string) rego.PreparedEvalQuery {
	t.Helper()
	b, err := out.Bundle(nil)
	if err != nil {
		t.Fatal(err)
	}
	pq, err := rego.New(rego.Query(query), rego.ParsedBundle("chock", b)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pq
}

func toValue(x any) (ast.Value, error) { return ast.InterfaceToValue(x) }

func evalInput(v ast.Value) rego.EvalOption { return rego.EvalParsedInput(v) }

func evalJSON(t testing.TB, pq rego.PreparedEvalQuery, input any) map[string]any {
	t.Helper()
	v, err := ast.InterfaceToValue(input)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := pq.Eval(context.Background(), rego.EvalParsedInput(v))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		t.Fatalf("undefined result for %v", input)
	}
	m, ok := rs[0].Expressions[0].Value.(map[string]any)
	if !ok {
		t.Fatalf("result is %T", rs[0].Expressions[0].Value)
	}
	return m
}

// nativeJSON renders a native decision in the query contract's shape.
func nativeJSON(a string, phase config.Phase, r native.Result) map[string]any {
	layers := []any{}
	for _, lr := range r.Layers {
		var rule any
		if lr.Rule != nil {
			rule = map[string]any{"pattern": lr.Rule.Pattern.String(), "decision": lr.Rule.Decision.String(), "why": lr.Rule.Why.Value,
				"span": lr.Rule.Span}
		}
		l := map[string]any{"layer": lr.Layer.Kind, "name": lr.Layer.Name, "decision": lr.Decision.String(), "default": lr.Rule == nil, "rule": rule}
		if lr.Rule == nil && lr.Layer.Policy.Default.Set {
			l["default_span"] = lr.Layer.Policy.Default.Span
		}
		layers = append(layers, l)
	}
	var capped any
	if r.CappedBy != nil {
		capped = r.CappedBy.Name
	}
	return map[string]any{"action": a, "phase": phase.String(), "decision": r.Decision.String(), "layers": layers, "capped_by": capped, "start_refusal": r.StartRefusal}
}

// randomActions draws actions from the policy's own segments.
func randomActions(in Input, n int, seed uint64) []string {
	segSet := map[string]bool{"x": true, "y": true}
	add := func(p action.Pattern) {
		for _, s := range p.Segments() {
			if s != "*" {
				segSet[s] = true
			}
		}
	}
	if in.Config != nil {
		for _, r := range in.Config.Policy.Rules {
			add(r.Pattern)
		}
	}
	for _, o := range in.Orgs {
		for _, r := range o.Policy.Rules {
			add(r.Pattern)
		}
	}
	var segs []string
	for s := range segSet {
		segs = append(segs, s)
	}
	sort.Strings(segs)
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]string, n)
	for i := range out {
		k := 1 + r.IntN(7)
		parts := make([]string, k)
		for j := range parts {
			parts[j] = segs[r.IntN(len(segs))]
		}
		out[i] = strings.Join(parts, ".")
	}
	return out
}

func normalize(t testing.TB, v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOPAMatchesNative is the property test: on random actions drawn from
// each policy's own segments, OPA's decision equals the native matcher's,
// layers, deciding rules and positions included.
func TestOPAMatchesNative(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 5000
	}
	ps := append(testPolicies(t), policy{name: "shapes"})
	for _, p := range ps {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			var in Input
			actions := func(n int, seed uint64) []string { return randomActions(in, n, seed) }
			if p.name == "shapes" {
				in, actions = shapePolicy(t), shapeActions
			} else {
				in = load(t, p)
			}
			out, err := Compile(in)
			if err != nil {
				t.Fatal(err)
			}
			pq := opaQuery(t, out, "data.chock.decision")
			ev := native.New(in.Config, in.Orgs)
			for i, a := range actions(n, uint64(len(p.name))) {
				phase := config.Loop
				if i%3 == 0 {
					phase = config.Start
				}
				act, err := action.ParseAction(a)
				if err != nil {
					t.Fatal(err)
				}
				want := normalize(t, nativeJSON(a, phase, ev.Decide(act, phase)))
				got := normalize(t, evalJSON(t, pq, map[string]any{"action": a, "phase": phase.String()}))
				if !reflect.DeepEqual(got, want) {
					g, _ := json.Marshal(got)
					w, _ := json.Marshal(want)
					t.Fatalf("%s at %s:\n OPA    %s\n native %s", a, phase, g, w)
				}
			}
		})
	}
}

func TestMalformedInput(t *testing.T) {
	out, err := Compile(load(t, testPolicies(t)[0]))
	if err != nil {
		t.Fatal(err)
	}
	pq := opaQuery(t, out, "data.chock.decision")
	for _, in := range []any{
		map[string]any{},
		map[string]any{"action": ""},
		map[string]any{"action": "exec..gh"},
		map[string]any{"action": ".exec"},
		map[string]any{"action": "exec.path.*"},
		map[string]any{"action": "exec.path.g h"},
		map[string]any{"action": 7},
		map[string]any{"action": "exec.path.gh", "phase": "later"},
		map[string]any{"action": "exec.path.gh", "phase": 1},
		map[string]any{"action": strings.Repeat("a.", action.MaxSegments) + "a"},
		"exec.path.gh",
	} {
		got := evalJSON(t, pq, in)
		if got["decision"] != "deny" || got["error"] == nil || got["error"] == "" {
			t.Errorf("input %v: %v", in, got)
		}
	}
	got := evalJSON(t, pq, map[string]any{"action": "exec.path.gh"})
	if got["phase"] != "loop" || got["error"] != nil || got["decision"] != "allow" {
		t.Errorf("a missing phase reads as loop: %v", got)
	}
}

func TestSecretsQuery(t *testing.T) {
	p := policy{"s", `.{
		.policy = .{ .allow = .{"secret.use.*", "mcp.*.tool.*", "mcp.*.host.*"} },
		.secrets = .{
			.{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" },
			.{ .name = "ALL", .to = "exec.*" },
			.{ .name = "GCP_KEY", .to = "exec.path.gcloud", .bind = "file", .as = "GOOGLE_APPLICATION_CREDENTIALS" },
			.{ .name = "NOTION_TOKEN", .to = "mcp.notion.*", .bind = "header" },
			.{ .name = "EVERY_SERVER", .to = "mcp.*" },
			.{ .name = "ONE_TOOL", .to = "mcp.notion.tool.search" },
		},
		.mcp_servers = .{ .{ .name = "notion", .url = "https://mcp.notion.com/mcp" }, .{ .name = "time", .command = .{"t"} } },
	}`, nil}
	out, err := Compile(load(t, p))
	if err != nil {
		t.Fatal(err)
	}
	pq := opaQuery(t, out, "data.chock.secrets")
	names := func(input any) []string {
		v, _ := ast.InterfaceToValue(input)
		rs, err := pq.Eval(context.Background(), rego.EvalParsedInput(v))
		if err != nil || len(rs) != 1 {
			t.Fatalf("secrets for %v: %v %v", input, rs, err)
		}
		var ns []string
		for _, s := range rs[0].Expressions[0].Value.([]any) {
			ns = append(ns, s.(map[string]any)["name"].(string))
		}
		return ns
	}
	tests := []struct {
		input any
		want  []string
	}{
		{map[string]any{"action": "exec.path.gh"}, []string{"GITHUB_TOKEN", "ALL"}},
		{map[string]any{"action": "exec.path.gcloud"}, []string{"ALL", "GCP_KEY"}},
		{map[string]any{"action": "exec.path.ls"}, []string{"ALL"}},
		{map[string]any{"server": "notion"}, []string{"NOTION_TOKEN", "EVERY_SERVER"}},
		{map[string]any{"server": "time"}, []string{"EVERY_SERVER"}},
		{map[string]any{"action": "mcp.notion.tool.search"}, nil},
		{map[string]any{}, nil},
		{"junk", nil},
	}
	for _, tt := range tests {
		if got := names(tt.input); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("secrets for %v = %v, want %v", tt.input, got, tt.want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	var prev []byte
	for i := 0; i < 3; i++ {
		out, err := Compile(load(t, testPolicies(t)[1]))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := out.WriteBundle(&buf, nil); err != nil {
			t.Fatal(err)
		}
		if prev != nil && !bytes.Equal(prev, buf.Bytes()) {
			t.Fatal("two compilations of the same input differ")
		}
		prev = buf.Bytes()
	}
}

// shapeSegments are the segments patterns of every shape are made of: a
// literal, a literal holding glob metacharacters (an IPv6 host) and '*'.
var shapeSegments = []string{"a", "[::1]", "*"}

// everyShape is a pattern of every shape up to five segments (every
// sequence of literal, metacharacter literal and '*', a last '*' being the
// trailing one), and one of action.MaxSegments segments.
func everyShape() []action.Pattern {
	var out []action.Pattern
	var walk func(segs []string)
	walk = func(segs []string) {
		if len(segs) > 0 {
			if p, err := action.ParsePattern(strings.Join(segs, ".")); err == nil {
				out = append(out, p)
			}
		}
		if len(segs) == 5 {
			return
		}
		for _, s := range shapeSegments {
			walk(append(segs[:len(segs):len(segs)], s))
		}
	}
	walk(nil)
	long := make([]string, action.MaxSegments)
	for i := range long {
		long[i] = "*"
	}
	long[0], long[5] = "a", "[::1]"
	return append(out, action.MustPattern(strings.Join(long, ".")))
}

// shapePolicy is a policy with one rule of every shape, its literals
// varied so that rules of one shape differ.
func shapePolicy(t testing.TB) Input {
	var b strings.Builder
	b.WriteString(".{ .policy = .{ .rules = .{\n")
	for i, p := range everyShape() {
		pat := p.String()
		if i%3 == 1 {
			pat = strings.ReplaceAll(pat, "a", "b")
		}
		fmt.Fprintf(&b, "    .{ .action = %q, .decision = .%s },\n", pat, []string{"allow", "ask", "deny"}[i%3])
	}
	b.WriteString("} } }\n")
	return load(t, policy{"shapes", b.String(), []string{`.{ .name = "o", .policy = .{ .deny = .{ "a.*.*", "a.[::1].*", "b.*.a" }, .ask = .{ "*.a" } } }`}})
}

// shapeActions are random actions over the shapes' segments.
func shapeActions(n int, seed uint64) []string {
	segs := []string{"a", "b", "[::1]", "x"}
	r := rand.New(rand.NewPCG(seed, 3))
	out := make([]string, n)
	for i := range out {
		k := 1 + r.IntN(7)
		if i%50 == 0 {
			k = action.MaxSegments - r.IntN(2)
		}
		parts := make([]string, k)
		for j := range parts {
			parts[j] = segs[r.IntN(len(segs))]
		}
		out[i] = strings.Join(parts, ".")
	}
	return out
}

// TestRuleIndex proves that a pattern of any shape compiles to at most
// two rules (one, in fact) and that OPA's rule index hands evaluation
// exactly the rules that match, so no generated rule is one the index
// must hand over on every query.
func TestRuleIndex(t *testing.T) {
	for _, p := range everyShape() {
		in := load(t, policy{"one", fmt.Sprintf(".{ .policy = .{ .allow = .{ %q } } }", p.String()), nil})
		out, err := Compile(in)
		if err != nil {
			t.Fatal(err)
		}
		rules := 0
		for _, m := range out.Parsed {
			for _, r := range m.Rules {
				if r.Head.Name == "core" {
					rules++
				}
			}
		}
		rules -= len(config.WithBuiltins(&config.Policy{}, "project").Rules) // chock's file defaults
		if rules > 2 || rules < 1 {
			t.Fatalf("%s compiles to %d rules", p, rules)
		}
	}
	in := shapePolicy(t)
	out, err := Compile(in)
	if err != nil {
		t.Fatal(err)
	}
	c := ast.NewCompiler()
	c.Compile(out.Parsed)
	if c.Failed() {
		t.Fatal(c.Errors)
	}
	idx := c.RuleIndex(ast.MustParseRef("data.chock.core"))
	if idx == nil {
		t.Fatal("no rule index for data.chock.core")
	}
	projectRules := config.WithBuiltins(&in.Config.Policy, "project").Rules
	orgRules := config.WithBuiltins(&in.Orgs[0].Policy, "org").Rules
	nums := ruleNumbers(projectRules, 0)
	for _, a := range shapeActions(5000, 3) {
		act, _ := action.ParseAction(a)
		segs := make([]*ast.Term, len(act))
		for i, s := range act {
			segs[i] = ast.StringTerm(s)
		}
		input := ast.NewObject(ast.Item(ast.StringTerm("action"), ast.StringTerm(a)), ast.Item(ast.StringTerm("segments"), ast.ArrayTerm(segs...)))
		res, err := idx.Lookup(resolver{input})
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, r := range res.Rules {
			got = append(got, r.Head.Key.String())
		}
		for i, r := range projectRules {
			if r.Pattern.Matches(act) {
				want = append(want, fmt.Sprint(nums[i]))
			}
		}
		base := out.Meta.Stride
		for i, r := range orgRules {
			if r.Pattern.Matches(act) {
				want = append(want, fmt.Sprint(ruleNumbers(orgRules, base)[i]))
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: the index hands over rules %v, the rules that match are %v", a, got, want)
		}
	}
}

type resolver struct{ input ast.Value }

func (r resolver) Resolve(ref ast.Ref) (ast.Value, error) {
	if ref.HasPrefix(ast.InputRootRef) {
		v, err := r.input.Find(ref[1:])
		if err != nil {
			return nil, nil
		}
		return v, nil
	}
	return nil, fmt.Errorf("unexpected ref %v", ref)
}

func (r resolver) ResolveSubRefPrefix(ast.Ref) (ast.Value, error) { return nil, nil }

var _ = bundle.Bundle{}

// TestGeneratedRegoIsFormatted: the generator writes what opa fmt would, so
// bundles need no formatting pass (and their signatures cover the bytes
// reviewers read).
func TestGeneratedRegoIsFormatted(t *testing.T) {
	ps := append(testPolicies(t), policy{"gen", genPolicy(200), nil})
	for _, p := range ps {
		out, err := Compile(load(t, p))
		if err != nil {
			t.Fatal(err)
		}
		for path, src := range out.Modules {
			f, err := format.SourceWithOpts(path, []byte(src), format.Opts{RegoVersion: ast.RegoV1})
			if err != nil {
				t.Fatal(err)
			}
			if string(f) != src {
				t.Errorf("%s: %s is not as opa fmt writes it", p.name, path)
			}
		}
	}
}

// TestLayerASTIsItsText: the layer modules built as ast values are what
// OPA's parser reads from their text, rule by rule, rows included.
func TestLayerASTIsItsText(t *testing.T) {
	ins := []Input{shapePolicy(t), load(t, policy{"gen", genPolicy(200), nil})}
	for _, p := range testPolicies(t) {
		ins = append(ins, load(t, p))
	}
	for _, in := range ins {
		out, err := Compile(in)
		if err != nil {
			t.Fatal(err)
		}
		for path, built := range out.Parsed {
			layer := strings.HasPrefix(path, "chock/layer/") || strings.HasPrefix(path, "chock_orgs/")
			parsed, err := ast.ParseModuleWithOpts(path, out.Modules[path], ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: !layer})
			if err != nil {
				t.Fatal(err)
			}
			if !parsed.Package.Equal(built.Package) || len(parsed.Rules) != len(built.Rules) || len(parsed.Imports) != len(built.Imports) {
				t.Fatalf("%s: %d rules parsed, %d built", path, len(parsed.Rules), len(built.Rules))
			}
			for i, r := range parsed.Rules {
				b := built.Rules[i]
				if !r.Equal(b) || r.Location.Row != b.Location.Row || r.Location.File != b.Location.File || b.Module != built {
					t.Fatalf("%s: rule %d parsed as\n%v (row %d)\nbuilt as\n%v (row %d)", path, i, r, r.Location.Row, b, b.Location.Row)
				}
			}
			// The METADATA is in the text alone: each layer rule has one,
			// naming its chock.zon rule, and the parser attaches it to it.
			if !layer {
				continue
			}
			annotated, err := ast.ParseModuleWithOpts(path, out.Modules[path], ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range annotated.Rules {
				if len(r.Annotations) != 1 || r.Annotations[0].Custom["pattern"] == nil || r.Annotations[0].Custom["span"] == nil {
					t.Fatalf("%s: rule %d's METADATA: %v", path, i, r.Annotations)
				}
				if len(built.Rules[i].Annotations) != 0 {
					t.Fatalf("%s: rule %d is built with METADATA, which nothing in chock reads", path, i)
				}
			}
		}
	}
}
