package runtime

import (
	"strings"
	"testing"
	"time"
)

// TestToolTable checks each of chock's tools reads its arguments strictly,
// makes a call of its own name, and that its schema requires what its
// check does.
func TestToolTable(t *testing.T) {
	for _, c := range []struct {
		tool *Tool
		args string
		err  string
	}{
		{ExecTool, `{"argv":["gh","pr"],"timeout":30}`, ""},
		{ExecTool, `{"argv":["gh"],"timeout":"2m"}`, ""},
		{ExecTool, `{"argv":[]}`, "exec needs argv"},
		{ExecTool, `{"argv":["x"],"evil":1}`, `the arguments: unknown field "evil"; the tool takes argv, dir, stdin, background, timeout`},
		{ExecTool, `{"argv":["x"],"timeout":-1}`, "a time limit is positive"},
		{ExecTool, `{"argv":["x"]} {}`, "the arguments: one JSON object"},
		{FetchTool, `null`, "fetch_url needs url"},
		{FetchTool, `{"url":"https://example.com/"}`, ""},
		{MCPTool, `{"server":"s","name":"t","arguments":[1]}`, "must be a JSON object"},
	} {
		call, err := c.tool.Call([]byte(c.args))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s: error %v, want %q", c.tool.Name, c.args, err, c.err)
			}
			continue
		}
		if err != nil || call.Tool != c.tool.Name {
			t.Errorf("%s %s: %+v, %v", c.tool.Name, c.args, call, err)
		}
	}
	if c, _ := ExecTool.Call([]byte(`{"argv":["x"],"timeout":1.5}`)); c.Timeout != 1500*time.Millisecond {
		t.Errorf("timeout 1.5 = %v", c.Timeout)
	}
	if s := ExecTool.Schema; s.Properties["argv"].Type != "array" || *s.Properties["argv"].MinItems != 1 || s.Required[0] != "argv" {
		t.Errorf("exec's schema: %+v", s.Properties["argv"])
	}
	for _, name := range []string{"exec", "fetch_url", "read_file"} {
		found := false
		for _, own := range OwnTools {
			found = found || own == name
		}
		if !found {
			t.Errorf("%s is not kept from servers", name)
		}
	}
	if ToolNamed("mcp").Offered || ToolNames() != "exec, fetch_url or mcp" {
		t.Error("the tool table's names")
	}
}
