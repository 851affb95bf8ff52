package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
)

// lintText decodes and lints a project file and optional org sources the
// way chock lint does.
// testMachine is the machine lintText lints on: /usr/bin/sh is dash.
var testMachine = []SharedFile{{Path: "/usr/bin/dash", Names: []string{"dash", "sh"}}}

func lintText(project string, orgs ...string) diag.List {
	var all diag.List
	var os []*config.Org
	for i, o := range orgs {
		org, ds := config.LoadOrg(fmt.Sprintf("org%d.zon", i), []byte(o))
		all = append(all, ds...)
		if org != nil {
			os = append(os, org)
		}
	}
	var c *config.Config
	if project != "" {
		var ds diag.List
		c, ds = config.Load("chock.zon", []byte(project))
		all = append(all, ds...)
	}
	if c != nil || len(os) > 0 {
		all = append(all, Run(Input{Config: c, Orgs: os, SharedFiles: testMachine})...)
	}
	return all
}

// A case fires Code at line:col on Bad (+ BadOrg) and not at all on Good
// (+ GoodOrg).
type catalogCase struct {
	Code        string
	Bad, BadOrg string
	File        string // the file the diagnostic is in; default chock.zon
	// At is the text the diagnostic must start at: its Nth (0-based)
	// occurrence in the bad file.
	At              string
	Nth             int
	Good, GoodOrg   string
	wantHintContain string
}

// base is a lint-clean policy the cases extend.
const okPolicy = `.policy = .{ .allow = .{ "exec.path.gh", "secret.use.GITHUB_TOKEN", "secret.use.NOTION_TOKEN", "mcp.notion.host.com.notion.*", "mcp.notion.tool.search", "mcp.time.tool.*" } }`

var catalogCases = []catalogCase{
	{Code: "zon-syntax", Bad: ".{ .a = 1 .b = 2 }", At: "= 2", Nth: 0, Good: ".{ .a = 1, .b = 2 }"},
	{Code: "zon-not-zon", Bad: ".{ .a = 1 + 2 }", At: "+", Nth: 0, Good: ".{ .a = 3 }"},
	{Code: "zon-literal", Bad: `.{ .a = "\q" }`, At: `q"`, Nth: 0, Good: `.{ .a = "\n" }`},
	{Code: "zon-duplicate", Bad: ".{ .policy = .{}, .policy = .{} }", At: "policy", Nth: 0, Good: ".{ .policy = .{} }"},
	{Code: "zon-too-deep", Bad: strings.Repeat(".{", 1001) + strings.Repeat("}", 1001), At: "{", Nth: 1000, Good: ".{ .x = .{.{}} }"},
	{Code: "unknown-block", Bad: ".{ .secret = .{} }", At: "secret =", Nth: 0, Good: ".{ .secrets = .{}, .theme = .dark }", wantHintContain: "did you mean .secrets?"},
	{Code: "unknown-field", Bad: `.{ .policy = .{ .alow = .{} } }`, At: "alow", Nth: 0, Good: `.{ .policy = .{ .allow = .{} } }`, wantHintContain: ".allow"},
	{Code: "wrong-type", Bad: `.{ .policy = .{ .allow = "exec.path.gh" } }`, At: `"exec.path.gh"`, Nth: 0, Good: `.{ .policy = .{ .allow = .{"exec.path.gh"} } }`},
	{Code: "missing-field", Bad: `.{ .policy = .{ .rules = .{.{ .action = "exec.path.gh" }} } }`, At: ".{ .action", Nth: 0, Good: `.{ .policy = .{ .rules = .{.{ .action = "exec.path.gh", .decision = .allow }} } }`},
	{Code: "unknown-decision", Bad: `.{ .policy = .{ .default = .maybe } }`, At: ".maybe", Nth: 0, Good: `.{ .policy = .{ .default = .deny } }`},
	{Code: "unknown-phase", Bad: `.{ .expect = .{.{ .action = "exec.path.gh", .decision = .deny, .phase = .later }} }`, At: ".later", Nth: 0, Good: `.{ .expect = .{.{ .action = "exec.path.gh", .decision = .deny, .phase = "start" }} }`},
	{Code: "unknown-bind", Bad: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "GITHUB_TOKEN", .to = "exec.path.gh", .bind = "envv" }} }`, At: `"envv"`, Nth: 0, Good: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "GITHUB_TOKEN", .to = "exec.path.gh", .bind = .env }} }`},
	{Code: "unknown-store", Bad: `.{ .credentials = .{ .store = .vault } }`, At: ".vault", Nth: 0, Good: `.{ .credentials = .{ .store = "keyring" } }`},
	{Code: "pattern-star-alone", Bad: `.{ .policy = .{ .deny = .{"*"} } }`, At: "*", Nth: 0, Good: `.{ .policy = .{ .deny = .{"exec.*"} } }`},
	{Code: "pattern-empty-segment", Bad: `.{ .policy = .{ .deny = .{"exec..gh"} } }`, At: ".gh", Nth: 0, Good: `.{ .policy = .{ .deny = .{"exec.path.gh"} } }`},
	{Code: "pattern-partial-glob", Bad: `.{ .policy = .{ .deny = .{"exec.path.py*"} } }`, At: "*", Nth: 0, Good: `.{ .policy = .{ .deny = .{"exec.path.*"} } }`},
	{Code: "pattern-bad-char", Bad: `.{ .policy = .{ .deny = .{"exec.path.g h"} } }`, At: ` h"`, Nth: 0, Good: `.{ .policy = .{ .deny = .{"exec.path.gh"} } }`},
	{Code: "pattern-bad-char", Bad: ".{ .policy = .{ .deny = .{\"exec.path.g\u200bh\"} } }", At: "\u200bh\"", Nth: 0, Good: `.{ .policy = .{ .deny = .{"exec.path.gh"} } }`},
	{Code: "expect-layer-spelling", Bad: `.{ .expect = .{.{ .action = "exec.path.gh", .decision = .deny, .layer = "acme" }} }`, At: `"acme"`, Nth: 0, Good: `.{ .expect = .{.{ .action = "exec.path.gh", .decision = .deny, .layer = "org:acme" }} }`, wantHintContain: `write .layer = "org:acme"`},
	{Code: "pattern-too-long", Bad: `.{ .policy = .{ .deny = .{"plugin.` + strings.Repeat("x.", 31) + `x"} } }`, At: `x"`, Nth: 0, Good: `.{ .policy = .{ .deny = .{"plugin.` + strings.Repeat("x.", 30) + `x"} } }`},
	{Code: "unknown-namespace", Bad: `.{ .policy = .{ .deny = .{"exce.path.gh"} } }`, At: `"exce`, Nth: 0, Good: `.{ .policy = .{ .deny = .{"exec.path.gh", "mcp.x.network", "plugin.y", "nix.build", "net.fetch.com.x", "secret.*"} } }`},
	{Code: "rule-conflict", Bad: `.{ .policy = .{ .allow = .{"exec.path.gh"}, .deny = .{"exec.path.gh"} } }`, At: `"exec.path.gh"`, Nth: 1, Good: `.{ .policy = .{ .allow = .{"exec.path.gh"}, .deny = .{"exec.path.gh.x"} } }`},
	{Code: "args-bad", Bad: `.{ .policy = .{ .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{} } } } }`, At: `.{} }`, Nth: 0,
		Good: `.{ .policy = .{ .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{ "push", "*", .{ "-f", "--force" } } } } } }`},
	{Code: "args-bad", Bad: `.{ .policy = .{ .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{ .{ "*", "push" } } } } } }`, At: `"*", "push"`, Nth: 0,
		Good: `.{ .policy = .{ .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{ "*", "push" } } } } }`},
	{Code: "args-not-exec", Bad: `.{ .policy = .{ .rules = .{ .{ .action = "net.fetch.com.github", .decision = .deny, .args = .{"x"} } } } }`, At: `.{"x"}`, Nth: 0,
		Good: `.{ .policy = .{ .rules = .{ .{ .action = "exec.path.*", .decision = .deny, .args = .{"x"} } } } }`},
	{Code: "rule-conflict", Bad: `.{ .policy = .{ .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{"push"} }, .{ .action = "exec.path.git", .decision = .allow, .args = .{"push"} } } } }`, At: `"exec.path.git", .decision = .allow`, Nth: 0,
		Good: `.{ .policy = .{ .allow = .{"exec.path.git"}, .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{"push"} } } } }`},
	{Code: "expect-argv", Bad: `.{ .policy = .{ .allow = .{"exec.path.git"}, .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{"push"} } } }, .expect = .{ .{ .action = "exec.path.git", .argv = .{ "git", "-C", "x", "push" }, .decision = .allow } } }`, At: `.{ "git", "-C"`, Nth: 0,
		Good: `.{ .policy = .{ .allow = .{"exec.path.git"}, .rules = .{ .{ .action = "exec.path.git", .decision = .deny, .args = .{"push"} } } }, .expect = .{ .{ .action = "exec.path.git", .argv = .{ "git", "-C", "x", "push" }, .decision = .deny }, .{ .action = "exec.path.git", .argv = .{ "git", "status" }, .decision = .allow } } }`, wantHintContain: "change"},
	{Code: "expect-argv", Bad: `.{ .policy = .{ .allow = .{"exec.path.git"} }, .expect = .{ .{ .action = "exec.path.git", .argv = .{ "gh", "pr" }, .decision = .allow } } }`, At: `"gh"`, Nth: 0,
		Good: `.{ .policy = .{ .allow = .{"exec.path.gh"} }, .expect = .{ .{ .action = "exec.path.gh", .argv = .{ "/usr/bin/gh", "pr" }, .decision = .allow } } }`},
	{Code: "rule-repeated", Bad: `.{ .policy = .{ .deny = .{ "exec.path.gh", "exec.path.gh" } } }`, At: `"exec.path.gh"`, Nth: 1, Good: `.{ .policy = .{ .deny = .{ "exec.path.gh", "exec.path.git" } } }`},
	{Code: "rule-dead-by-org", Bad: `.{ .policy = .{ .allow = .{"exec.path.curl"} } }`, BadOrg: `.{ .name = "acme", .policy = .{ .deny = .{"exec.*"} } }`, At: `"exec.path.curl"`, Nth: 0,
		Good: `.{ .policy = .{ .allow = .{"exec.path.curl"} } }`, GoodOrg: `.{ .name = "acme", .policy = .{ .deny = .{"exec.*"}, .allow = .{"exec.path.curl"} } }`, wantHintContain: "org"},
	{Code: "rule-redundant", Bad: `.{ .policy = .{ .allow = .{ "exec.*", "exec.path.gh" } } }`, At: `"exec.path.gh"`, Nth: 0,
		Good: `.{ .policy = .{ .allow = .{"exec.*"}, .deny = .{"exec.path.gh"} } }`, wantHintContain: "remove it"},
	{Code: "ask-at-start", Bad: `.{ .policy = .{ .ask = .{"mcp.notion.host.com.notion.*"} } }`, At: `"mcp.notion.host`, Nth: 0, Good: `.{ .policy = .{ .ask = .{"mcp.notion.tool.search"} } }`},
	{Code: "rule-allows-shell", Bad: `.{ .policy = .{ .allow = .{"exec.path.python3"} } }`, At: `"exec.path.python3"`, Nth: 0, Good: `.{ .policy = .{ .allow = .{"exec.path.gh"}, .ask = .{"exec.path.bash"} } }`},
	{Code: "secret-name", Bad: `.{ .policy = .{ .allow = .{"secret.use.*"} }, .secrets = .{.{ .name = "GITHUB.TOKEN", .to = "exec.path.gh" }} }`, At: `"GITHUB.TOKEN"`, Nth: 0, Good: `.{ .policy = .{ .allow = .{"secret.use.*"} }, .secrets = .{.{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" }} }`},
	{Code: "secret-to-namespace", Bad: `.{ .policy = .{ .allow = .{"secret.use.K"} }, .secrets = .{.{ .name = "K", .to = "net.fetch.com.x" }} }`, At: `"net.fetch`, Nth: 0, Good: `.{ .policy = .{ .allow = .{"secret.use.K"} }, .secrets = .{.{ .name = "K", .to = "exec.path.x" }} }`},
	{Code: "secret-to-plugin", Bad: `.{ .policy = .{ .allow = .{"secret.use.K"} }, .secrets = .{.{ .name = "K", .to = "plugin.x" }} }`, At: `"plugin.x"`, Nth: 0, Good: `.{ .policy = .{ .allow = .{"secret.use.K"} }, .secrets = .{.{ .name = "K", .to = "exec.path.x" }} }`},
	{Code: "secret-as-invalid", Bad: `.{ .policy = .{ .allow = .{"secret.use.K"} }, .secrets = .{.{ .name = "K", .to = "exec.path.x", .as = "MY-VAR" }} }`, At: `"MY-VAR"`, Nth: 0, Good: `.{ .policy = .{ .allow = .{"secret.use.K"} }, .secrets = .{.{ .name = "K", .to = "exec.path.x", .as = "MY_VAR" }} }`},
	{Code: "secret-file-to-server", Bad: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "NOTION_TOKEN", .to = "mcp.time.*", .bind = "file" }}, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`, At: `"file"`, Nth: 0,
		Good: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "NOTION_TOKEN", .to = "mcp.time.*" }}, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`},
	{Code: "secret-header-to-program", Bad: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "GITHUB_TOKEN", .to = "exec.path.gh", .bind = "header" }} }`, At: `"header"`, Nth: 0, Good: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" }} }`},
	{Code: "secret-env-to-url-server", Bad: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "NOTION_TOKEN", .to = "mcp.notion.*", .bind = "env" }}, .mcp_servers = .{.{ .name = "notion", .url = "https://mcp.notion.com/mcp" }} }`, At: `"env"`, Nth: 0,
		Good: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "NOTION_TOKEN", .to = "mcp.notion.*", .bind = "header" }}, .mcp_servers = .{.{ .name = "notion", .url = "https://mcp.notion.com/mcp" }} }`},
	{Code: "secret-header-to-command-server", Bad: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "NOTION_TOKEN", .to = "mcp.time.*", .bind = "header" }}, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`, At: `"header"`, Nth: 0,
		Good: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "NOTION_TOKEN", .to = "mcp.time.*", .bind = "env" }}, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`},
	{Code: "secret-to-every-program", Bad: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "GITHUB_TOKEN", .to = "exec.path.*" }} }`, At: `"exec.path.*"`, Nth: 0,
		Good: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" }, .{ .name = "GITHUB_TOKEN", .to = "exec.path.git.*" }} }`, wantHintContain: "name the programs"},
	{Code: "secret-to-one-tool", Bad: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "NOTION_TOKEN", .to = "mcp.time.tool.now" }}, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`, At: `"mcp.time.tool.now"`, Nth: 0,
		Good: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "NOTION_TOKEN", .to = "mcp.time.*" }}, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`},
	{Code: "secret-never-allowed", Bad: `.{ .secrets = .{.{ .name = "K", .to = "exec.path.x" }} }`, At: `"K"`, Nth: 0, Good: `.{ .policy = .{ .ask = .{"secret.use.K"} }, .secrets = .{.{ .name = "K", .to = "exec.path.x" }} }`},
	{Code: "secret-unknown-server", Bad: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "NOTION_TOKEN", .to = "mcp.jira.*" }} }`, At: `"mcp.jira.*"`, Nth: 0, Good: `.{ ` + okPolicy + `, .secrets = .{.{ .name = "NOTION_TOKEN", .to = "mcp.time.*" }}, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`},
	{Code: "secret-repeated", Bad: `.{ ` + okPolicy + `, .secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" }, .{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" } } }`, At: `.{ .name = "GITHUB_TOKEN"`, Nth: 1,
		Good: `.{ ` + okPolicy + `, .secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" }, .{ .name = "GITHUB_TOKEN", .to = "exec.path.git" } } }`},
	{Code: "server-command-and-url", Bad: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "time" }} }`, At: `.{ .name = "time"`, Nth: 0, Good: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`},
	{Code: "server-url-invalid", Bad: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "notion", .url = "mcp.notion.com/mcp" }} }`, At: `"mcp.notion.com/mcp"`, Nth: 0, Good: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "notion", .url = "https://mcp.notion.com/mcp" }} }`},
	{Code: "server-url-scheme", Bad: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "notion", .url = "http://mcp.notion.com/mcp" }} }`, At: `"http://`, Nth: 0, Good: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "notion", .url = "https://mcp.notion.com/mcp" }} }`, wantHintContain: `use https://: .url = "https://mcp.notion.com/mcp"`},
	{Code: "server-url-userinfo", Bad: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "notion", .url = "https://u:p@mcp.notion.com/mcp" }} }`, At: `"https://u:p`, Nth: 0, Good: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "notion", .url = "https://mcp.notion.com/mcp" }} }`},
	{Code: "server-url-local", Bad: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "notion", .url = "https://[::ffff:169.254.169.254]/mcp" }} }`, At: `"https://[`, Nth: 0, Good: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "notion", .url = "https://mcp.notion.com/mcp" }} }`},
	{Code: "server-name", Bad: `.{ .policy = .{ .allow = .{"mcp.*.tool.*"} }, .mcp_servers = .{.{ .name = "my.server", .command = .{"t"} }} }`, At: `"my.server"`, Nth: 0, Good: `.{ .policy = .{ .allow = .{"mcp.*.tool.*"} }, .mcp_servers = .{.{ .name = "my-server", .command = .{"t"} }} }`},
	{Code: "server-name-separator", Bad: `.{ .policy = .{ .allow = .{"mcp.*.tool.*"} }, .mcp_servers = .{.{ .name = "a__b", .command = .{"t"} }} }`, At: `"a__b"`, Nth: 0, Good: `.{ .policy = .{ .allow = .{"mcp.*.tool.*"} }, .mcp_servers = .{.{ .name = "a-b", .command = .{"t"} }} }`},
	{Code: "server-duplicate", Bad: `.{ ` + okPolicy + `, .mcp_servers = .{ .{ .name = "time", .command = .{"t"} }, .{ .name = "time", .command = .{"u"} } } }`, At: `"time"`, Nth: 1,
		Good: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`},
	{Code: "server-too-many", Bad: `.{ .policy = .{ .allow = .{"mcp.*.tool.*"} }, .mcp_servers = .{` + servers(9) + `} }`, At: `.{ .name = "s8"`, Nth: 0, Good: `.{ .policy = .{ .allow = .{"mcp.*.tool.*"} }, .mcp_servers = .{` + servers(8) + `} }`},
	{Code: "server-empty-command", Bad: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "time", .command = .{} }} }`, At: ".{} }", Nth: 0, Good: `.{ ` + okPolicy + `, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`},
	{Code: "server-host-not-allowed", Bad: `.{ .policy = .{ .allow = .{"mcp.notion.tool.search"} }, .mcp_servers = .{.{ .name = "notion", .url = "https://mcp.notion.com/mcp" }} }`, At: `"https://`, Nth: 0,
		Good: `.{ .policy = .{ .allow = .{"mcp.notion.tool.search", "mcp.notion.host.com.notion.*"} }, .mcp_servers = .{.{ .name = "notion", .url = "https://mcp.notion.com/mcp" }} }`},
	{Code: "server-no-tool-rule", Bad: `.{ .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`, At: `"time"`, Nth: 0, Good: `.{ .policy = .{ .ask = .{"mcp.time.tool.now"} }, .mcp_servers = .{.{ .name = "time", .command = .{"t"} }} }`},
	{Code: "org-secrets", BadOrg: `.{ .name = "acme", .secrets = .{} }`, File: "org0.zon", At: "secrets", Nth: 0, GoodOrg: `.{ .name = "acme" }`},
	{Code: "org-mcp-servers", BadOrg: `.{ .name = "acme", .mcp_servers = .{} }`, File: "org0.zon", At: "mcp_servers", Nth: 0, GoodOrg: `.{ .name = "acme" }`},
	{Code: "org-programs", BadOrg: `.{ .name = "acme", .programs = .{} }`, File: "org0.zon", At: "programs", Nth: 0, GoodOrg: `.{ .name = "acme" }`},
	{Code: "rule-dotted-variant", Bad: `.{ .policy = .{ .allow = .{"exec.path.*"}, .deny = .{"exec.path.python3"} } }`, At: `"exec.path.python3"`, Nth: 0,
		Good: `.{ .policy = .{ .allow = .{"exec.path.*"}, .deny = .{"exec.path.python3", "exec.path.python3.*"} } }`, wantHintContain: "exec.path.python3.*"},
	{Code: "program-name", Bad: `.{ .programs = .{.{ .name = "bin/gh" }} }`, At: `"bin/gh"`, Nth: 0, Good: `.{ .programs = .{.{ .name = "gh" }} }`},
	{Code: "program-duplicate", Bad: `.{ .programs = .{ .{ .name = "gh" }, .{ .name = "gh" } } }`, At: `"gh"`, Nth: 1, Good: `.{ .programs = .{ .{ .name = "gh" }, .{ .name = "git" } } }`},
	{Code: "program-path", Bad: `.{ .programs = .{.{ .name = "gh", .paths = .{"bin/gh"} }} }`, At: `"bin/gh"`, Nth: 0, Good: `.{ .programs = .{.{ .name = "gh", .paths = .{"/usr/bin/gh"} }} }`},
	{Code: "program-call", Bad: `.{ .programs = .{.{ .name = "git", .calls = .{"exec.*"} }} }`, At: `"exec.*"`, Nth: 0, Good: `.{ .programs = .{.{ .name = "git", .calls = .{"exec.path.git-remote-https"} }} }`},
	{Code: "program-shared-file", Bad: `.{ .policy = .{ .allow = .{"exec.path.*"}, .deny = .{"exec.path.sh"} } }`, At: `"exec.path.sh"`,
		Good: `.{ .policy = .{ .allow = .{"exec.path.*"}, .deny = .{"exec.path.sh", "exec.path.dash"} } }`, wantHintContain: "exec.path.dash"},
	{Code: "program-shared-file", Bad: `.{ .policy = .{ .allow = .{"exec.path.*"} } }`, BadOrg: `.{ .name = "acme", .policy = .{ .default = .allow, .ask = .{"exec.path.sh"} } }`, File: "org0.zon", At: `"exec.path.sh"`,
		Good: `.{ .policy = .{ .allow = .{"exec.path.git"} } }`, GoodOrg: `.{ .name = "acme", .policy = .{ .default = .allow, .ask = .{"exec.path.sh"} } }`, wantHintContain: "is asked too"},
	{Code: "program-call-denied", Bad: `.{ .policy = .{ .deny = .{"exec.path.curl"} }, .programs = .{.{ .name = "git", .calls = .{"exec.path.curl"} }} }`, At: `"exec.path.curl"`, Nth: 1,
		Good: `.{ .policy = .{ .deny = .{"exec.path.wget"} }, .programs = .{.{ .name = "git", .calls = .{"exec.path.curl"} }} }`},
	{Code: "program-connect", Bad: `.{ .programs = .{.{ .name = "python3", .connects = .{"net.connect.*"} }} }`, At: `"net.connect.*"`, Nth: 0, Good: `.{ .programs = .{.{ .name = "python3", .connects = .{"net.connect.org.pypi.*"} }} }`},
	{Code: "program-connect-denied", Bad: `.{ .policy = .{ .deny = .{"net.connect.org.pypi"} }, .programs = .{.{ .name = "python3", .connects = .{"net.connect.org.pypi"} }} }`, At: `"net.connect.org.pypi"`, Nth: 1,
		Good: `.{ .policy = .{ .deny = .{"net.connect.*"} }, .programs = .{.{ .name = "python3", .connects = .{"net.connect.org.pypi"} }} }`},
	{Code: "org-name-missing", BadOrg: `.{ .policy = .{} }`, File: "org0.zon", At: ".{", Nth: 0, GoodOrg: `.{ .name = "acme", .policy = .{} }`},
	{Code: "expect-wildcard", Bad: `.{ .expect = .{.{ .action = "exec.*", .decision = .allow }} }`, At: "*", Nth: 0, Good: `.{ .expect = .{.{ .action = "exec.path.gh", .decision = .allow }} }`},
}

func nthIndex(s, sub string, n int) int {
	off := 0
	for i := 0; ; i++ {
		j := strings.Index(s[off:], sub)
		if j < 0 {
			return -1
		}
		if i == n {
			return off + j
		}
		off += j + len(sub)
	}
}

// servers makes n command servers, each entry 50 bytes long.
func servers(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, ` .{ .name = "s%d", .command = .{"tool%d"} }, `, i, i)
	}
	return b.String()
}

func TestCatalogCases(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range catalogCases {
		covered[tc.Code] = true
		t.Run(tc.Code, func(t *testing.T) {
			if _, ok := CheckFor(tc.Code); !ok {
				t.Fatalf("%s is not in the catalog", tc.Code)
			}
			var orgs []string
			if tc.BadOrg != "" {
				orgs = append(orgs, tc.BadOrg)
			}
			got := lintText(tc.Bad, orgs...)
			file := tc.File
			if file == "" {
				file = "chock.zon"
			}
			var hit *diag.Diagnostic
			for _, d := range got {
				if d.Code == tc.Code {
					hit = d
					break
				}
			}
			if hit == nil {
				t.Fatalf("%s did not fire; got:\n%v", tc.Code, got)
			}
			chk, _ := CheckFor(tc.Code)
			if hit.Severity != chk.Severity {
				t.Errorf("severity %v, catalog says %v", hit.Severity, chk.Severity)
			}
			text := tc.Bad
			if file != "chock.zon" {
				text = tc.BadOrg
			}
			off := nthIndex(text, tc.At, tc.Nth)
			if off < 0 {
				t.Fatalf("marker %q not in the input", tc.At)
			}
			if hit.Span.File != file || hit.Span.Start.Offset != off || hit.Span.Start.Line != 1 || hit.Span.Start.Col != off+1 {
				t.Errorf("%s at %s, want %s:1:%d, at %q (%s)", tc.Code, hit.Span, file, off+1, tc.At, hit.Message)
			}
			if tc.wantHintContain != "" && !strings.Contains(hit.Hint+hit.Message, tc.wantHintContain) {
				t.Errorf("hint %q lacks %q", hit.Hint, tc.wantHintContain)
			}
			var gorgs []string
			if tc.GoodOrg != "" {
				gorgs = append(gorgs, tc.GoodOrg)
			}
			for _, d := range lintText(tc.Good, gorgs...) {
				if d.Code == tc.Code {
					t.Errorf("%s fired on the good input: %v", tc.Code, d)
				}
			}
		})
	}
	for _, c := range Catalog {
		if !covered[c.Code] {
			t.Errorf("catalog entry %s has no test case", c.Code)
		}
	}
}

func TestExamplesAreClean(t *testing.T) {
	project, err := os.ReadFile(filepath.Join("..", "..", "examples", "chock.zon"))
	if err != nil {
		t.Fatal(err)
	}
	org, err := os.ReadFile(filepath.Join("..", "..", "examples", "org.zon"))
	if err != nil {
		t.Fatal(err)
	}
	if got := lintText(string(project), string(org)); len(got) > 0 {
		t.Errorf("examples are not lint-clean:\n%v", got)
	}
}

// TestDocs keeps docs/lint.md in step with the catalog; -update rewrites it.
func TestDocs(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "lint.md")
	want := Markdown()
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("docs/lint.md is out of date; run UPDATE_GOLDEN=1 go test ./compile/lint -run TestDocs")
	}
}

// TestHostHintSaysWhoCanPermit: a host the org denies is not "allow it"
// when the project already allows it; a host the project denies is.
func TestHostHintSaysWhoCanPermit(t *testing.T) {
	project := `.{ .policy = .{ .allow = .{ "mcp.notion.host.com.notion.*", "mcp.notion.tool.search" } }, .mcp_servers = .{.{ .name = "notion", .url = "https://mcp.notion.com/mcp" }} }`
	org := `.{ .name = "acme", .policy = .{ .deny = .{"mcp.*.host.com.notion.*"} } }`
	var hints []string
	for _, d := range lintText(project, org) {
		if d.Code == CodeServerHostNotAllowed {
			hints = append(hints, d.Hint)
		}
	}
	if len(hints) != 1 || strings.Contains(hints[0], "allow \"") || !strings.Contains(hints[0], `the org ceiling "acme" does not`) {
		t.Fatalf("org-denied host: %q", hints)
	}
	hints = nil
	for _, d := range lintText(strings.Replace(project, `"mcp.notion.host.com.notion.*", `, "", 1)) {
		if d.Code == CodeServerHostNotAllowed {
			hints = append(hints, d.Hint)
		}
	}
	if len(hints) != 1 || hints[0] != `to reach it, allow "mcp.notion.host.com.notion.mcp"` {
		t.Fatalf("project-denied host: %q", hints)
	}
}

// TestDeterministic: lint's findings come in the same order on every run
// (a map range once made SARIF churn).
func TestDeterministic(t *testing.T) {
	src := `.{ .policy = .{ .ask = .{ "secret.use.*" } },
    .secrets = .{ .{ .name = "A1", .to = "mcp.*" }, .{ .name = "B2", .to = "mcp.*" }, .{ .name = "C3", .to = "mcp.*" }, .{ .name = "D4", .to = "mcp.*" } },
    .mcp_servers = .{ .{ .name = "s", .command = .{"x"} }, .{ .name = "t", .command = .{"y"} } } }`
	first := fmt.Sprint(lintText(src))
	for range 50 {
		if got := fmt.Sprint(lintText(src)); got != first {
			t.Fatalf("lint output changed between runs:\n%s\n%s", first, got)
		}
	}
}

// TestNamespaceDidYouMean: a misspelt namespace is named at its pattern,
// with the spelling the rule most likely meant.
func TestNamespaceDidYouMean(t *testing.T) {
	src := `.{ .policy = .{ .allow = .{ "exec.path.gh", "exec.paht.git" } } }`
	for _, d := range lintText(src) {
		if d.Code != CodeUnknownNamespace {
			continue
		}
		if d.Span.Start.Line != 1 || d.Span.Start.Col != strings.Index(src, `"exec.paht`)+1 {
			t.Errorf("placed at %v", d.Span)
		}
		if !strings.HasPrefix(d.Hint, `did you mean "exec.path.git"?`) {
			t.Errorf("hint %q", d.Hint)
		}
		return
	}
	t.Fatal("no unknown-namespace")
}

// TestSecretToEveryProgram: a .to that covers exec.path.* warns, one that
// names a program or a program's subcommands does not.
func TestSecretToEveryProgram(t *testing.T) {
	for to, want := range map[string]bool{"exec.path.*": true, "exec.*": true, "exec.path.gh": false, "exec.path.git.*": false} {
		src := `.{ ` + okPolicy + `, .secrets = .{.{ .name = "GITHUB_TOKEN", .to = "` + to + `" }} }`
		got := false
		for _, d := range lintText(src) {
			if d.Code == CodeSecretEveryProgram {
				got = true
				if !strings.Contains(d.Message, to) {
					t.Errorf("%s: message %q does not name the .to", to, d.Message)
				}
			}
		}
		if got != want {
			t.Errorf(".to = %q: warned %v, want %v", to, got, want)
		}
	}
}
