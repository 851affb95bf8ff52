package reach

import (
	"reflect"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
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
	got := strings.Join(Report(c, []*config.Org{o}), "\n")
	for _, want := range []string{
		"secret T -> server s: secret.use deny at start, not given (header Authorization)",
		"secret F -> server s: secret.use allow at start, not given (file F)",
		"server s: host mcp.s.host.com.example.s allow at start (starts)",
		"server s: tool mcp.s.tool.read allow",
		"server s: any other tool deny",
		"broad: exec.path.node allow reaches node runs other programs, so every program",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}
