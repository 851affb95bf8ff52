// Package lint checks a decoded chock.zon and its org ceilings for every
// mistake this toolchain knows of, collecting all of them as diagnostics.
// The catalog below is the list of what it reports; docs/lint.md is
// generated from it.
package lint

import (
	"fmt"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/zon"
)

// Check describes one diagnostic code.
type Check struct {
	Code     string
	Severity diag.Severity
	Group    string
	Summary  string
	// Bad is a snippet that fires the check.
	Bad string
}

// Codes of the semantic checks (the decoder's and parser's are in
// packages config and zon).
const (
	CodeUnknownNamespace     = "unknown-namespace"
	CodeRuleConflict         = "rule-conflict"
	CodeRuleRepeated         = "rule-repeated"
	CodeRuleRedundant        = "rule-redundant"
	CodeRuleDeadByOrg        = "rule-dead-by-org"
	CodeAskAtStart           = "ask-at-start"
	CodeAllowsShell          = "rule-allows-shell"
	CodeSecretName           = "secret-name"
	CodeSecretToNamespace    = "secret-to-namespace"
	CodeSecretToPlugin       = "secret-to-plugin"
	CodeSecretAs             = "secret-as-invalid"
	CodeSecretFileToServer   = config.CodeSecretFileToServer
	CodeSecretHeaderToExec   = config.CodeSecretHeaderToExec
	CodeSecretEnvToURL       = config.CodeSecretEnvToURL
	CodeSecretHeaderToCmd    = config.CodeSecretHeaderToCmd
	CodeSecretOneTool        = "secret-to-one-tool"
	CodeSecretEveryProgram   = "secret-to-every-program"
	CodeSecretNeverAllowed   = "secret-never-allowed"
	CodeSecretUnknownServer  = "secret-unknown-server"
	CodeSecretRepeated       = "secret-repeated"
	CodeServerCommandAndURL  = "server-command-and-url"
	CodeServerURLInvalid     = "server-url-invalid"
	CodeServerURLScheme      = "server-url-scheme"
	CodeServerURLUserinfo    = "server-url-userinfo"
	CodeServerURLLocal       = "server-url-local"
	CodeServerName           = "server-name"
	CodeServerNameSeparator  = "server-name-separator"
	CodeServerDuplicate      = "server-duplicate"
	CodeServerTooMany        = "server-too-many"
	CodeServerEmptyCommand   = "server-empty-command"
	CodeServerHostNotAllowed = "server-host-not-allowed"
	CodeServerNoToolRule     = "server-no-tool-rule"
	CodeExpectLayer          = "expect-layer-spelling"
	CodeProgramName          = "program-name"
	CodeProgramDuplicate     = "program-duplicate"
	CodeProgramPath          = "program-path"
	CodeProgramCall          = "program-call"
	CodeProgramCallDenied    = "program-call-denied"
	CodeProgramConnect       = "program-connect"
	CodeProgramConnectDenied = "program-connect-denied"
	CodeDottedVariant        = "rule-dotted-variant"
	CodeArgsNotExec          = "args-not-exec"
	CodeProgramSharedFile    = "program-shared-file"
)

// Catalog lists every code chock lint reports, in the order docs/lint.md
// shows them.
var Catalog = []Check{
	{zon.CodeSyntax, diag.Error, "syntax", "The file is not ZON as Zig reads it; the position is the one Zig's compiler reports.", `.{ .a = 1 .b = 2 }`},
	{zon.CodeNotZON, diag.Error, "syntax", "A Zig expression ZON does not allow: an operator, a type, a call, a bare identifier, parentheses.", `.{ .a = 1 + 2 }`},
	{zon.CodeLiteral, diag.Error, "syntax", "A malformed number, string, character or name literal.", `.{ .a = "\q" }`},
	{zon.CodeDuplicate, diag.Error, "syntax", "A struct names the same field twice (.a and .@\"a\" are the same name).", `.{ .policy = .{}, .policy = .{} }`},
	{zon.CodeTooDeep, diag.Error, "syntax", "Brackets nest deeper than 1000 levels.", `.{ .x = .{ .{ .{ ... } } } }`},
	{config.CodeUnknownBlock, diag.Error, "structure", "A top-level field within edit distance 2 of a block chock reads; other top-level fields belong to the rest of Chock and are ignored.", `.{ .secret = .{} }`},
	{config.CodeUnknownField, diag.Error, "structure", "A field chock does not know inside one of its blocks, with the nearest known name.", `.{ .policy = .{ .alow = .{} } }`},
	{config.CodeWrongType, diag.Error, "structure", "A value of the wrong type; the message says what was found and what is wanted.", `.{ .policy = .{ .allow = "exec.path.gh" } }`},
	{config.CodeMissingField, diag.Error, "structure", "A rule, secret, server or expectation lacks a field it needs.", `.{ .secrets = .{ .{ .name = "X" } } }`},
	{config.CodeUnknownDecision, diag.Error, "structure", "A decision other than allow, ask or deny.", `.{ .policy = .{ .default = .maybe } }`},
	{config.CodeUnknownPhase, diag.Error, "structure", "An expectation's phase other than loop or start.", `.{ .expect = .{ .{ .action = "exec.path.gh", .decision = .allow, .phase = .later } } }`},
	{config.CodeUnknownBind, diag.Error, "secrets", "A secret's bind other than env, file or header.", `.bind = "envv"`},
	{config.CodeUnknownStore, diag.Error, "structure", "A credential store other than file, env, keyring or secretspec.", `.credentials = .{ .store = .vault }`},
	{config.CodeStarAlone, diag.Error, "patterns", "A pattern that is '*' alone would match every action.", `"*"`},
	{config.CodeEmptySegment, diag.Error, "patterns", "An empty segment: a leading, trailing or doubled dot.", `"exec..gh"`},
	{config.CodePartialGlob, diag.Error, "patterns", "A '*' that is only part of a segment; '*' must be a whole segment.", `"exec.path.py*"`},
	{config.CodeBadChar, diag.Error, "patterns", "White space, a control character, an invisible format character (zero-width, bidi) or a byte that is not UTF-8 in a pattern or action.", `"exec.path.g h"`},
	{config.CodeTooLong, diag.Error, "patterns", "A pattern or action of more than 32 dot-separated segments (action.MaxSegments), the most an action may have.", `"a.b.c. … .z.aa.ab.ac.ad.ae.af.ag"`},
	{CodeUnknownNamespace, diag.Warning, "patterns", "A pattern outside the namespaces chock knows (" + action.NamespaceForms(nil) + ").", `"exce.path.gh"`},
	{CodeRuleConflict, diag.Error, "rules", "The same pattern with different decisions in one layer; deny would win, which is rarely what was meant.", `.allow = .{"exec.path.gh"}, .deny = .{"exec.path.gh"}`},
	{CodeRuleRepeated, diag.Warning, "rules", "The same pattern with the same decision twice in one layer.", `.allow = .{ "exec.path.gh", "exec.path.gh" }`},
	{CodeRuleRedundant, diag.Warning, "rules", "A rule whose removal changes none of its layer's decisions (exact: checked region by region over every action it matches; a rule whose check would take more than 10,000 regions is left unchecked); the message names the rules or the default that decide those actions the same without it.", `.default = .deny, .deny = .{"exec.path.curl"}`},
	{CodeRuleDeadByOrg, diag.Warning, "rules", "A project rule whose decision never holds: on every action it decides, an org ceiling gives less (exact: checked region by region, with the same bound); the message names the org rule or default, and its file:line.", `project allows exec.path.curl, org denies exec.*`},
	{CodeAskAtStart, diag.Warning, "rules", "Ask on an action decided at session start (" + action.NamespaceForms(action.AtStart) + ", a secret given to a server): nobody can be asked then, so it reads as refused.", `.ask = .{"mcp.notion.host.com.notion.*"}`},
	{CodeAllowsShell, diag.Warning, "rules", "A rule allowing a shell or interpreter (sh, bash, env, xargs, sudo, python*, node, ...) or every program: it reaches every program, whatever exec.path rules deny (but in a call holding a secret, which runs only what .calls declares).", `.allow = .{"exec.path.bash"}`},
	{CodeSecretName, diag.Error, "secrets", "A secret name outside [A-Za-z0-9_]+; the name becomes part of secret.use.<name>.", `.name = "GITHUB.TOKEN"`},
	{CodeSecretToNamespace, diag.Error, "secrets", "A secret's .to outside exec.* and mcp.*: nothing else is given secrets.", `.to = "net.fetch.com.github"`},
	{CodeSecretToPlugin, diag.Warning, "secrets", "A secret for plugin.*: a plugin is given nothing today.", `.to = "plugin.x"`},
	{CodeSecretAs, diag.Error, "secrets", "An .as that is not an environment variable name (env, file) or an HTTP header name (header).", `.as = "MY-VAR"`},
	{CodeSecretFileToServer, diag.Warning, "secrets", "A file bind to an MCP server: a server holds what it is given for the whole session, so it is given nothing.", `.to = "mcp.notion.*", .bind = "file"`},
	{CodeSecretHeaderToExec, diag.Error, "secrets", "A header bind to a program: only a remote server takes a header.", `.to = "exec.path.gh", .bind = "header"`},
	{CodeSecretEnvToURL, diag.Warning, "secrets", "An env bind to a remote (url) server: it has no environment of ours; use bind = \"header\".", `.to = "mcp.notion.*", .bind = "env"`},
	{CodeSecretHeaderToCmd, diag.Warning, "secrets", "A header bind to a local (command) server: it reads its environment; use bind = \"env\".", `.to = "mcp.time.*", .bind = "header"`},
	{CodeSecretOneTool, diag.Warning, "secrets", "A secret for one tool of a server: servers get secrets at start, for all their tools; write mcp.<server>.*.", `.to = "mcp.notion.tool.search"`},
	{CodeSecretEveryProgram, diag.Warning, "secrets", "A secret whose .to reaches every program (exec.path.*, exec.*): whatever the agent runs is given it; name the programs that need it.", `.to = "exec.path.*"`},
	{CodeSecretNeverAllowed, diag.Warning, "secrets", "A secret that no secret.use rule of the project allows or asks: it is never given.", `.secrets = .{ .{ .name = "X", .to = "exec.path.gh" } }`},
	{CodeSecretUnknownServer, diag.Warning, "secrets", "A secret for a server that is not in .mcp_servers.", `.to = "mcp.jira.*"`},
	{CodeSecretRepeated, diag.Warning, "secrets", "The same secret entry twice.", `two identical .secrets entries`},
	{CodeServerCommandAndURL, diag.Error, "servers", "A server names both .command and .url, or neither.", `.{ .name = "x" }`},
	{CodeServerURLInvalid, diag.Error, "servers", "A server .url that does not parse as an absolute URL with a host.", `.url = "https//x"`},
	{CodeServerURLScheme, diag.Error, "servers", "A server .url that is not https: a credential and a tool result must not cross a network in the clear.", `.url = "http://mcp.example.com/mcp"`},
	{CodeServerURLUserinfo, diag.Error, "servers", "A server .url with user information; credentials go in the secrets block.", `.url = "https://user:pw@mcp.example.com/"`},
	{CodeServerURLLocal, diag.Error, "servers", "A server .url at localhost or a loopback, unspecified, cloud metadata, link-local or multicast address: refused at run time whatever the policy says (one rule, internal/netaddr, for lint and run time); run such a server as a command.", `.url = "https://127.0.0.1/mcp"`},
	{CodeServerName, diag.Error, "servers", "A server name outside [A-Za-z0-9_-]+ (a dot would break the action namespace).", `.name = "my.server"`},
	{CodeServerNameSeparator, diag.Error, "servers", "A server name holding \"__\", the separator of the names its tools are offered under (SERVER__TOOL): server a's tool b__c and server a__b's tool c would both be a__b__c.", `.name = "a__b"`},
	{CodeServerDuplicate, diag.Error, "servers", "Two servers with the same name.", `two servers named "notion"`},
	{CodeServerTooMany, diag.Error, "servers", "More servers than a session may have (action.MaxServers).", `nine .mcp_servers entries`},
	{CodeServerEmptyCommand, diag.Error, "servers", "An empty .command, or an empty program name.", `.command = .{}`},
	{CodeServerHostNotAllowed, diag.Warning, "servers", "A url server whose host rule is not allow at start (org ceilings applied): it will be left out of every session.", `.url = "https://mcp.notion.com/mcp" with no mcp.notion.host.* allow`},
	{CodeServerNoToolRule, diag.Info, "servers", "A server with no tool rule that allows or asks: the model may call none of its tools.", `a server with no mcp.<server>.tool.* rule`},
	{CodeDottedVariant, diag.Warning, "programs", "A deny of exec.path.P beside an allow that reaches a dotted name of it (exec.path.P.12, as python3.12 beside python3): the agent runs the program under that name; deny exec.path.P.* too.", `.allow = .{"exec.path.*"}, .deny = .{"exec.path.python3"}`},
	{CodeProgramName, diag.Error, "programs", "A .programs entry whose .name is not one program name (exec.path.<name>).", `.programs = .{ .{ .name = "bin/gh" } }`},
	{CodeProgramDuplicate, diag.Error, "programs", "The same program in .programs twice.", `two .programs entries named "gh"`},
	{CodeProgramPath, diag.Error, "programs", "A pinned path that is not a clean absolute path, or an empty .paths (the program could never run).", `.paths = .{"bin/gh"}`},
	{CodeProgramCall, diag.Error, "programs", "A declared call that is not one concrete exec.path.<program>: exec.* or * would let the program run anything.", `.calls = .{"exec.*"}`},
	{CodeProgramCallDenied, diag.Warning, "programs", "A declared call that a project rule denies or asks, or an org ceiling does not allow: the declaration cannot beat either.", `.calls = .{"exec.path.curl"} with curl denied`},
	{CodeProgramConnect, diag.Error, "programs", "A declared connection that is not a net.connect pattern narrower than the whole namespace: net.connect.* would let the program reach any host.", `.connects = .{"net.connect.*"}`},
	{CodeProgramConnectDenied, diag.Warning, "programs", "A declared connection that a project rule as narrow refuses, or an org ceiling does not allow: the declaration cannot beat either.", `.connects = .{"net.connect.org.pypi"} with net.connect.org.pypi denied`},
	{CodeProgramSharedFile, diag.Warning, "programs", "A rule that denies or asks a program name whose file another, allowed name means on the machine lint runs on (its PATH): a file is decided under every name it has, the strictest winning, so the allowed name is refused too.", `.allow = .{"exec.path.*"}, .deny = .{"exec.path.sh"} where /usr/bin/sh is dash`},
	{config.CodeOrgSecrets, diag.Error, "org", "An org bundle source with .secrets: there is no org layer for secrets.", `org.zon: .secrets = .{ ... }`},
	{config.CodeOrgServers, diag.Error, "org", "An org bundle source with .mcp_servers: servers are the project's; an org narrows them by policy.", `org.zon: .mcp_servers = .{ ... }`},
	{config.CodeOrgPrograms, diag.Error, "org", "An org bundle source with .programs: programs are pinned by the project; an org narrows what runs by policy.", `org.zon: .programs = .{ ... }`},
	{config.CodeOrgName, diag.Error, "org", "An org bundle source without a .name.", `org.zon: .{ .policy = .{} }`},
	{CodeExpectLayer, diag.Warning, "expect", "An expectation's .layer spelled as before (an org's bare name, or \"org\" for any org): a layer is spelled \"project\" or \"org:NAME\" everywhere.", `.{ .action = "exec.path.gh", .decision = .deny, .layer = "acme" }`},
	{config.CodeArgsBad, diag.Error, "rules", "A rule's .args that is empty, longer than 16, or holds an element that is not a string, \"*\" or a list of strings (an empty one, or a NUL byte, which no argument holds).", `.args = .{}`},
	{CodeArgsNotExec, diag.Error, "rules", "A rule with .args whose action is not a program's (exec.path.<program>): only a call has arguments.", `.{ .action = "net.fetch.com.github", .decision = .deny, .args = .{"x"} }`},
	{config.CodeExpectArgv, diag.Error, "expect", "An expectation with .argv (a whole command line, as Codex's match and not_match examples) that the policy does not decide as it says, or whose program is not its action's: lint decides these at once.", `.{ .action = "exec.path.git", .argv = .{ "git", "push" }, .decision = .allow } with git push denied`},
	{config.CodeExpectWildcard, diag.Error, "expect", "An expectation whose action has a '*': an expectation names one concrete action.", `.{ .action = "exec.*", .decision = .allow }`},
}

// CheckFor returns the catalog entry of a code.
func CheckFor(code string) (Check, bool) {
	for _, c := range Catalog {
		if c.Code == code {
			return c, true
		}
	}
	return Check{}, false
}

// Markdown renders the catalog as docs/lint.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("# chock lint: the catalog\n\n")
	b.WriteString("Generated from `compile/lint/catalog.go` by `UPDATE_GOLDEN=1 go test ./compile/lint -run TestDocs`; do not edit by hand.\n\n")
	b.WriteString("Every diagnostic has a stable code (the SARIF rule id), a severity, a position and, where one helps, a hint.\n")
	b.WriteString("`chock lint` exits 1 on an error (or, with `--strict`, a warning).\n")
	group := ""
	for _, c := range Catalog {
		if c.Group != group {
			group = c.Group
			fmt.Fprintf(&b, "\n## %s\n\n| code | severity | what | example |\n|---|---|---|---|\n", group)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` |\n", c.Code, c.Severity, strings.ReplaceAll(c.Summary, "|", "\\|"), strings.ReplaceAll(c.Bad, "|", "\\|"))
	}
	return b.String()
}
