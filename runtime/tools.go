package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Tool is one of chock's own tools: its name, what it tells a model, the
// typed arguments it takes (the input schema is inferred from them) and
// how a call of it becomes a Call. Tools is the one table of them: the
// script driver, the gateway's tool list and dispatch, the check that no
// server declares one of their names and the printing of results read it.
type Tool struct {
	// Name is the tool's name, in a script line and to a model.
	Name string
	// Title and Description are what a model is told.
	Title, Description string
	// ReadOnly and Destructive are the tool's annotations.
	ReadOnly, Destructive bool
	// Offered says the gateway offers it to a model. "mcp" is a script's
	// way to call a server's tool; a model calls SERVER__TOOL instead.
	Offered bool
	// Schema is the input schema, inferred from the argument struct.
	Schema *jsonschema.Schema

	decode func(raw json.RawMessage) (*Call, error)
	// summary is the call in a few words (argv, URL, server and tool):
	// untrusted text.
	summary func(*Call) string
	// shows is what a result of the tool holds, for a person.
	shows func(res *Result) (status string, blocks []Block)
}

// Block is one labelled part of a result: untrusted, redacted text.
type Block struct{ Label, Text string }

// Timeout is a call's time limit as a tool argument: a duration ("30s")
// or a number of seconds.
type Timeout time.Duration

// UnmarshalJSON reads a duration or a number of seconds; it must be
// positive.
func (t *Timeout) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var text string
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		text = x
	case float64:
		text = strconv.FormatFloat(x, 'f', -1, 64) + "s"
	default:
		return errors.New("timeout is a duration such as 30s, or a number of seconds")
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("timeout: %w", err)
	}
	if d <= 0 {
		return fmt.Errorf("timeout %s: a time limit is positive", text)
	}
	*t = Timeout(d)
	return nil
}

// Limit is the time limit every tool takes.
type Limit struct {
	Timeout Timeout `json:"timeout,omitempty" jsonschema:"the time limit, such as 30s or 5m (default 60s)"`
}

// execArgs are exec's arguments.
type execArgs struct {
	ExecRequest
	Limit
}

// fetchArgs are fetch_url's arguments.
type fetchArgs struct {
	FetchRequest
	Limit
}

// mcpArgs are a script's call of a server's tool.
type mcpArgs struct {
	MCPRequest
	Limit
}

// The tools, each a row of Tools too.
var (
	ExecTool = newTool(Tool{
		Name:  "exec",
		Title: "Run a program (under chock's policy)",
		Description: "Runs a program, as exec.path.<program> under the project's chock policy: argv[0] names it (found on the session's PATH), " +
			"and no shell is involved, so pass a shell's own argv (\"sh\", \"-c\", \"...\") to use one. The result is the exit status, " +
			"stdout and stderr (each up to 1 MiB), with every secret value masked. A refused call answers with the rule that refused it. " +
			"Its network is chock's egress proxy only (HTTP_PROXY, HTTPS_PROXY and ALL_PROXY point at it): each connection is decided as " +
			"net.connect.<host>, and the result ends with a line for each one refused.",
		Destructive: true, Offered: true,
		summary: func(c *Call) string { return strings.Join(c.Exec.Argv, " ") },
		shows: func(res *Result) (string, []Block) {
			status := fmt.Sprintf("exit %d", res.ExitCode)
			if res.TimedOut {
				status += " (time limit reached)"
			}
			return status, []Block{{"stdout", res.Stdout}, {"stderr", res.Stderr}, {"network", strings.Join(res.Network, "\n")}}
		},
	}, func(a *execArgs) (*Call, error) {
		if len(a.Argv) == 0 {
			return nil, errors.New("exec needs argv")
		}
		return &Call{Timeout: time.Duration(a.Timeout), Exec: &a.ExecRequest}, nil
	})
	FetchTool = newTool(Tool{
		Name:  "fetch_url",
		Title: "Fetch a URL (under chock's policy)",
		Description: "GETs an https URL, as net.fetch.<host> under the project's chock policy: no redirect is followed, no proxy is used, " +
			"and this machine's and private addresses are never reached. The result is the status and up to 1 MiB of the body, with every " +
			"secret value masked. A refused call answers with the rule that refused it.",
		ReadOnly: true, Offered: true,
		summary: func(c *Call) string { return c.Fetch.URL },
		shows: func(res *Result) (string, []Block) {
			return fmt.Sprintf("status %d", res.Status), []Block{{"body", res.Body}}
		},
	}, func(a *fetchArgs) (*Call, error) {
		if a.URL == "" {
			return nil, errors.New("fetch_url needs url")
		}
		return &Call{Timeout: time.Duration(a.Timeout), Fetch: &a.FetchRequest}, nil
	})
	MCPTool = newTool(Tool{
		Name:    "mcp",
		Title:   "Call a tool of a configured MCP server",
		summary: func(c *Call) string { return c.MCP.Server + " " + c.MCP.Tool },
		shows: func(res *Result) (string, []Block) {
			status := ""
			if res.IsError {
				status = "the tool reported an error"
			}
			return status, []Block{{"content", res.Content}}
		},
	}, func(a *mcpArgs) (*Call, error) {
		if a.Server == "" || a.Tool == "" {
			return nil, errors.New("mcp needs server and name")
		}
		if b := bytes.TrimSpace(a.Arguments); len(b) > 0 && b[0] != '{' && string(b) != "null" {
			return nil, errors.New("mcp arguments must be a JSON object")
		}
		return &Call{Timeout: time.Duration(a.Timeout), MCP: &a.MCPRequest}, nil
	})
)

// Tools is every tool of chock's own, exec first.
var Tools = []*Tool{ExecTool, FetchTool, MCPTool}

// reservedTools are names of the harness's own tools that chock does not
// serve but no server may declare either.
var reservedTools = []string{"read_file", "write_file", "list_files"}

// OwnTools are the names of Chock's own tools: a server declaring one, in
// any case, is kept out of the session whole, so the model can never be
// offered a server's tool under a name it trusts.
var OwnTools = append(OfferedNames(), reservedTools...)

// OfferedNames are the names of the tools the gateway offers a model.
func OfferedNames() []string {
	var out []string
	for _, t := range Tools {
		if t.Offered {
			out = append(out, t.Name)
		}
	}
	return out
}

// ToolNamed is the tool of that name, or nil.
func ToolNamed(name string) *Tool {
	for _, t := range Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// ToolNames lists the tools' names, for a message: "exec, fetch_url or mcp".
func ToolNames() string {
	names := make([]string, len(Tools))
	for i, t := range Tools {
		names[i] = t.Name
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// timeoutSchema is a Timeout's schema: a duration's text or a number of
// seconds.
var timeoutSchema = &jsonschema.Schema{Types: []string{"string", "number"}}

// newTool completes a row of Tools from its argument struct A and the
// function that checks the arguments and makes the call.
func newTool[A any](t Tool, call func(*A) (*Call, error)) *Tool {
	s, err := jsonschema.For[A](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[Timeout]():         timeoutSchema,
		reflect.TypeFor[json.RawMessage](): {Type: "object"},
	}})
	if err != nil {
		panic(fmt.Sprintf("runtime: tool %s: %v", t.Name, err))
	}
	// A list the tool requires holds at least one item (a Go slice would
	// also let it be null).
	for _, name := range s.Required {
		if p := s.Properties[name]; p != nil && slices.Contains(p.Types, "array") {
			p.Types, p.Type, p.MinItems = nil, "array", jsonschema.Ptr(1)
		}
	}
	t.Schema = s
	t.decode = func(raw json.RawMessage) (*Call, error) {
		a := new(A)
		if err := decodeStrict(raw, a); err != nil {
			return nil, &ArgsError{Err: err}
		}
		c, err := call(a)
		if err != nil {
			return nil, err
		}
		c.Tool = t.Name
		return c, nil
	}
	return &t
}

// Call reads the tool's arguments (one JSON object, no field the tool
// does not take) and checks them: the call to broker, or what is wrong.
func (t *Tool) Call(raw json.RawMessage) (*Call, error) { return t.decode(raw) }

// Summary is call c of the tool in a few words: untrusted text.
func (t *Tool) Summary(c *Call) string { return t.summary(c) }

// Shows is what res, a result of the tool, holds: a status line ("" for
// none) and its labelled parts.
func (t *Tool) Shows(res *Result) (status string, blocks []Block) { return t.shows(res) }

// ArgsError is arguments that are not the one JSON object a tool takes.
type ArgsError struct{ Err error }

func (e *ArgsError) Error() string { return "the arguments: " + e.Err.Error() }

// Unwrap returns the decoding error.
func (e *ArgsError) Unwrap() error { return e.Err }

// decodeStrict reads a tool's arguments strictly: one JSON object, no
// field the tool does not take; nothing or null is the empty object.
func decodeStrict(raw json.RawMessage, into any) error {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = json.RawMessage("{}")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		return argsError(err, reflect.TypeOf(into))
	}
	if d.More() {
		return errors.New("one JSON object")
	}
	return nil
}

// argsError says what was wrong with a tool's arguments in the terms of
// the JSON written, not of the Go types read into: the field, what it
// must be and what it is ("argv must be a list of strings, such as
// ["ls", "-l"], not a string"), or the unknown field and the fields the
// tool takes. The decoder's error is kept beneath it (errors.As finds it),
// its Go type names left out of the text.
func argsError(err error, into reflect.Type) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if i := strings.LastIndexByte(field, '.'); i >= 0 {
			field = field[i+1:]
		}
		if field == "" {
			return &decodeError{fmt.Sprintf("the arguments must be a JSON object, not %s", jsonKind(te.Value)), err}
		}
		return &decodeError{fmt.Sprintf("%s must be %s, not %s", field, wanted(te.Type), jsonKind(te.Value)), err}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return &decodeError{fmt.Sprintf("unknown field %s; the tool takes %s", name, strings.Join(fieldsOf(into), ", ")), err}
	}
	return err
}

// decodeError is a decoding error said in the JSON's terms (argsError),
// the decoder's own beneath it.
type decodeError struct {
	msg string
	err error
}

func (e *decodeError) Error() string { return e.msg }

// Unwrap returns the decoder's error.
func (e *decodeError) Unwrap() error { return e.err }

// wanted names what a value of Go type t is written as in JSON.
func wanted(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return `a list of strings, such as ["ls", "-l"]`
		}
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// jsonKind names a JSON value's kind as json.UnmarshalTypeError gives it.
func jsonKind(v string) string {
	switch v {
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "bool":
		return "true or false"
	case "string", "number":
		return "a " + v
	}
	if strings.HasPrefix(v, "number") {
		return "a number"
	}
	return v
}

// fieldsOf lists the JSON fields of the struct t points to, its embedded
// structs' too, in order.
func fieldsOf(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, fieldsOf(f.Type)...)
		case name == "-" || !f.IsExported():
		case name == "":
			out = append(out, f.Name)
		default:
			out = append(out, name)
		}
	}
	return out
}
