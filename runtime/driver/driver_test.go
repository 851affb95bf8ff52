package driver

import (
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/runtime"
)

func TestParseScript(t *testing.T) {
	calls, err := ParseScript([]byte(`# a comment
{"tool":"exec","argv":["sh","-c","true"],"timeout":"2s","dir":"/tmp"}

{"tool":"fetch_url","url":"https://example.com/"}
{"tool":"mcp","server":"s","name":"echo","arguments":{"message":"hi"}}
`))
	if err != nil || len(calls) != 3 {
		t.Fatalf("%v %v", calls, err)
	}
	c := calls[0]
	if c.Exec == nil || c.Exec.Dir != "/tmp" || c.Timeout != 2*time.Second || runtime.ToolNamed(c.Tool).Summary(c) != "sh -c true" {
		t.Errorf("exec: %+v", c)
	}
	if c := calls[1]; c.Fetch == nil || c.Fetch.URL != "https://example.com/" {
		t.Errorf("fetch: %+v", c)
	}
	if c := calls[2]; c.MCP == nil || c.MCP.Server != "s" || c.MCP.Tool != "echo" || string(c.MCP.Arguments) != `{"message":"hi"}` {
		t.Errorf("mcp: %+v", c)
	}
}

func TestParseScriptErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"tool":"rm"}`:                                        `line 1: unknown tool "rm"`,
		"\n" + `{"tool":"exec"}`:                               "line 2: exec needs argv",
		`{"tool":"exec","argv":["x"],"evil":1}`:                `line 1: unknown field "evil"; the tool takes argv, dir, stdin, background, timeout`,
		`{"tool":"exec","argv":["x"],"timeout":"soon"}`:        "line 1: timeout:",
		`{"tool":"exec","argv":["x"],"timeout":"-1s"}`:         "a time limit is positive",
		`{"tool":"mcp","server":"s","name":"t","arguments":1}`: "must be a JSON object",
		`{"tool":"fetch_url"} {"tool":"fetch_url"}`:            "one JSON object a line",
		`{"tool":"fetch_url"`:                                  "line 1:",
		`{"argv":["x"]}`:                                       `line 1: unknown tool "" (exec, fetch_url or mcp)`,
		`{"tool":"exec","argv":["x"],"timeout":true}`:          "a number of seconds",
		`{"tool":"exec","argv":["x"],"timeout":0}`:             "a time limit is positive",
	} {
		if _, err := ParseScript([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
	// A value of the wrong type is said in the JSON's terms: the line, the
	// field, what it must be and what it is, no Go type.
	for in, want := range map[string]string{
		`{"tool":"exec","argv":"ls -l"}`:                  `line 1: argv must be a list of strings, such as ["ls", "-l"], not a string`,
		`{"tool":"exec","argv":[1]}`:                      `line 1: argv must be a string, not a number`,
		`{"tool":"exec","argv":["ls"],"background":"no"}`: `line 1: background must be true or false, not a string`,
		"\n" + `{"tool":"fetch_url","url":["x"]}`:         `line 2: url must be a string, not a list`,
		`{"tool":"exec","argv":["ls"],"dir":{}}`:          `line 1: dir must be a string, not an object`,
	} {
		_, err := ParseScript([]byte(in))
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", in, err, want)
		}
	}
	if _, err := ParseScript([]byte(`{"tool":"exec","argv":["` + strings.Repeat("a", MaxLine) + `"]}`)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("an overlong line: %v", err)
	}
}

func FuzzParseScript(f *testing.F) {
	f.Add([]byte(`{"tool":"exec","argv":["sh"]}` + "\n" + `{"tool":"mcp","server":"s","name":"t","arguments":{}}`))
	f.Add([]byte(`{"tool":"fetch_url","url":"https://x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		calls, err := ParseScript(b)
		if err != nil {
			return
		}
		for _, c := range calls {
			rc := c
			if runtime.ToolNamed(c.Tool) == nil {
				t.Fatalf("a parsed call of no tool: %+v", c)
			}
			n := 0
			for _, set := range []bool{rc.Exec != nil, rc.Fetch != nil, rc.MCP != nil} {
				if set {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("call %+v maps to %+v", c, rc)
			}
		}
	})
}
