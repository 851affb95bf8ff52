package clientconf

import (
	"strings"
	"testing"
)

var entry = Entry{Name: "chock", Command: "chock", Args: []string{"mcp", "serve", "--config", "/p/chock.zon"}, Env: []string{"CHOCK_STATE_DIR"}}

// codex runs the Codex edit on a config.toml.
func codex(t *testing.T, src string) (string, error) {
	t.Helper()
	eds, err := Plan("codex", entry, Places{CodexHome: "/h"}, func(string) ([]byte, error) {
		if src == "" {
			return nil, nil
		}
		return []byte(src), nil
	})
	if err != nil {
		return "", err
	}
	return string(eds[0].New), nil
}

const chockTable = `[mcp_servers.chock]
command = "chock"
args = ["mcp", "serve", "--config", "/p/chock.zon"]
default_tools_approval_mode = "approve"
env_vars = ["CHOCK_STATE_DIR"]`

func TestCodexEdits(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"new", "", `web_search = "disabled"

` + chockTable + `

[features]
shell_tool = false
`},
		{"replaced in place, its sub-tables dropped, the rest kept", `# top
web_search = "live"

[mcp_servers.chock]
command = "old"

[mcp_servers.chock.env]
X = "1"

[mcp_servers.other]
command = "other" # mine

[features]
other = true
`, `# top
web_search = "disabled"

` + chockTable + `

[mcp_servers.other]
command = "other" # mine

[features]
other = true
shell_tool = false
`},
		{"a dotted key at the root replaced in its place", `features.shell_tool = true
model = "m"
`, `features.shell_tool = false
model = "m"
web_search = "disabled"

` + chockTable + `
`},
		{"a header inside a multi-line string is text", `instructions = """
[mcp_servers.chock]
not a table
"""
`, `instructions = """
[mcp_servers.chock]
not a table
"""
web_search = "disabled"

` + chockTable + `

[features]
shell_tool = false
`},
		{"a quoted header", `["mcp_servers"."chock"]
command = "old"
`, `web_search = "disabled"

` + chockTable + `

[features]
shell_tool = false
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := codex(t, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
			again, err := codex(t, got)
			if err != nil || again != got {
				t.Errorf("a second edit changed it:\n%s\n%v", again, err)
			}
		})
	}
}

func TestCodexRefuses(t *testing.T) {
	for in, want := range map[string]string{
		"mcp_servers.chock.command = \"x\"\n":             "line 1 sets mcp_servers.chock in a form chock connect does not edit",
		"[mcp_servers]\nchock = { command = \"x\" }\n":    "line 2 sets mcp_servers.chock in a form chock connect does not edit",
		"mcp_servers = { chock = { command = \"x\" } }\n": "line 1 sets mcp_servers as a value",
		"[[mcp_servers.chock]]\ncommand = \"x\"\n":        "line 1 makes mcp_servers.chock an array of tables",
		"features = { shell_tool = true }\n":              "line 1 sets features, which chock connect cannot set features.shell_tool beside",
		"[unclosed\n":                                     "a table header that does not close",
		"x = \"\"\"\nnever closed\n":                      "a multi-line string is not closed",
	} {
		if _, err := codex(t, in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}

func TestJSONEdits(t *testing.T) {
	read := func(src string) func(string) ([]byte, error) {
		return func(string) ([]byte, error) { return []byte(src), nil }
	}
	// Keys keep their order and spelling; other servers are kept.
	eds, err := Plan("cursor", entry, Places{Project: "/p"}, read(`{"z": 1, "mcpServers": {"b": {"url": "https://x"}, "chock": {"command": "old"}}, "a": [1.50]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := string(eds[0].New)
	for _, want := range []string{`"z": 1,`, `"a": [`, `1.50`, `"b": {`, `"command": "chock"`} {
		if !strings.Contains(got, want) {
			t.Errorf("want %q in\n%s", want, got)
		}
	}
	if strings.Index(got, `"z"`) > strings.Index(got, `"mcpServers"`) || strings.Index(got, `"b"`) > strings.Index(got, `"chock"`) {
		t.Errorf("the order changed:\n%s", got)
	}
	if len(eds[0].Changes) != 1 || !strings.Contains(eds[0].Changes[0], "server chock replaced") || !strings.Contains(eds[0].Changes[0], "the 1 other server kept") {
		t.Errorf("changes = %q", eds[0].Changes)
	}
	for in, want := range map[string]string{
		`{"mcpServers": []}`:          `"mcpServers" is not an object`,
		`{"a": 1, "a": 2}`:            `the key "a" is there twice`,
		`[1]`:                         "not a JSON object",
		`{"a": 1} {"b": 2}`:           "more than one JSON value",
		`{"tools": {"exclude": "x"}}`: `"exclude" is not a list of strings`,
	} {
		client := "cursor"
		if strings.Contains(in, "tools") {
			client = "gemini"
		}
		if _, err := Plan(client, entry, Places{Project: "/p"}, read(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}
