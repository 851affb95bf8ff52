// Package driver is the agent side of a session: tool calls as an agent
// issues them (exec, fetch_url, a server's tool) mapped onto runtime.Call.
// The scripted driver reads them from a JSONL file (chock run --script);
// the MCP gateway (chock mcp serve) will take them from a client; both use
// the one mapping here.
package driver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chockhq/chock/runtime"
)

// ToolCall is one tool call as an agent issues it.
type ToolCall struct {
	Tool string `json:"tool"` // exec, fetch_url or mcp
	// exec
	Argv       []string `json:"argv,omitempty"`
	Dir        string   `json:"dir,omitempty"`
	Stdin      string   `json:"stdin,omitempty"`
	Timeout    string   `json:"timeout,omitempty"`
	Background bool     `json:"background,omitempty"`
	// fetch_url
	URL string `json:"url,omitempty"`
	// mcp: the server, the tool's name, its arguments (a JSON object).
	Server    string          `json:"server,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Check says what is wrong with the call, before anything runs.
func (t ToolCall) Check() error {
	switch t.Tool {
	case "exec":
		if len(t.Argv) == 0 {
			return errors.New("exec needs argv")
		}
	case "fetch_url":
		if t.URL == "" {
			return errors.New("fetch_url needs url")
		}
	case "mcp":
		if t.Server == "" || t.Name == "" {
			return errors.New("mcp needs server and name")
		}
		if a := bytes.TrimSpace(t.Arguments); len(a) > 0 && a[0] != '{' && string(a) != "null" {
			return errors.New("mcp arguments must be a JSON object")
		}
	default:
		return fmt.Errorf("unknown tool %q (exec, fetch_url or mcp)", t.Tool)
	}
	if t.Timeout != "" {
		d, err := time.ParseDuration(t.Timeout)
		if err != nil {
			return fmt.Errorf("timeout: %w", err)
		}
		if d <= 0 {
			return fmt.Errorf("timeout %s: a time limit is positive", t.Timeout)
		}
	}
	return nil
}

// Call is the brokered call for t (which Check passed).
func (t ToolCall) Call() *runtime.Call {
	c := &runtime.Call{Tool: t.Tool}
	if t.Timeout != "" {
		c.Timeout, _ = time.ParseDuration(t.Timeout)
	}
	switch t.Tool {
	case "exec":
		c.Exec = &runtime.ExecRequest{Argv: t.Argv, Dir: t.Dir, Stdin: t.Stdin, Background: t.Background}
	case "fetch_url":
		c.Fetch = &runtime.FetchRequest{URL: t.URL}
	case "mcp":
		c.MCP = &runtime.MCPRequest{Server: t.Server, Tool: t.Name, Arguments: t.Arguments}
	}
	return c
}

// Summary is the call in a few words for a header line: the argv, the
// url, or the server and tool. It is untrusted text.
func (t ToolCall) Summary() string {
	switch t.Tool {
	case "fetch_url":
		return t.URL
	case "mcp":
		return t.Server + " " + t.Name
	}
	return strings.Join(t.Argv, " ")
}

// MaxLine bounds one line of a script.
const MaxLine = 4 << 20

// ParseScript reads a JSONL script of tool calls, one a line (blank lines
// and lines starting with # are skipped), checking every line before any
// runs. Unknown fields are errors, each naming its line.
func ParseScript(raw []byte) ([]ToolCall, error) {
	var calls []ToolCall
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		var c ToolCall
		d := json.NewDecoder(strings.NewReader(text))
		d.DisallowUnknownFields()
		if err := d.Decode(&c); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if d.More() {
			return nil, fmt.Errorf("line %d: one JSON object a line", line)
		}
		if err := c.Check(); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		calls = append(calls, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return calls, nil
}
