// Package driver is the scripted agent of a session: a JSONL file of tool
// calls (chock run --script), each line one of chock's own tools
// (runtime.Tools) and its arguments, mapped onto runtime.Call as the
// gateway maps a model's calls.
package driver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/chockhq/chock/runtime"
)

// MaxLine bounds one line of a script.
const MaxLine = 4 << 20

// ParseScript reads a JSONL script of tool calls, one a line (blank lines
// and lines starting with # are skipped): {"tool": NAME, ...its
// arguments}. Every line is checked before any runs; unknown fields are
// errors, each naming its line.
func ParseScript(raw []byte) ([]*runtime.Call, error) {
	var calls []*runtime.Call
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		c, err := parseLine(text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		calls = append(calls, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return calls, nil
}

// parseLine reads one line: its tool, then the rest as that tool's
// arguments.
func parseLine(text string) (*runtime.Call, error) {
	var fields map[string]json.RawMessage
	d := json.NewDecoder(strings.NewReader(text))
	if err := d.Decode(&fields); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("one JSON object a line")
	}
	var name string
	if raw, ok := fields["tool"]; ok {
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, fmt.Errorf("tool: %w", err)
		}
	}
	tool := runtime.ToolNamed(name)
	if tool == nil {
		return nil, fmt.Errorf("unknown tool %q (%s)", name, runtime.ToolNames())
	}
	delete(fields, "tool")
	args, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	c, err := tool.Call(args)
	if ae := (*runtime.ArgsError)(nil); errors.As(err, &ae) {
		return nil, ae.Err
	}
	return c, err
}
