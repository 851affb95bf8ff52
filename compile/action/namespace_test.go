package action

import (
	"strings"
	"testing"
)

// TestNamespaceTable checks the table's rows against each other: no two
// namespaces share an action, and every row builds an action its own
// pattern matches and no other row's does.
func TestNamespaceTable(t *testing.T) {
	fill := map[string]string{"program": "/usr/bin/python3.12", "host": "API.GitHub.com.", "server": "notion", "tool": "search.pages", "NAME": "GITHUB_TOKEN", "name": "x", "client": "claude-code", "PATH": "~/.aws/config"}
	for i, n := range Namespaces {
		for j, m := range Namespaces {
			if i != j && Overlaps(n.Pattern(), m.Pattern()) {
				t.Errorf("%s overlaps %s", n.Form, m.Form)
			}
		}
		var vals []string
		for _, h := range n.holes {
			vals = append(vals, fill[h])
		}
		s, err := n.Build(vals...)
		if err != nil {
			t.Fatalf("%s: %v", n.Form, err)
		}
		a, err := ParseAction(s)
		if err != nil || NamespaceOf(a) != n || !KnownNamespace(MustPattern(s)) {
			t.Errorf("%s built %q, of namespace %v", n.Form, s, NamespaceOf(a))
		}
		if !strings.HasPrefix(s, n.Prefix()) {
			t.Errorf("%s built %q, not under %q", n.Form, s, n.Prefix())
		}
	}
}

func TestNamespaceBuild(t *testing.T) {
	for _, c := range []struct {
		ns     *Namespace
		values []string
		want   string
		err    string
	}{
		{ExecPath, []string{"/usr/bin/python3.12"}, "exec.path.python3.12", ""},
		{ExecPath, []string{"/"}, "", `no program name in "/"`},
		{ExecPath, []string{"a\u200bb"}, "", `program name "a\u200bb" cannot form an action`},
		{NetFetch, []string{"WWW.Example.COM."}, "net.fetch.com.example.www", ""},
		{NetFetch, []string{"10.0.0.7"}, "net.fetch.10.0.0.7", ""},
		{MCPHostNS, []string{"notion", "[2001:db8::1]"}, "mcp.notion.host.[2001:db8::1]", ""},
		{MCPToolNS, []string{"notion", "a..b"}, "", `tool name "a..b" cannot form an action`},
		{NixBuild, nil, "nix.build", ""},
		{MCPToolNS, []string{"a.tool.x", "y"}, "", `server name "a.tool.x" cannot form an action: it is one segment`},
		{MCPToolNS, []string{"<tool>", "y"}, "mcp.<tool>.tool.y", ""},
		{NixBuild, []string{"x"}, "", "takes 0 values, not 1"},
	} {
		got, err := c.ns.Build(c.values...)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s%q: error %v, want %q", c.ns.Form, c.values, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s%q = %q, %v; want %q", c.ns.Form, c.values, got, err, c.want)
		}
	}
}

func TestKnownNamespace(t *testing.T) {
	for p, want := range map[string]bool{
		"exec.path.gh": true, "exec.*": true, "exec.path": false, "exce.path.gh": false,
		"mcp.*": true, "mcp.x": false, "mcp.x.host": false, "mcp.x.host.*": true, "mcp.x.network": true,
		"mcp.x.network.y": false, "mcp.x.foo.bar": false, "secret.use": false, "secret.*": true,
		"nix.*": true, "nix.build.x": false, "plugin.x": true, "*.path.gh": false,
	} {
		if got := KnownNamespace(MustPattern(p)); got != want {
			t.Errorf("KnownNamespace(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestNamespaceNear(t *testing.T) {
	for p, want := range map[string]string{
		"exec.paht.git":   "exec.path.git",
		"exce.path.gh":    "exec.path.gh",
		"secrt.use.TOKEN": "secret.use.TOKEN",
		"net.fecth.com.x": "net.fetch.com.x",
		"nix.biuld":       "nix.build",
		"exec.path.gh":    "",
		"theme.dark":      "",
	} {
		if got := NamespaceNear(MustPattern(p)); got != want {
			t.Errorf("NamespaceNear(%q) = %q, want %q", p, got, want)
		}
	}
}
