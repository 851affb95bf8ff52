package config

// The field reference of chock.zon and org.zon: every block and field the
// decoder reads, with its type, default, an example and the lint codes
// that guard it. docs/chock-zon.md is generated from it (lint's
// ReferenceMarkdown, which knows the codes), and compile/lint's tests keep
// it in step with the decoder: a field the decoder reads that this table
// lacks, or the other way round, fails them, and so does a code that is
// not in lint's catalog or a catalog code no field names.

// RefBlock is one block of a file: the file itself, a struct or the
// entries of a list of structs.
type RefBlock struct {
	// File is "chock.zon" or "org.zon".
	File string
	// Path is where the block is: "" for the file itself, "policy", or
	// "secrets[]" for each entry of the list .secrets.
	Path    string
	Summary string
	// Example is a whole document that writes every field of the block.
	Example string
	// Codes are the lint codes about the block as a whole.
	Codes  []string
	Fields []RefField
}

// RefField is one field of a block.
type RefField struct {
	Name string
	Type string
	// Default is what an unwritten field means; "required" when it must
	// be written.
	Default string
	// Example is a value as it would be written after .name =.
	Example string
	Summary string
	Codes   []string
}

// patternCodes guard every pattern string.
var patternCodes = []string{CodeStarAlone, CodeEmptySegment, CodePartialGlob, CodeBadChar, CodeTooLong, "unknown-namespace"}

func codes(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// policyFields are the fields of a .policy block, with def the default of
// .default in that file.
func policyFields(def string) []RefField {
	list := "list of patterns"
	return []RefField{
		{"default", "decision", def, ".deny",
			"The layer's decision for an action no rule of the layer matches: .allow, .ask or .deny, as an enum literal or a string.",
			[]string{CodeUnknownDecision, CodeWrongType, "rule-redundant"}},
		{"allow", list, ".{}", `.{ "exec.path.gh", "mcp.time.tool.*" }`,
			"Patterns the layer allows. A segment is a literal or *: a * inside matches exactly one segment, a trailing * one or more. The most specific matching rule of the layer decides; identical patterns tie, and deny beats ask beats allow.",
			codes(patternCodes, []string{CodeWrongType, "rule-conflict", "rule-repeated", "rule-redundant", "rule-dead-by-org", "rule-allows-shell", "rule-dotted-variant"})},
		{"ask", list, ".{}", `.{"secret.use.DEPLOY_KEY"}`,
			"Patterns a person is asked about; at session start, when nobody can be asked, ask reads as deny.",
			codes(patternCodes, []string{CodeWrongType, "rule-conflict", "rule-repeated", "rule-redundant", "rule-dead-by-org", "ask-at-start"})},
		{"deny", list, ".{}", `.{"exec.path.curl"}`,
			"Patterns the layer refuses.",
			codes(patternCodes, []string{CodeWrongType, "rule-conflict", "rule-repeated", "rule-redundant", "rule-dotted-variant"})},
		{"rules", "list of rules", ".{}", `.{ .{ .action = "exec.path.gh", .decision = .allow, .why = "reviews" } }`,
			"Rules written as structs, to give a rule its .why; they rank with the .allow, .ask and .deny lists alike.",
			[]string{CodeWrongType}},
	}
}

// ruleFields are the fields of a .policy.rules entry.
func ruleFields() []RefField {
	return []RefField{
		{"action", "pattern", "required", `"mcp.notion.host.com.notion.*"`, "The pattern the rule decides.",
			codes(patternCodes, []string{CodeWrongType, "rule-conflict", "rule-repeated", "rule-redundant", "rule-dead-by-org", "rule-allows-shell"})},
		{"decision", "decision", "required", ".allow", "The rule's decision: .allow, .ask or .deny.", []string{CodeUnknownDecision, "ask-at-start"}},
		{"why", "string", `""`, `"the docs team's workspace"`, "Why the rule is there: chock explain, chock test's failures and the hints show it.", []string{CodeWrongType}},
	}
}

// Reference is every block of chock.zon, then of org.zon, in the order
// docs/chock-zon.md shows them.
var Reference = []RefBlock{
	{
		File: "chock.zon", Path: "",
		Summary: "The project's file, at the root of its repository. It configures all of Chock: this toolchain reads the blocks below and leaves every other top-level field to the rest of Chock, except one within edit distance 2 of a block it reads, which is a typo (.secret for .secrets).",
		Example: `.{
    .policy = .{ .default = .deny, .allow = .{"exec.path.gh"} },
    .secrets = .{},
    .mcp_servers = .{},
    .programs = .{},
    .credentials = .{ .store = .file },
    .expect = .{ .{ .action = "exec.path.gh", .decision = .allow } },
}`,
		Codes: []string{"zon-syntax", "zon-not-zon", "zon-literal", "zon-duplicate", "zon-too-deep", CodeUnknownBlock, CodeWrongType},
		Fields: []RefField{
			{"policy", "struct", "deny everything", `.{ .allow = .{"exec.path.gh"} }`, "The project layer's rules and default.", nil},
			{"secrets", "list of secrets", ".{}", `.{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" } }`, "Which secret may reach which program or MCP server, and how it is given.", nil},
			{"mcp_servers", "list of servers", ".{}", `.{ .{ .name = "time", .command = .{"mcp-server-time"} } }`, "The MCP servers a session starts.", nil},
			{"programs", "list of programs", ".{}", `.{ .{ .name = "gh", .paths = .{"/usr/bin/gh"} } }`, "Programs pinned to the files they may run as, and the programs they run themselves.", nil},
			{"credentials", "struct", ".{ .store = .file }", `.{ .store = .keyring }`, "Where chock login keeps secret values.", nil},
			{"expect", "list of expectations", ".{}", `.{ .{ .action = "exec.path.curl", .decision = .deny } }`, "Policy tests, run by chock test.", nil},
		},
	},
	{
		File: "chock.zon", Path: "policy",
		Summary: "The project layer: its rules and its default. The effective decision of an action is the most restrictive of this layer and every org ceiling (deny < ask < allow).",
		Example: `.{
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
		Codes:  []string{CodeUnknownField, CodeWrongType},
		Fields: policyFields(".deny"),
	},
	{
		File: "chock.zon", Path: "policy.rules[]",
		Summary: "One rule written as a struct.",
		Example: `.{
    .policy = .{
        .rules = .{
            .{ .action = "mcp.notion.tool.search", .decision = .allow, .why = "read-only search of the docs" },
        },
    },
}`,
		Codes:  []string{CodeUnknownField, CodeWrongType, CodeMissingField},
		Fields: ruleFields(),
	},
	{
		File: "chock.zon", Path: "secrets[]",
		Summary: "One secret: the destinations it may reach and how it arrives. Whether it is given is the decision of secret.use.NAME, asked at the call (a program) or at session start (a server). The value is never in the file: chock login stores it.",
		Example: `.{
    .secrets = .{
        .{ .name = "GCP_KEY", .to = "exec.path.gcloud", .bind = "file", .as = "GOOGLE_APPLICATION_CREDENTIALS" },
    },
}`,
		Codes: []string{CodeUnknownField, CodeWrongType, CodeMissingField, "secret-repeated", "secret-never-allowed"},
		Fields: []RefField{
			{"name", "string", "required", `"GITHUB_TOKEN"`, "The secret's name, letters, digits and _ only: it becomes the action secret.use.NAME.", []string{"secret-name", CodeWrongType}},
			{"to", "pattern", "required", `"exec.path.gh"`, "Where it may go: a pattern under exec.* (the programs it is offered to) or covering a server's namespace, mcp.SERVER.*.",
				codes(patternCodes, []string{"secret-to-namespace", "secret-to-plugin", "secret-to-one-tool", "secret-unknown-server"})},
			{"bind", "env | file | header", "env", `"header"`, "How it arrives: an environment variable, a file of mode 0600 for the one call (its path in the variable), or an HTTP header to a remote server.",
				[]string{CodeUnknownBind, "secret-file-to-server", "secret-header-to-program", "secret-env-to-url-server", "secret-header-to-command-server"}},
			{"as", "string", "the name (env, file); Authorization: Bearer (header)", `"GOOGLE_APPLICATION_CREDENTIALS"`, "The variable or header it arrives under; a named header carries the value alone.", []string{"secret-as-invalid", CodeWrongType}},
		},
	},
	{
		File: "chock.zon", Path: "mcp_servers[]",
		Summary: "One MCP server, started as a command or reached at an https URL; at most 8 in a session. Reaching a remote server's host is the start-phase action mcp.NAME.host.HOST; calling a tool is mcp.NAME.tool.TOOL.",
		Example: `.{
    .mcp_servers = .{
        .{ .name = "notion", .url = "https://mcp.notion.com/mcp" },
        .{ .name = "time", .command = .{ "uvx", "mcp-server-time" } },
    },
}`,
		Codes: []string{CodeUnknownField, CodeWrongType, CodeMissingField, "server-command-and-url", "server-too-many", "server-no-tool-rule"},
		Fields: []RefField{
			{"name", "string", "required", `"notion"`, "The server's name, letters, digits, _ and - only: its actions are mcp.NAME.*.", []string{"server-name", "server-duplicate", CodeWrongType}},
			{"command", "list of strings", "none", `.{ "uvx", "mcp-server-time" }`, "The program and arguments of a local server, spoken to over stdio; give .command or .url, not both.", []string{"server-empty-command", "server-command-and-url", CodeWrongType}},
			{"url", "string", "none", `"https://mcp.notion.com/mcp"`, "The https URL of a remote server (Streamable HTTP); its host must not be local, and needs an allow rule on mcp.NAME.host.*.",
				[]string{"server-url-invalid", "server-url-scheme", "server-url-userinfo", "server-url-local", "server-host-not-allowed", "server-command-and-url", CodeWrongType}},
		},
	},
	{
		File: "chock.zon", Path: "programs[]",
		Summary: "One program pinned to the files it may run as (as Codex's host_executable), and the programs it runs inside its own calls.",
		Example: `.{
    .policy = .{ .allow = .{ "exec.path.gh", "exec.path.git" } },
    .programs = .{
        .{ .name = "gh", .paths = .{"/usr/bin/gh"}, .calls = .{"exec.path.git"} },
    },
}`,
		Codes: []string{CodeUnknownField, CodeWrongType, CodeMissingField},
		Fields: []RefField{
			{"name", "string", "required", `"gh"`, "The program's name, as in exec.path.NAME.", []string{"program-name", "program-duplicate", CodeWrongType}},
			{"paths", "list of strings", "any file on the session's PATH", `.{"/usr/bin/gh"}`, "The clean absolute paths the name may run as; no other file runs under it.", []string{"program-path", CodeWrongType}},
			{"calls", "list of actions", ".{}", `.{"exec.path.git"}`, "The exec.path.PROGRAM actions it runs inside its own calls, allowed there as a project rule would allow them (org ceilings still cap them).", []string{"program-call", "program-call-denied", CodeWrongType}},
		},
	},
	{
		File: "chock.zon", Path: "credentials",
		Summary: "Where secret values live, for chock login and for sessions.",
		Example: `.{
    .credentials = .{ .store = .keyring },
}`,
		Codes: []string{CodeUnknownField, CodeWrongType},
		Fields: []RefField{
			{"store", "file | env | keyring | secretspec", "file", ".keyring", "file: credentials.json, mode 0600, under the user config folder or $CHOCK_CONFIG_DIR; env: the environment; keyring: the OS keyring (the Secret Service on Linux); secretspec: secretspec's providers.", []string{CodeUnknownStore}},
		},
	},
	{
		File: "chock.zon", Path: "expect[]",
		Summary: "One policy test: an action and the decision it must get, and optionally which layer and rule must decide it. chock test runs them, and counts the rules they exercise.",
		Example: `.{
    .policy = .{ .allow = .{"mcp.notion.host.com.notion.*"} },
    .expect = .{
        .{ .action = "mcp.notion.host.com.notion.mcp", .phase = .start, .decision = .allow, .layer = "project", .rule = "mcp.notion.host.com.notion.*" },
    },
}`,
		Codes: []string{CodeUnknownField, CodeWrongType, CodeMissingField},
		Fields: []RefField{
			{"action", "action", "required", `"exec.path.gh"`, "One concrete action: no *.", []string{"expect-wildcard", CodeBadChar, CodeTooLong, CodeEmptySegment, CodeWrongType}},
			{"decision", "decision", "required", ".allow", "The effective decision it must get.", []string{CodeUnknownDecision}},
			{"phase", "loop | start", "loop", ".start", "When it is asked: in the loop, or at session start, where ask reads as deny.", []string{CodeUnknownPhase}},
			{"layer", "string", "any layer", `"org:acme"`, "The layer that must decide it: \"project\" or \"org:NAME\".", []string{"expect-layer-spelling", CodeWrongType}},
			{"rule", "string", "any rule", `"exec.path.gh"`, "The pattern of the deciding rule, or \"default\" for a layer's default.", []string{CodeWrongType}},
		},
	},
	{
		File: "org.zon", Path: "",
		Summary: "An org bundle source: an organisation's ceiling over its projects, given with --org or compiled into a signed org bundle with chock compile --org-only, rooted at chock_orgs/NAME so that it loads in OPA beside a project bundle compiled with --link-orgs (for that, .name is lower-case letters, digits, '_' and '-': org-name-not-a-root). An org can only narrow: it has no .secrets, .mcp_servers or .programs, which are the project's.",
		Example: `.{
    .name = "acme",
    .version = "2026.11",
    .policy = .{ .deny = .{ "exec.path.curl", "exec.path.wget" } },
}`,
		Codes: []string{"zon-syntax", "zon-not-zon", "zon-literal", "zon-duplicate", "zon-too-deep", CodeUnknownField, CodeWrongType, CodeOrgSecrets, CodeOrgServers, CodeOrgPrograms},
		Fields: []RefField{
			{"name", "string", "required", `"acme"`, "The organisation's name: its layer is spelled org:NAME in every output and in .expect's .layer.", []string{CodeOrgName, CodeWrongType}},
			{"version", "string", `""`, `"2026.11"`, "A version the org gives its ceiling, kept in the bundle.", []string{CodeWrongType}},
			{"policy", "struct", "no ceiling (allow everything)", `.{ .deny = .{"exec.path.curl"} }`, "The org layer's rules and default, written as chock.zon's .policy.", nil},
		},
	},
	{
		File: "org.zon", Path: "policy",
		Summary: "The org layer: the same fields as chock.zon's .policy, but with no .default it sets no ceiling for what its rules do not name. A project rule that an org ceiling always caps is dead (rule-dead-by-org).",
		Example: `.{
    .name = "acme",
    .policy = .{
        .default = .allow,
        .allow = .{"exec.path.gh"},
        .ask = .{"exec.path.git"},
        .deny = .{"exec.path.curl"},
        .rules = .{ .{ .action = "exec.path.wget", .decision = .deny, .why = "use the proxy" } },
    },
}`,
		Codes:  []string{CodeUnknownField, CodeWrongType},
		Fields: policyFields(".allow"),
	},
	{
		File: "org.zon", Path: "policy.rules[]",
		Summary: "One org rule written as a struct, as in chock.zon.",
		Example: `.{
    .name = "acme",
    .policy = .{
        .rules = .{
            .{ .action = "exec.path.curl", .decision = .deny, .why = "fetch through the proxy" },
        },
    },
}`,
		Codes:  []string{CodeUnknownField, CodeWrongType, CodeMissingField},
		Fields: ruleFields(),
	},
}
