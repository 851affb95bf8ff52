package config

import (
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/zon"
)

// The blocks of chock.zon and org.zon, one table each: every field's
// reference (type, default, example, summary, the lint codes that guard
// it) beside how the decoder reads it. Reference (reference.go) lists
// them in the order docs/chock-zon.md shows them.

// patternCodes guard every pattern string.
var patternCodes = []string{CodeStarAlone, CodeEmptySegment, CodePartialGlob, CodeBadChar, CodeTooLong, "unknown-namespace"}

func codes(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// zonCodes guard a whole file.
var zonCodes = []string{"zon-syntax", "zon-not-zon", "zon-literal", "zon-duplicate", "zon-too-deep"}

// configBlock is the top level of chock.zon.
var configBlock = newBlock(&block[Config]{
	what:    "the file",
	open:    true,
	summary: "The project's file, at the root of its repository. It configures all of Chock: this toolchain reads the blocks below and leaves every other top-level field to the rest of Chock, except one within edit distance 2 of a block it reads, which is a typo (.secret for .secrets).",
	example: `.{
    .policy = .{ .default = .deny, .allow = .{"exec.path.gh"} },
    .secrets = .{},
    .mcp_servers = .{},
    .programs = .{},
    .credentials = .{ .store = .file },
    .orgs = .{},
    .expect = .{ .{ .action = "exec.path.gh", .decision = .allow } },
}`,
	codes: codes(zonCodes, []string{CodeUnknownBlock, CodeWrongType}),
	fields: []fieldDef[Config]{
		{
			RefField: RefField{"policy", "struct", "deny everything", `.{ .allow = .{"exec.path.gh"} }`, "The project layer's rules and default.", nil},
			decode: func(d *decoder, f field, c *Config) outcome {
				c.Policy = d.policy(f.Value)
				return fieldRead
			},
		},
		{
			RefField: RefField{"secrets", "list of secrets", ".{}", `.{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" } }`, "Which secret may reach which program or MCP server, and how it is given.", nil},
			decode:   list(".secrets", secretBlock, func(v zon.Node) *Secret { return &Secret{Span: v.Span()} }, func(c *Config) *[]*Secret { return &c.Secrets }),
		},
		{
			RefField: RefField{"mcp_servers", "list of servers", ".{}", `.{ .{ .name = "time", .command = .{"mcp-server-time"} } }`, "The MCP servers a session starts.", nil},
			decode:   list(".mcp_servers", serverBlock, func(v zon.Node) *Server { return &Server{Span: v.Span()} }, func(c *Config) *[]*Server { return &c.Servers }),
		},
		{
			RefField: RefField{"programs", "list of programs", ".{}", `.{ .{ .name = "gh", .paths = .{"/usr/bin/gh"} } }`, "Programs pinned to the files they may run as, and the programs they run themselves.", nil},
			decode:   list(".programs", programBlock, func(v zon.Node) *Program { return &Program{Span: v.Span()} }, func(c *Config) *[]*Program { return &c.Programs }),
		},
		{
			RefField: RefField{"credentials", "struct", ".{ .store = .file }", `.{ .store = .keyring }`, "Where chock login keeps secret values.", nil},
			decode: func(d *decoder, f field, c *Config) outcome {
				c.Credentials = Credentials{Span: f.Value.Span()}
				credentialsBlock.decode(d, f.Value, &c.Credentials)
				return fieldRead
			},
		},
		{
			RefField: RefField{"orgs", "list of org names", ".{}", `.{ "acme" }`, "The org ceilings the project expects: chock refuses to decide without a ceiling of each name, from any source (--org, a managed ceiling in /etc/chock/org.d, a bundle, OPA).", []string{CodeWrongType}},
			decode:   texts(".orgs", "an entry of .orgs", func(c *Config) *Field[[]Text] { return &c.Orgs }),
		},
		{
			RefField: RefField{"expect", "list of expectations", ".{}", `.{ .{ .action = "exec.path.curl", .decision = .deny } }`, "Policy tests, run by chock test.", nil},
			decode:   list(".expect", expectationBlock, func(v zon.Node) *Expectation { return &Expectation{Span: v.Span()} }, func(c *Config) *[]*Expectation { return &c.Expect }),
		},
	},
})

// orgRefused is a block of chock.zon an org bundle may not hold: decoding
// it reports code with msg and hint at its name.
func orgRefused(name, code, msg, hint string) fieldDef[Org] {
	return fieldDef[Org]{
		RefField: RefField{Name: name},
		refused:  true,
		decode: func(d *decoder, f field, _ *Org) outcome {
			d.add(f.NameSpan(), diag.Error, code, msg, hint)
			return fieldRead
		},
	}
}

// orgBlock is the top level of org.zon. A missing .name is reported as
// org-name-missing (DecodeOrg), not as a missing field.
var orgBlock = newBlock(&block[Org]{
	what:    "an org bundle source",
	summary: "An org bundle source: an organisation's ceiling over its projects, given with --org or compiled into a signed org bundle with chock compile --org-only, rooted at chock_orgs/NAME so that it loads in OPA beside a project bundle compiled with --link-orgs (for that, .name is lower-case letters, digits, '_' and '-': org-name-not-a-root). An org can only narrow: it has no .secrets, .mcp_servers or .programs, which are the project's.",
	example: `.{
    .name = "acme",
    .version = "2026.11",
    .policy = .{ .deny = .{ "exec.path.curl", "exec.path.wget" } },
}`,
	codes: codes(zonCodes, []string{CodeUnknownField, CodeWrongType, CodeOrgSecrets, CodeOrgServers, CodeOrgPrograms}),
	fields: []fieldDef[Org]{
		{
			RefField: RefField{"name", "string", "", `"acme"`, "The organisation's name: its layer is spelled org:NAME in every output and in .expect's .layer.", []string{CodeOrgName, CodeWrongType}},
			need:     `.name = "your-org"`,
			decode: func(d *decoder, f field, o *Org) outcome {
				var ok bool
				o.Name, ok = d.text(f.Value, ".name")
				if ok && o.Name.Value == "" {
					d.add(f.Value.Span(), diag.Error, CodeOrgName, "the org bundle's .name is empty", "name the organisation, such as .name = \"acme\"")
				}
				return readText(ok)
			},
		},
		{
			RefField: RefField{"version", "string", `""`, `"2026.11"`, "A version the org gives its ceiling, kept in the bundle.", []string{CodeWrongType}},
			decode:   text(".version", func(o *Org) *Text { return &o.Version }),
		},
		{
			RefField: RefField{"policy", "struct", "no ceiling (allow everything)", `.{ .deny = .{"exec.path.curl"} }`, "The org layer's rules and default, written as chock.zon's .policy.", nil},
			decode: func(d *decoder, f field, o *Org) outcome {
				def := o.Policy.Default
				o.Policy = d.policy(f.Value)
				if !o.Policy.Default.Set {
					o.Policy.Default = def
				}
				return fieldRead
			},
		},
		orgRefused("secrets", CodeOrgSecrets, "an org bundle cannot hold .secrets",
			"there is no org layer for secrets: an org may only narrow, so move secret entries to the project's chock.zon"),
		orgRefused("mcp_servers", CodeOrgServers, "an org bundle cannot hold .mcp_servers",
			"servers are configured by the project; an org narrows them through .policy rules such as mcp.<server>.*"),
		orgRefused("programs", CodeOrgPrograms, "an org bundle cannot hold .programs",
			"programs are pinned by the project; an org narrows what runs through exec.path rules"),
	},
})

// policyBlock is a .policy block, of chock.zon and org.zon alike; its
// reference is chock.zon's (orgPolicyRef gives org.zon's).
var policyBlock = newBlock(&block[Policy]{
	what:    ".policy",
	summary: "The project layer: its rules and its default. The effective decision of an action is the most restrictive of this layer and every org ceiling (deny < ask < allow).",
	example: `.{
    .policy = .{
        .default = .deny,
        .allow = .{ "exec.path.gh", "exec.path.git" },
        .ask = .{"secret.use.DEPLOY_KEY"},
        .deny = .{"exec.path.git.lfs"},
        .rules = .{
            .{ .action = "mcp.notion.host.com.notion.*", .decision = .allow, .why = "the docs team's workspace" },
        },
    },
}`,
	codes: []string{CodeUnknownField, CodeWrongType},
	fields: []fieldDef[Policy]{
		{
			RefField: RefField{"default", "decision", ".deny", ".deny",
				"The layer's decision for an action no rule of the layer matches: .allow, .ask or .deny, as an enum literal or a string.",
				[]string{CodeUnknownDecision, CodeWrongType, "rule-redundant"}},
			decode: func(d *decoder, f field, p *Policy) outcome {
				if dec, ok := d.decision(f.Value, ".policy.default"); ok {
					p.Default = Field[Decision]{Value: dec, Span: f.Value.Span(), Set: true}
				}
				return fieldRead
			},
		},
		{
			RefField: RefField{"allow", "list of patterns", ".{}", `.{ "exec.path.gh", "mcp.time.tool.*" }`,
				"Patterns the layer allows. A segment is a literal or *: a * inside matches exactly one segment, a trailing * one or more. The most specific matching rule of the layer decides; identical patterns tie, and deny beats ask beats allow.",
				codes(patternCodes, []string{CodeWrongType, "rule-conflict", "rule-repeated", "rule-redundant", "rule-dead-by-org", "rule-allows-shell", "rule-dotted-variant"})},
			decode: (*decoder).patternList,
		},
		{
			RefField: RefField{"ask", "list of patterns", ".{}", `.{"secret.use.DEPLOY_KEY"}`,
				"Patterns a person is asked about; at session start, when nobody can be asked, ask reads as deny.",
				codes(patternCodes, []string{CodeWrongType, "rule-conflict", "rule-repeated", "rule-redundant", "rule-dead-by-org", "ask-at-start", "program-shared-file"})},
			decode: (*decoder).patternList,
		},
		{
			RefField: RefField{"deny", "list of patterns", ".{}", `.{"exec.path.curl"}`,
				"Patterns the layer refuses.",
				codes(patternCodes, []string{CodeWrongType, "rule-conflict", "rule-repeated", "rule-redundant", "rule-dotted-variant", "program-shared-file"})},
			decode: (*decoder).patternList,
		},
		{
			RefField: RefField{"rules", "list of rules", ".{}", `.{ .{ .action = "exec.path.gh", .decision = .allow, .why = "reviews" } }`,
				"Rules written as structs, to give a rule its .why; they rank with the .allow, .ask and .deny lists alike.",
				[]string{CodeWrongType}},
			decode: func(d *decoder, f field, p *Policy) outcome {
				p.Rules = entries(d, p.Rules, f.Value, ".policy.rules", ruleBlock, d.startRule)
				return fieldRead
			},
		},
	},
})

// ruleBlock is an entry of .policy.rules; its reference is chock.zon's
// (orgRuleRef gives org.zon's).
var ruleBlock = newBlock(&block[Rule]{
	what:    "a rule",
	summary: "One rule written as a struct.",
	example: `.{
    .policy = .{
        .rules = .{
            .{ .action = "mcp.notion.tool.search", .decision = .allow, .why = "read-only search of the docs" },
            .{ .action = "exec.path.git", .decision = .deny, .args = .{ "push" }, .why = "pushes go through the merge queue" },
        },
    },
}`,
	codes: []string{CodeUnknownField, CodeWrongType, CodeMissingField},
	fields: []fieldDef[Rule]{
		{
			RefField: RefField{"action", "pattern", "", `"mcp.notion.host.com.notion.*"`, "The pattern the rule decides.",
				codes(patternCodes, []string{CodeWrongType, "rule-conflict", "rule-repeated", "rule-redundant", "rule-dead-by-org", "rule-allows-shell"})},
			need: `.action = "exec.path.gh"`,
			decode: func(d *decoder, f field, r *Rule) outcome {
				t, ok := d.text(f.Value, ".action")
				if !ok {
					return fieldWrong
				}
				r.Span = t.Span
				r.Pattern, ok = d.pattern(t)
				return wrongUnless(ok)
			},
		},
		{
			RefField: RefField{"decision", "decision", "", ".allow", "The rule's decision: .allow, .ask or .deny.", []string{CodeUnknownDecision, "ask-at-start"}},
			need:     ".decision = .allow, .ask or .deny",
			decode: func(d *decoder, f field, r *Rule) outcome {
				dec, ok := d.decision(f.Value, ".decision")
				r.Decision, r.DecisionSpan = dec, f.Value.Span()
				return wrongUnless(ok)
			},
		},
		{
			RefField: RefField{"why", "string", `""`, `"the docs team's workspace"`, "Why the rule is there: chock explain, chock test's failures and the hints show it.", []string{CodeWrongType}},
			decode:   text(".why", func(r *Rule) *Text { return &r.Why }),
		},
		{
			RefField: RefField{"args", "list of arguments", "none", `.{ "push" }`, "For an exec.path rule: the call's arguments (its argv after the program) it decides, each a string, \"*\" (any one argument) or a list of alternatives. An allow's must match the first arguments; a deny's or an ask's match in order anywhere among them, so git -C x push is still git push. A rule with .args is more specific than the same pattern without, a longer one more than a shorter.",
				[]string{CodeArgsBad, CodeWrongType, "args-not-exec"}},
			decode: func(d *decoder, f field, r *Rule) outcome {
				r.Args, r.ArgsSpan = d.args(f.Value), f.Value.Span()
				return fieldRead
			},
		},
	},
})

// secretBlock is an entry of .secrets.
var secretBlock = newBlock(&block[Secret]{
	what:    "a secret",
	summary: "One secret: the destinations it may reach and how it arrives. Whether it is given is the decision of secret.use.NAME, asked at the call (a program) or at session start (a server). The value is never in the file: chock login stores it.",
	example: `.{
    .secrets = .{
        .{ .name = "GCP_KEY", .to = "exec.path.gcloud", .bind = "file", .as = "GOOGLE_APPLICATION_CREDENTIALS" },
    },
}`,
	codes: []string{CodeUnknownField, CodeWrongType, CodeMissingField, "secret-repeated", "secret-never-allowed"},
	fields: []fieldDef[Secret]{
		{
			RefField: RefField{"name", "string", "", `"GITHUB_TOKEN"`, "The secret's name, letters, digits and _ only: it becomes the action secret.use.NAME.", []string{"secret-name", CodeWrongType}},
			need:     `.name = "GITHUB_TOKEN"`,
			decode:   text(".name", func(s *Secret) *Text { return &s.Name }),
		},
		{
			RefField: RefField{"to", "pattern", "", `"exec.path.gh"`, "Where it may go: a pattern under exec.* (the programs it is offered to) or covering a server's namespace, mcp.SERVER.*.",
				codes(patternCodes, []string{"secret-to-namespace", "secret-to-plugin", "secret-to-every-program", "secret-to-one-tool", "secret-unknown-server"})},
			need: `.to = "exec.path.gh", the action pattern it may reach`,
			decode: func(d *decoder, f field, s *Secret) outcome {
				var ok bool
				s.To, ok = d.text(f.Value, ".to")
				if ok {
					s.ToPattern.Value, s.ToPattern.Set = d.pattern(s.To)
					s.ToPattern.Span = s.To.Span
				}
				return readText(ok)
			},
		},
		{
			RefField: RefField{"bind", "env | file | header", "env", `"header"`, "How it arrives: an environment variable, a file of mode 0600 for the one call (its path in the variable), or an HTTP header to a remote server.",
				[]string{CodeUnknownBind, "secret-file-to-server", "secret-header-to-program", "secret-env-to-url-server", "secret-header-to-command-server"}},
			decode: func(d *decoder, f field, s *Secret) outcome {
				s.Bind.Span = f.Value.Span()
				i, ok := d.enum(f.Value, ".bind", "bind", CodeUnknownBind, bindNames())
				k := f.Value.Kind()
				s.Bind.Set = s.Bind.Set || ok || k == zon.KindString || k == zon.KindEnum
				s.Bind.Value = Bind(i)
				return fieldRead
			},
		},
		{
			RefField: RefField{"as", "string", "the name (env, file); Authorization: Bearer (header)", `"GOOGLE_APPLICATION_CREDENTIALS"`, "The variable or header it arrives under; a named header carries the value alone.", []string{"secret-as-invalid", CodeWrongType}},
			decode:   text(".as", func(s *Secret) *Text { return &s.As }),
		},
	},
})

// serverBlock is an entry of .mcp_servers.
var serverBlock = newBlock(&block[Server]{
	what:    "a server",
	summary: "One MCP server, started as a command or reached at an https URL; at most 8 in a session. Reaching a remote server's host is the start-phase action mcp.NAME.host.HOST; calling a tool is mcp.NAME.tool.TOOL.",
	example: `.{
    .mcp_servers = .{
        .{ .name = "notion", .url = "https://mcp.notion.com/mcp" },
        .{ .name = "time", .command = .{ "uvx", "mcp-server-time" } },
    },
}`,
	codes: []string{CodeUnknownField, CodeWrongType, CodeMissingField, "server-command-and-url", "server-too-many", "server-no-tool-rule"},
	fields: []fieldDef[Server]{
		{
			RefField: RefField{"name", "string", "", `"notion"`, "The server's name, letters, digits, _ and - only, no \"__\" (the separator of its tools' offered names): its actions are mcp.NAME.*.", []string{"server-name", "server-name-separator", "server-duplicate", CodeWrongType}},
			need:     `.name = "notion"`,
			decode:   text(".name", func(s *Server) *Text { return &s.Name }),
		},
		{
			RefField: RefField{"command", "list of strings", "none", `.{ "uvx", "mcp-server-time" }`, "The program and arguments of a local server, spoken to over stdio; give .command or .url, not both.", []string{"server-empty-command", "server-command-and-url", CodeWrongType}},
			decode:   texts(".command", "an argument of .command", func(s *Server) *Field[[]Text] { return &s.Command }),
		},
		{
			RefField: RefField{"url", "string", "none", `"https://mcp.notion.com/mcp"`, "The https URL of a remote server (Streamable HTTP); its host must not be local, and needs an allow rule on mcp.NAME.host.*.",
				[]string{"server-url-invalid", "server-url-scheme", "server-url-userinfo", "server-url-local", "server-host-not-allowed", "server-command-and-url", CodeWrongType}},
			decode: text(".url", func(s *Server) *Text { return &s.URL }),
		},
	},
})

// programBlock is an entry of .programs.
var programBlock = newBlock(&block[Program]{
	what:    "a program",
	summary: "One program pinned to the files it may run as (as Codex's host_executable), the programs it runs inside its own calls, and the hosts only its calls may reach.",
	example: `.{
    .policy = .{ .allow = .{ "exec.path.gh", "exec.path.git", "exec.path.python3" } },
    .programs = .{
        .{ .name = "gh", .paths = .{"/usr/bin/gh"}, .calls = .{"exec.path.git"} },
        .{ .name = "python3", .connects = .{"net.connect.org.pypi.*"} },
    },
}`,
	codes: []string{CodeUnknownField, CodeWrongType, CodeMissingField},
	fields: []fieldDef[Program]{
		{
			RefField: RefField{"name", "string", "", `"gh"`, "The program's name, as in exec.path.NAME.", []string{"program-name", "program-duplicate", CodeWrongType}},
			need:     `.name = "gh"`,
			decode:   text(".name", func(p *Program) *Text { return &p.Name }),
		},
		{
			RefField: RefField{"paths", "list of strings", "any file on the session's PATH", `.{"/usr/bin/gh"}`, "The clean absolute paths the name may run as; no other file runs under it.", []string{"program-path", CodeWrongType}},
			decode:   texts(".paths", "an entry of .paths", func(p *Program) *Field[[]Text] { return &p.Paths }),
		},
		{
			RefField: RefField{"calls", "list of actions", ".{}", `.{"exec.path.git"}`, "The exec.path.PROGRAM actions it runs inside its own calls, allowed there as a project rule would allow them (org ceilings still cap them).", []string{"program-call", "program-call-denied", CodeWrongType}},
			decode:   texts(".calls", "an entry of .calls", func(p *Program) *Field[[]Text] { return &p.Calls }),
		},
		{
			RefField: RefField{"connects", "list of patterns", ".{}", `.{"net.connect.org.pypi.*"}`, "The net.connect patterns its calls may reach through chock's egress proxy, allowed for this program's calls only as a project rule would allow them (a project rule as narrow that refuses, and org ceilings, still stop them).", []string{"program-connect", "program-connect-denied", CodeWrongType}},
			decode:   texts(".connects", "an entry of .connects", func(p *Program) *Field[[]Text] { return &p.Connects }),
		},
	},
})

// credentialsBlock is the .credentials block.
var credentialsBlock = newBlock(&block[Credentials]{
	what:    ".credentials",
	summary: "Where secret values live, for chock login and for sessions.",
	example: `.{
    .credentials = .{ .store = .keyring },
}`,
	codes: []string{CodeUnknownField, CodeWrongType},
	fields: []fieldDef[Credentials]{
		{
			RefField: RefField{"store", "file | env | keyring | secretspec", "file", ".keyring", "file: credentials.json, mode 0600, under the user config folder or $CHOCK_CONFIG_DIR; env: the environment; keyring: the OS keyring (the Secret Service on Linux); secretspec: secretspec's providers.", []string{CodeUnknownStore}},
			decode: func(d *decoder, f field, c *Credentials) outcome {
				if i, ok := d.enum(f.Value, ".credentials.store", "credential store", CodeUnknownStore, storeNames()); ok {
					c.Store = Field[Store]{Value: Store(i), Span: f.Value.Span(), Set: true}
				}
				return fieldRead
			},
		},
	},
})

// expectationBlock is an entry of .expect.
var expectationBlock = newBlock(&block[Expectation]{
	what:    "an expectation",
	summary: "One policy test: an action and the decision it must get, and optionally which layer and rule must decide it. chock test runs them, and counts the rules they exercise.",
	example: `.{
    .policy = .{ .allow = .{"mcp.notion.host.com.notion.*"} },
    .expect = .{
        .{ .action = "mcp.notion.host.com.notion.mcp", .phase = .start, .decision = .allow, .layer = "project", .rule = "mcp.notion.host.com.notion.*" },
        .{ .action = "exec.path.git", .argv = .{ "git", "push", "origin" }, .decision = .deny },
    },
}`,
	codes: []string{CodeUnknownField, CodeWrongType, CodeMissingField},
	fields: []fieldDef[Expectation]{
		{
			RefField: RefField{"action", "action", "", `"exec.path.gh"`, "One concrete action: no *.", []string{"expect-wildcard", CodeBadChar, CodeTooLong, CodeEmptySegment, CodeWrongType}},
			need:     `.action = "exec.path.gh"`,
			decode:   (*decoder).expectAction,
		},
		{
			RefField: RefField{"decision", "decision", "", ".allow", "The effective decision it must get.", []string{CodeUnknownDecision}},
			need:     ".decision = .allow, .ask or .deny",
			decode: func(d *decoder, f field, x *Expectation) outcome {
				dec, ok := d.decision(f.Value, ".decision")
				x.Decision = Field[Decision]{Value: dec, Span: f.Value.Span(), Set: true}
				return wrongUnless(ok)
			},
		},
		{
			RefField: RefField{"phase", "loop | start", "loop", ".start", "When it is asked: in the loop, or at session start, where ask reads as deny.", []string{CodeUnknownPhase}},
			decode: func(d *decoder, f field, x *Expectation) outcome {
				i, ok := d.enum(f.Value, ".phase", "phase", CodeUnknownPhase, phaseNames())
				x.Phase = Field[Phase]{Value: Phase(i), Span: f.Value.Span(), Set: true}
				return wrongUnless(ok)
			},
		},
		{
			RefField: RefField{"layer", "string", "any layer", `"org:acme"`, "The layer that must decide it: \"project\" or \"org:NAME\".", []string{"expect-layer-spelling", CodeWrongType}},
			decode:   text(".layer", func(x *Expectation) *Text { return &x.Layer }),
		},
		{
			RefField: RefField{"rule", "string", "any rule", `"exec.path.gh"`, "The pattern of the deciding rule, or \"default\" for a layer's default.", []string{CodeWrongType}},
			decode:   text(".rule", func(x *Expectation) *Text { return &x.Rule }),
		},
		{
			RefField: RefField{"argv", "list of strings", "none", `.{ "git", "push", "origin" }`, "For an exec.path action: the whole command line the call runs, its program first, so that the rules with .args decide it (as Codex's match and not_match examples do). chock lint decides these at once and reports one that fails.", []string{CodeExpectArgv, CodeWrongType}},
			decode:   texts(".argv", "an element of .argv", func(x *Expectation) *Field[[]Text] { return &x.Argv }),
		},
	},
})
