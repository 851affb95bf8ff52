package lint

import (
	"fmt"
	"hash/maphash"
	"net/url"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/native"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/internal/netaddr"
)

// Input is what one lint run reads: a project configuration (nil when only
// org sources are linted) and the org ceilings.
type Input struct {
	Config *config.Config
	Orgs   []*config.Org
	// ErrorsOnly leaves out the checks that can only warn (the region
	// checks: rule-redundant, rule-dead-by-org), for a caller that needs
	// only to know whether the policy may be used (chock hook).
	ErrorsOnly bool
	// SharedFiles are the files the machine lint runs on has under more
	// than one program name (its PATH, as a session would scan it): each
	// is decided under every one of its names, the strictest winning.
	SharedFiles []SharedFile
}

// SharedFile is one file that several program names mean (sh and dash,
// where /usr/bin/sh is dash).
type SharedFile struct {
	Path  string
	Names []string
}

type linter struct {
	in Input
	// layers are the project's policy and then each org's, as written.
	layers []layer
	// decider decides the actions the checks ask about (see newDecider);
	// full is every rule's evaluator, built only for any other action.
	decider, full *native.Evaluator
	// tools says which servers some rule lets the model use (see toolIndex).
	tools *toolIndex
	// regions is what the region checks (regions.go) have left to spend,
	// wasRedundant the rules they found redundant, and project the
	// project layer as they read it.
	regions      int
	wasRedundant map[*config.Rule]bool
	project      *split
	diags        diag.List
}

// layer is one policy layer as the checks read it.
type layer struct {
	kind, name string
	policy     *config.Policy
}

// Run checks the input and returns every finding, sorted by position.
func Run(in Input) diag.List {
	l := &linter{in: in}
	project := &config.Policy{} // no project: default deny, as native.New has it
	if in.Config != nil {
		project = &in.Config.Policy
	}
	l.layers = append(l.layers, layer{"project", "project", project})
	for _, o := range in.Orgs {
		l.layers = append(l.layers, layer{"org", o.Name.Value, &o.Policy})
	}
	for i := range l.layers {
		if in.Config == nil && l.layers[i].kind == "project" {
			continue
		}
		l.layer(i)
	}
	if c := in.Config; c != nil {
		l.askAtStart(c)
		if !in.ErrorsOnly {
			l.deadByOrg()
		}
		l.secrets(c)
		l.servers(c)
		l.programs(c)
		l.sharedFiles()
		l.dottedVariants(&l.layers[0])
		l.expectations(c)
	}
	l.diags.Sort()
	return l.diags
}

// expectations points at .layer spellings from before.
func (l *linter) expectations(c *config.Config) {
	for _, x := range c.Expect {
		if x.Argv.Set {
			l.argvExpectation(x)
		}
		if x.Layer.Value == "" {
			continue
		}
		kind, name, canonical := config.ParseLayer(x.Layer.Value)
		if canonical {
			continue
		}
		hint := fmt.Sprintf("write .layer = %q", config.LayerSpelling(kind, name))
		if name == "" {
			hint = `write .layer = "org:NAME", naming the org`
		}
		l.add(x.Layer.Span, CodeExpectLayer, fmt.Sprintf("layer %q: a layer is spelled \"project\" or \"org:NAME\"", x.Layer.Value), hint)
	}
}

// argvExpectation decides an expectation that gives a command line (as
// Codex's match and not_match examples are), so a policy whose rules do
// not do what its examples say fails lint: its argv must be a program's
// call of its action, decided as the expectation says.
func (l *linter) argvExpectation(x *config.Expectation) {
	a, err := action.ParseAction(x.Action.Value)
	if err != nil {
		return // the action's own error is said
	}
	if len(x.Argv.Value) == 0 {
		l.add(x.Argv.Span, config.CodeExpectArgv, ".argv is empty: it is a whole command line, its program first", `write .argv = .{ "git", "push" }`)
		return
	}
	want, err := action.Exec(x.Argv.Value[0].Value)
	if err != nil || want != x.Action.Value {
		l.add(x.Argv.Value[0].Span, config.CodeExpectArgv, fmt.Sprintf("the program %q is not the action %s's", x.Argv.Value[0].Value, x.Action.Value),
			fmt.Sprintf("write .action = %q", want))
		return
	}
	r := l.evaluator(a).DecideArgs(a, x.Args(), x.Phase.Value)
	if r.Decision == x.Decision.Value {
		return
	}
	by := "the default"
	for _, lr := range r.Layers {
		if lr.Decision == r.Decision {
			by = fmt.Sprintf("the %s default", config.LayerSpelling(lr.Layer.Kind, lr.Layer.Name))
			if lr.Rule != nil {
				by = fmt.Sprintf("%s at %s", lr.Rule.Key(), at(lr.Rule.Span))
			}
			break
		}
	}
	l.add(x.Argv.Span, config.CodeExpectArgv, fmt.Sprintf("the command line is %s (by %s), and the expectation says %s", r.Decision, by, x.Decision.Value),
		"change the rules or the expectation")
}

func (l *linter) add(span diag.Span, code, msg, hint string) {
	chk, _ := CheckFor(code)
	l.diags = append(l.diags, &diag.Diagnostic{Span: span, Severity: chk.Severity, Code: code, Message: msg, Hint: hint})
}

func at(s diag.Span) string { return s.String() }

// layer runs the checks that look at one layer's rules alone: layer n of
// l.layers.
func (l *linter) layer(n int) {
	layer := &l.layers[n]
	first := newFirstRules(layer.policy.Rules)
	// shared are the rules whose pattern another rule repeats: repeated or
	// in conflict, which is said already.
	var shared map[*config.Rule]bool
	for i, r := range layer.policy.Rules {
		l.namespace(r)
		if r.Args != nil && !action.TakesArgs(r.Pattern) {
			l.add(r.ArgsSpan, CodeArgsNotExec, fmt.Sprintf("%q has .args, but only a call's program (%s) has arguments", r.Pattern, action.NamespaceForms(func(n *action.Namespace) bool { return n.Args })),
				"leave .args out, or make the rule's action an exec.path pattern")
		}
		if r.Decision == config.Allow {
			l.shell(r)
		}
		prev := first.of(i)
		if prev != r {
			if shared == nil {
				shared = map[*config.Rule]bool{}
			}
			shared[prev], shared[r] = true, true
		}
		switch {
		case prev == r:
		case prev.Decision != r.Decision:
			l.add(r.Span, CodeRuleConflict,
				fmt.Sprintf("%q is both %s (%s) and %s here; deny beats ask beats allow, so it is %s",
					r.Pattern, prev.Decision, at(prev.Span), r.Decision, min(prev.Decision, r.Decision)),
				"keep one of the two rules")
		default:
			l.add(r.Span, CodeRuleRepeated,
				fmt.Sprintf("%q is already %s at %s", r.Pattern, r.Decision, at(prev.Span)), "remove one of them")
		}
	}
	if !l.in.ErrorsOnly {
		l.redundant(n, shared, first)
	}
}

// firstRules finds, for each rule, the first rule with the same pattern:
// an open-addressing table of rule numbers, 8 to 16 bytes a rule where a
// map from pattern to rule takes about 56.
type firstRules struct {
	rules []*config.Rule
	slots []int32 // a rule's number plus one; 0 is free
	seed  maphash.Seed
}

func newFirstRules(rules []*config.Rule) *firstRules {
	n := 8
	for n < 2*len(rules) {
		n *= 2
	}
	return &firstRules{rules: rules, slots: make([]int32, n), seed: maphash.MakeSeed()}
}

// find returns the first rule whose pattern is text, among the rules
// of has been asked about, or nil.
func (x *firstRules) find(text string) *config.Rule {
	mask := uint64(len(x.slots) - 1)
	for h := maphash.String(x.seed, text) & mask; ; h = (h + 1) & mask {
		switch k := x.slots[h]; {
		case k == 0:
			return nil
		case x.rules[k-1].Key() == text:
			return x.rules[k-1]
		}
	}
}

// of returns the first of the rules up to rule i with rule i's pattern. It
// is asked for each rule in order.
func (x *firstRules) of(i int) *config.Rule {
	text := x.rules[i].Key()
	mask := uint64(len(x.slots) - 1)
	for h := maphash.String(x.seed, text) & mask; ; h = (h + 1) & mask {
		switch k := x.slots[h]; {
		case k == 0:
			x.slots[h] = int32(i + 1)
			return x.rules[i]
		case x.rules[k-1].Key() == text:
			return x.rules[k-1]
		}
	}
}

func (l *linter) namespace(r *config.Rule) {
	if !action.KnownNamespace(r.Pattern) {
		hint := "known: " + action.NamespaceForms(nil)
		if near := action.NamespaceNear(r.Pattern); near != "" {
			hint = fmt.Sprintf("did you mean %q? known: %s", near, action.NamespaceForms(nil))
		}
		l.add(r.Span, CodeUnknownNamespace,
			fmt.Sprintf("%q is in no namespace chock knows; the rule matches nothing", r.Pattern), hint)
	}
}

func (l *linter) shell(r *config.Rule) {
	s := r.Pattern.Segments()
	if s[0] != "exec" || len(s) < 2 || (s[1] != "path" && s[1] != "*") {
		return
	}
	every := len(s) == 2 && s[1] == "*" || len(s) >= 3 && s[2] == "*"
	switch {
	case every:
		l.add(r.Span, CodeAllowsShell,
			fmt.Sprintf("%q allows every program, shells and interpreters among them", r.Pattern),
			"allow the programs the agent needs one by one, such as exec.path.gh (a program given a secret runs only what its .calls declare)")
	case len(s) >= 3 && action.RunsOthers(s[2]):
		l.add(r.Span, CodeAllowsShell,
			fmt.Sprintf("%q allows %s, which runs other programs: it reaches every program, whatever exec.path rules deny", r.Pattern, s[2]),
			"allow the programs themselves instead, or make it ask (a program given a secret runs only what its .calls declare)")
	}
}

// serverSecret is a secret given to a server: its name and the action
// that uses it.
type serverSecret struct {
	name string
	use  action.Action
}

// serverSecrets are the secrets given to a server, each name once, in the
// order the file gives them.
func serverSecrets(c *config.Config) []serverSecret {
	var out []serverSecret
	seen := map[string]bool{}
	for _, s := range c.Secrets {
		if s.ToPattern.Set && s.ToPattern.Value.Segments()[0] == "mcp" && !seen[s.Name.Value] {
			seen[s.Name.Value] = true
			a, _ := action.ParseAction("secret.use." + s.Name.Value)
			out = append(out, serverSecret{s.Name.Value, a})
		}
	}
	return out
}

// secretUses matches every secret.use action.
var secretUses = action.MustPattern("secret.use.*")

func (l *linter) askAtStart(c *config.Config) {
	give := serverSecrets(c)
	check := func(rules []*config.Rule) {
		for _, r := range rules {
			if r.Decision != config.Ask {
				continue
			}
			what := ""
			for _, ns := range action.Namespaces {
				if ns.Start && action.Overlaps(r.Pattern, ns.Pattern()) {
					what = ns.Pattern().String()
					break
				}
			}
			if what == "" && action.Overlaps(r.Pattern, secretUses) {
				for _, g := range give {
					if r.Pattern.Matches(g.use) {
						what = "secret.use." + g.name + " (a secret given to a server)"
						break
					}
				}
			}
			if what != "" {
				l.add(r.Span, CodeAskAtStart,
					fmt.Sprintf("%q asks about %s, which is decided at session start when nobody can be asked: it reads as refused", r.Pattern, what),
					"make it allow to permit it at start, or deny to say so")
			}
		}
	}
	check(c.Policy.Rules)
}

// serverIndex finds servers by name.
type serverIndex struct {
	// byFirst holds the servers by the part of their name before any '.',
	// which is the second segment of their namespace mcp.NAME.*.
	byFirst map[string][]*config.Server
	names   map[string]bool
}

func newServerIndex(c *config.Config) *serverIndex {
	x := &serverIndex{byFirst: map[string][]*config.Server{}, names: map[string]bool{}}
	for _, s := range c.Servers {
		first, _, _ := strings.Cut(s.Name.Value, ".")
		x.byFirst[first] = append(x.byFirst[first], s)
		x.names[s.Name.Value] = true
	}
	return x
}

// serversReached returns the configured servers whose whole namespace a
// secret's pattern covers (mcp.S.* or mcp.*), and whether it names a server
// that is not configured. A pattern whose second segment is a literal can
// only cover the servers that segment names, so only those are tried.
func (x *serverIndex) serversReached(c *config.Config, p action.Pattern) (reached []*config.Server, unknown string) {
	segs := p.Segments()
	candidates := c.Servers
	if len(segs) >= 2 && p.Kind(1) == action.Literal {
		candidates = x.byFirst[segs[1]]
		if !x.names[segs[1]] {
			unknown = segs[1]
		}
	}
	for _, s := range candidates {
		ns, err := action.ParsePattern("mcp." + s.Name.Value + ".*")
		if err == nil && action.Covers(p, ns) {
			reached = append(reached, s)
		}
	}
	return reached, unknown
}

// everyProgram is exec.path.*: a secret's .to that covers it is given to
// every program.
var everyProgram = func() action.Pattern {
	p, err := action.ParsePattern("exec.path.*")
	if err != nil {
		panic(err)
	}
	return p
}()

func (l *linter) secrets(c *config.Config) {
	servers := newServerIndex(c)
	seen := map[string]*config.Secret{}
	for _, s := range c.Secrets {
		name := s.Name.Value
		if !action.ValidSecretName(name) {
			l.add(s.Name.Span, CodeSecretName,
				fmt.Sprintf("secret name %q: %s", name, action.SecretNameRule),
				"the name becomes part of secret.use.<name>, so a dot would let one entry name a class of actions")
		}
		key := name + "\x00" + s.To.Value + "\x00" + s.Bind.Value.String() + "\x00" + s.As.Value
		if prev, ok := seen[key]; ok {
			l.add(s.Span, CodeSecretRepeated, fmt.Sprintf("secret %s for %q is already given at %s", name, s.To.Value, at(prev.Span)), "remove one of them")
		} else {
			seen[key] = s
		}
		if !s.ToPattern.Set {
			continue
		}
		segs := s.ToPattern.Value.Segments()
		switch segs[0] {
		case "exec":
			l.misfit(s.Bind.Span, s, config.HolderProgram, s.To.Value)
			if action.Covers(s.ToPattern.Value, everyProgram) {
				l.add(s.To.Span, CodeSecretEveryProgram,
					fmt.Sprintf("secret %s is for %q, which reaches every program: whatever the agent runs is given it", name, s.To.Value),
					`name the programs that need it, one entry each: .to = "exec.path.gh"`)
			}
		case "mcp":
			l.serverSecret(c, servers, s)
		case "plugin":
			l.add(s.To.Span, CodeSecretToPlugin, fmt.Sprintf("secret %s is for %q, but a plugin is given nothing today", name, s.To.Value), "")
			continue
		default:
			l.add(s.To.Span, CodeSecretToNamespace,
				fmt.Sprintf("secret %s is for %q; secrets reach only programs (exec.*) and MCP servers (mcp.*)", name, s.To.Value), "")
			continue
		}
		if rule := s.Bind.Value.Rule(); s.As.Value != "" && !rule.ValidAs(s.As.Value) {
			l.add(s.As.Span, CodeSecretAs, fmt.Sprintf("secret %s arrives as %q, which is not %s", name, s.As.Value, rule.AsRule), "")
		}
		if action.ValidSecretName(name) {
			a, _ := action.ParseAction("secret.use." + name)
			if d, _ := l.evaluator(a).Layers[0].Decide(a); d == config.Deny {
				l.add(s.Name.Span, CodeSecretNeverAllowed,
					fmt.Sprintf("no rule allows or asks secret.use.%s, so secret %s is never given", name, name),
					fmt.Sprintf(`add "secret.use.%s" to .policy.allow (or .ask)`, name))
			}
		}
	}
}

func (l *linter) serverSecret(c *config.Config, servers *serverIndex, s *config.Secret) {
	name, segs := s.Name.Value, s.ToPattern.Value.Segments()
	if len(segs) >= 4 && segs[2] == "tool" && s.ToPattern.Value.Kind(2) == action.Literal {
		l.add(s.To.Span, CodeSecretOneTool,
			fmt.Sprintf("secret %s names one tool, %q; a server gets its secrets at start, for all its tools", name, s.To.Value),
			fmt.Sprintf("write .to = \"mcp.%s.*\"", segs[1]))
		return
	}
	reached, unknown := servers.serversReached(c, s.ToPattern.Value)
	if unknown != "" {
		l.add(s.To.Span, CodeSecretUnknownServer,
			fmt.Sprintf("secret %s is for server %q, which is not in .mcp_servers", name, unknown), "")
	}
	// A misfit for servers of both kinds is said once, of the .to.
	if m := s.Bind.Value.Fits(config.HolderLocal); m.Code != "" && m == s.Bind.Value.Fits(config.HolderRemote) {
		l.misfit(s.Bind.Span, s, config.HolderLocal, s.To.Value)
		return
	}
	for _, srv := range reached {
		span := s.Bind.Span
		if !s.Bind.Set {
			span = s.To.Span
		}
		l.misfit(span, s, srv.Holder(), srv.Name.Value)
	}
}

// misfit reports secret s, for target, where holder h cannot take its bind
// (config.Binds).
func (l *linter) misfit(span diag.Span, s *config.Secret, h config.Holder, target string) {
	if m := s.Bind.Value.Fits(h); m.Code != "" && m.Code != config.CodeUnknownBind {
		l.add(span, m.Code, fmt.Sprintf(m.Lint, s.Name.Value, target), m.Hint)
	}
}

// toolSeparator joins a server's name and its tool's in the name the
// gateway offers the tool under (runtime/gateway.Separator; the gateway's
// TestCollidingToolNamesAreOfferedForNeither checks lint refuses it).
const toolSeparator = "__"

func (l *linter) servers(c *config.Config) {
	byName := map[string]*config.Server{}
	for i, s := range c.Servers {
		name := s.Name.Value
		if !action.ValidServerName(name) {
			l.add(s.Name.Span, CodeServerName, fmt.Sprintf("server name %q: %s", name, action.ServerNameRule),
				"the name becomes part of mcp.<server>.*, so a dot would break the action namespace")
		}
		if strings.Contains(name, toolSeparator) {
			l.add(s.Name.Span, CodeServerNameSeparator, fmt.Sprintf("server name %q holds %q, which joins a server's name and its tool's in the names tools are offered under", name, toolSeparator),
				fmt.Sprintf("a tool name would mean two servers' tools (server a's tool b__c and server a__b's tool c are both a__b__c), and one so named is offered under neither; name it %q", strings.ReplaceAll(name, toolSeparator, "-")))
		}
		if prev, ok := byName[name]; ok {
			l.add(s.Name.Span, CodeServerDuplicate, fmt.Sprintf("server %q is already configured at %s", name, at(prev.Span)), "")
		} else {
			byName[name] = s
		}
		if i == action.MaxServers {
			l.add(s.Span, CodeServerTooMany, fmt.Sprintf("%d servers configured; a session has at most %d", len(c.Servers), action.MaxServers), "")
		}
		switch {
		case s.Command.Set && s.URL.Set:
			l.add(s.Span, CodeServerCommandAndURL, fmt.Sprintf("server %q names both .command and .url", name), "a server is run here (.command) or reached (.url), never both")
		case !s.Command.Set && !s.URL.Set:
			l.add(s.Span, CodeServerCommandAndURL, fmt.Sprintf("server %q names neither .command nor .url", name), "")
		}
		if s.Command.Set && (len(s.Command.Value) == 0 || s.Command.Value[0].Value == "") {
			l.add(s.Command.Span, CodeServerEmptyCommand, fmt.Sprintf("server %q has an empty .command", name), `name the program: .command = .{"mcp-server-time"}`)
		}
		if s.URL.Set {
			l.serverURL(s)
		}
		if action.ValidServerName(name) {
			l.toolRule(s)
		}
	}
}

func (l *linter) serverURL(s *config.Server) {
	name, raw := s.Name.Value, s.URL.Value
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || !u.IsAbs() {
		l.add(s.URL.Span, CodeServerURLInvalid, fmt.Sprintf("server %q: %q is not an absolute URL with a host", name, raw), `write it in full: "https://host/path"`)
		return
	}
	if u.Scheme != "https" {
		l.add(s.URL.Span, CodeServerURLScheme, fmt.Sprintf("server %q: %q is %s, not https", name, raw, u.Scheme),
			fmt.Sprintf("use https://: .url = %q (a credential and a tool result must not cross a network in the clear)", "https"+raw[len(u.Scheme):]))
	}
	if u.User != nil {
		l.add(s.URL.Span, CodeServerURLUserinfo, fmt.Sprintf("server %q: the URL carries user information", name),
			`put the credential in .secrets with bind = "header"`)
	}
	if why := netaddr.HostWhy(u.Hostname()); why != "" {
		l.add(s.URL.Span, CodeServerURLLocal, fmt.Sprintf("server %q is at %s, which is refused whatever the policy says", name, why),
			"a server on this machine is run as a .command")
		return
	}
	host := u.Hostname()
	if strings.Contains(u.Host, "[") {
		host = "[" + host + "]"
	}
	segs, err := action.HostSegments(host)
	if err != nil {
		l.add(s.URL.Span, CodeServerURLInvalid, fmt.Sprintf("server %q: %v", name, err), "")
		return
	}
	act := "mcp." + name + ".host." + segs
	a, err := action.ParseAction(act)
	if err != nil {
		return
	}
	res := l.evaluator(a).Decide(a, config.Start)
	if res.Decision == config.Allow {
		return
	}
	// The layer that refuses: the project's when it does not allow, else
	// the first org that caps it. The hint says what that one can do.
	var by *native.LayerResult
	for i := range res.Layers {
		if res.Layers[i].Decision != config.Allow {
			by = &res.Layers[i]
			break
		}
	}
	why := "no rule allows it"
	if by.Rule != nil {
		why = fmt.Sprintf("%q is %s at %s", by.Rule.Pattern, by.Decision, at(by.Rule.Span))
	} else if by.Layer.Kind == "org" {
		why = fmt.Sprintf("the org ceiling %q's default is %s", by.Layer.Name, by.Decision)
	}
	if by.Decision == config.Ask {
		why += " (ask reads as refused at start)"
	}
	hint := fmt.Sprintf("to reach it, allow %q", act)
	if by.Layer.Kind == "org" {
		hint = fmt.Sprintf("the project allows it; the org ceiling %q does not, and only the org's owners can change that", by.Layer.Name)
	}
	l.add(s.URL.Span, CodeServerHostNotAllowed,
		fmt.Sprintf("server %q will be left out: %s is %s at start; %s", name, act, res.Decision, why), hint)
}

func (l *linter) toolRule(s *config.Server) {
	if l.layers[0].policy.Default.Value != config.Deny {
		return
	}
	if l.tools == nil {
		l.tools = newToolIndex(l.layers[0].policy)
	}
	if l.tools.any || l.tools.named[s.Name.Value] {
		return
	}
	l.add(s.Name.Span, CodeServerNoToolRule,
		fmt.Sprintf("no rule allows or asks any tool of server %q: the model may call none of its tools", s.Name.Value),
		fmt.Sprintf("allow the tools it needs, such as \"mcp.%s.tool.<name>\"", s.Name.Value))
}

// toolIndex says, for every server at once, whether a rule that is not
// deny overlaps mcp.SERVER.tool.*, so that checking each server does not
// read every rule again.
type toolIndex struct {
	// any: a rule with a wildcard server segment overlaps every server's
	// tools alike, since '*' there matches any server name.
	any bool
	// named: the servers a rule naming them overlaps the tools of.
	named map[string]bool
}

// anyServerTools is mcp.SERVER.tool.* for a server name no wildcard can tell
// apart from another.
var anyServerTools = action.MustPattern("mcp.x.tool.*")

func newToolIndex(p *config.Policy) *toolIndex {
	x := &toolIndex{named: map[string]bool{}}
	for _, r := range p.Rules {
		// A one-segment pattern is a literal, which no four-segment
		// pattern overlaps.
		if r.Decision == config.Deny || r.Pattern.Len() < 2 {
			continue
		}
		if r.Pattern.Kind(1) != action.Literal {
			x.any = x.any || action.Overlaps(r.Pattern, anyServerTools)
			continue
		}
		name := r.Pattern.Segments()[1]
		if x.named[name] {
			continue
		}
		if tools, err := action.ParsePattern("mcp." + name + ".tool.*"); err == nil && action.Overlaps(r.Pattern, tools) {
			x.named[name] = true
		}
	}
	return x
}

// decided are the actions the checks decide: secret.use.NAME in the project
// layer, and mcp.SERVER.host.HOST at start.
var decided = []action.Pattern{secretUses, action.MustPattern("mcp.*.host.*")}

// evaluator returns an evaluator that decides a as native.New's would. For
// the actions the checks ask about it is newDecider's, built once.
func (l *linter) evaluator(a action.Action) *native.Evaluator {
	for _, p := range decided {
		if p.Matches(a) {
			if l.decider == nil {
				l.decider = newDecider(l.in)
			}
			return l.decider
		}
	}
	if l.full == nil {
		l.full = native.New(l.in.Config, l.in.Orgs)
	}
	return l.full
}

// newDecider is native.New over only the rules that can match an action of
// the decided patterns: a rule that matches no such action never decides
// one, so every decision about them is the same, and a large policy of
// other rules is not indexed a second time.
func newDecider(in Input) *native.Evaluator {
	keep := func(p config.Policy) config.Policy {
		rules := p.Rules
		p.Rules = nil
		for _, r := range rules {
			for _, d := range decided {
				if action.Overlaps(r.Pattern, d) {
					p.Rules = append(p.Rules, r)
					break
				}
			}
		}
		return p
	}
	var cfg *config.Config
	if in.Config != nil {
		cfg = &config.Config{File: in.Config.File, Policy: keep(in.Config.Policy)}
	}
	orgs := make([]*config.Org, len(in.Orgs))
	for i, o := range in.Orgs {
		orgs[i] = &config.Org{File: o.File, Name: o.Name, Policy: keep(o.Policy)}
	}
	return native.New(cfg, orgs)
}
