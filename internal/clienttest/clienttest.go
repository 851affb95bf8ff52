// Package clienttest runs a real agent client (Claude Code, from the npm
// test peers) offline, against a model stand-in this package serves: the
// Anthropic Messages API on a loopback port, streaming the turns a test
// scripts (a tool call, then text), and recording every request, so a test
// sees what the real client sent the model (a tool's result, a hook's
// refusal) and what it ran.
//
// Every client phones home, so Run starts the client and the stand-in in a
// network namespace of their own holding only loopback: the test binary
// runs again under unshare --net, as the job (MaybeRun, first thing in
// TestMain), and nothing it starts reaches another address.
package clienttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// runEnv holds the job, as JSON, when the test binary runs as one.
const runEnv = "CHOCK_CLIENTTEST_JOB"

// Turn is one answer of the model: a tool call (Tool and its Input) or
// text.
type Turn struct {
	Tool  string         `json:"tool,omitempty"`
	Input map[string]any `json:"input,omitempty"`
	Text  string         `json:"text,omitempty"`
}

// Job is one run of a client: its argv, environment and folder, and the
// model's turns. BaseURLEnv is the variable the client reads the model
// API's URL from (ANTHROPIC_BASE_URL).
type Job struct {
	Argv       []string `json:"argv"`
	Env        []string `json:"env"`
	Dir        string   `json:"dir"`
	BaseURLEnv string   `json:"base_url_env"`
	Turns      []Turn   `json:"turns"`
	// Out is the folder the job writes requests.jsonl and output to.
	Out string `json:"out"`
}

// Result is what a run left: the client's combined output, its exit
// error, and the requests the model was sent (each a decoded body).
type Result struct {
	Output   string
	Err      string
	Requests []map[string]any
}

// Run runs job in a network namespace of its own and returns what it
// left. Without unshare the test fails.
func Run(t testing.TB, job Job) Result {
	t.Helper()
	job.Out = t.TempDir()
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "--net", "--fork", "--", exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), runEnv+"="+string(raw))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the client's network namespace: %v\n%s", err, out)
	}
	var r Result
	out, _ := os.ReadFile(filepath.Join(job.Out, "output"))
	r.Output = string(out)
	e, _ := os.ReadFile(filepath.Join(job.Out, "error"))
	r.Err = string(e)
	reqs, _ := os.ReadFile(filepath.Join(job.Out, "requests.jsonl"))
	for _, line := range bytes.Split(reqs, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err == nil {
			r.Requests = append(r.Requests, m)
		}
	}
	return r
}

// MaybeRun runs the job and exits when this process was started as one
// (Run); otherwise it returns at once.
func MaybeRun() {
	raw := os.Getenv(runEnv)
	if raw == "" {
		return
	}
	var job Job
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		fmt.Fprintln(os.Stderr, "clienttest:", err)
		os.Exit(2)
	}
	if err := runJob(job); err != nil {
		fmt.Fprintln(os.Stderr, "clienttest:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func runJob(job Job) error {
	if out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fmt.Errorf("bringing loopback up: %v: %s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rec, err := os.Create(filepath.Join(job.Out, "requests.jsonl"))
	if err != nil {
		return err
	}
	defer rec.Close()
	s := &standIn{turns: job.Turns, rec: rec}
	go http.Serve(l, s)
	cmd := exec.Command(job.Argv[0], job.Argv[1:]...)
	cmd.Dir = job.Dir
	env := []string{}
	for _, kv := range os.Environ() {
		if len(kv) < len(runEnv) || kv[:len(runEnv)] != runEnv {
			env = append(env, kv)
		}
	}
	cmd.Env = append(append(env, job.Env...), job.BaseURLEnv+"=http://"+l.Addr().String())
	out, runErr := cmd.CombinedOutput()
	if err := os.WriteFile(filepath.Join(job.Out, "output"), out, 0o600); err != nil {
		return err
	}
	if runErr != nil {
		os.WriteFile(filepath.Join(job.Out, "error"), []byte(runErr.Error()), 0o600)
	}
	return nil
}

// standIn is the Anthropic Messages API: each request that offers tools
// and ends with the user's prompt or a tool's result gets the next turn;
// every other request (a title, a summary) gets text.
type standIn struct {
	mu    sync.Mutex
	turns []Turn
	next  int
	rec   *os.File
	calls int
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	raw := new(bytes.Buffer)
	raw.ReadFrom(r.Body)
	json.Unmarshal(raw.Bytes(), &body)
	s.mu.Lock()
	s.rec.Write(append(bytes.TrimSpace(raw.Bytes()), '\n'))
	turn := Turn{Text: "done"}
	if _, tools := body["tools"]; tools && s.next < len(s.turns) {
		turn = s.turns[s.next]
		s.next++
	}
	s.calls++
	id := fmt.Sprintf("toolu_%02d", s.calls)
	s.mu.Unlock()
	model, _ := body["model"].(string)
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(kind string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, b)
	}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_" + id, "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "usage": map[string]any{"input_tokens": 1, "output_tokens": 1}}})
	stop := "end_turn"
	if turn.Tool != "" {
		input, _ := json.Marshal(turn.Input)
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": id, "name": turn.Tool, "input": map[string]any{}}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		stop = "tool_use"
	} else {
		ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": turn.Text}})
	}
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop}, "usage": map[string]any{"output_tokens": 1}})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

// ToolResults are the tool_result blocks the client sent the model, in
// order, each as {"content": text, "is_error": bool}.
func (r Result) ToolResults() []map[string]any {
	var out []map[string]any
	seen := map[string]bool{}
	for _, req := range r.Requests {
		msgs, _ := req["messages"].([]any)
		for _, m := range msgs {
			mm, _ := m.(map[string]any)
			blocks, _ := mm["content"].([]any)
			for _, b := range blocks {
				bb, _ := b.(map[string]any)
				if bb["type"] != "tool_result" {
					continue
				}
				id, _ := bb["tool_use_id"].(string)
				if seen[id] {
					continue
				}
				seen[id] = true
				out = append(out, map[string]any{"id": id, "content": text(bb["content"]), "is_error": bb["is_error"] == true})
			}
		}
	}
	return out
}

// text flattens a tool result's content (a string, or text blocks).
func text(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var b bytes.Buffer
		for _, x := range v {
			if m, ok := x.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					b.WriteString(s)
				}
			}
		}
		return b.String()
	}
	return ""
}
