package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/mcptest"
)

// inspector runs the real MCP Inspector's CLI (npm
// @modelcontextprotocol/inspector) with args and returns the JSON it
// prints first on stdout.
func inspector(t *testing.T, dir string, args ...string) map[string]any {
	t.Helper()
	node, script := mcptest.Inspector(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script, "--cli", "--format", "json", "-q"}, args...)...)
	cmd.Dir = dir
	// The Inspector's own home and catalog, in the test's folder.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	line, _, _ := bytes.Cut(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	var out map[string]any
	if jerr := json.Unmarshal(line, &out); jerr != nil {
		t.Fatalf("inspector %s: %v; stdout %q, stderr %q, %v", strings.Join(args, " "), jerr, stdout.String(), stderr.String(), err)
	}
	for _, v := range []string{gwToken, gwHelperKey} {
		if strings.Contains(stdout.String()+stderr.String(), v) {
			t.Fatalf("a secret value in the Inspector's output")
		}
	}
	// --strict exits 6 on a tool schema that is not portable.
	if ee, ok := err.(*exec.ExitError); ok && slices.Contains(args, "--strict") {
		t.Errorf("inspector %s exited %d: %s", strings.Join(args, " "), ee.ExitCode(), stderr.String())
	}
	return out
}

// resultText is the text of a tools/call result the Inspector printed.
func resultText(t *testing.T, out map[string]any) (string, bool) {
	t.Helper()
	res, _ := out["result"].(map[string]any)
	if res == nil {
		t.Fatalf("no result: %v", out)
	}
	var parts []string
	content, _ := res["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			if s, ok := m["text"].(string); ok {
				parts = append(parts, s)
			}
		}
	}
	isErr, _ := res["isError"].(bool)
	return strings.Join(parts, "\n"), isErr
}

func listedTools(t *testing.T, out map[string]any) []string {
	t.Helper()
	res, _ := out["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	var names []string
	for _, tl := range tools {
		if m, ok := tl.(map[string]any); ok {
			names = append(names, m["name"].(string))
		}
	}
	slices.Sort(names)
	return names
}

// TestInspector: the real MCP Inspector CLI lists and calls chock mcp
// serve's tools over stdio and over Streamable HTTP with the token, in
// both of its protocol eras (2025-11-25 and before, and 2026-07-28), and
// its --strict check finds nothing unportable in their schemas.
func TestInspector(t *testing.T) {
	mcptest.Inspector(t) // skip (or fail under CI) before starting anything
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"exec", "fetch_url", "helper__echo", "helper__env"}
	t.Run("stdio", func(t *testing.T) {
		g := startGateway(t, gwPolicy(t, ""), false)
		// The Inspector hands a stdio server a few variables of its own
		// only; the rest of chock's go on its command line (-e).
		server := []string{"-e", asChockEnv + "=1", "-e", "CHOCK_STATE_DIR=" + g.state, "-e", "GW_TOKEN=" + gwToken, "-e", "HELPER_KEY=" + gwHelperKey}
		target := []string{"--", exe, "mcp", "serve", "--config", "chock.zon"}
		for _, era := range []string{"legacy", "modern"} {
			list := append(append(append([]string{}, server...), "--protocol-era", era, "--method", "tools/list", "--strict"), target...)
			if got := listedTools(t, inspector(t, g.dir, list...)); !slices.Equal(got, want) {
				t.Errorf("tools/list (%s) = %v, want %v", era, got, want)
			}
		}
		echo := append(append(append([]string{}, server...), "--method", "tools/call", "--tool-name", "exec", "--tool-arg", `argv=["echo","from","the","inspector"]`), target...)
		if text, isErr := resultText(t, inspector(t, g.dir, echo...)); isErr || text != "exit 0\nstdout:\nfrom the inspector\n" {
			t.Errorf("exec echo = %q (error %v)", text, isErr)
		}
		secret := append(append(append([]string{}, server...), "--method", "tools/call", "--tool-name", "helper__env"), target...)
		if text, _ := resultText(t, inspector(t, g.dir, secret...)); !strings.Contains(text, "HELPER_KEY=[secret:HELPER_KEY]") {
			t.Errorf("helper__env = %q", text)
		}
	})
	t.Run("http", func(t *testing.T) {
		g := startGateway(t, gwPolicy(t, ""), true)
		server := []string{"--transport", "http", "--server-url", g.url, "--header", "Authorization: Bearer " + g.token}
		for _, era := range []string{"legacy", "modern"} {
			if got := listedTools(t, inspector(t, g.dir, append(server, "--protocol-era", era, "--method", "tools/list", "--strict")...)); !slices.Equal(got, want) {
				t.Errorf("tools/list (%s) = %v, want %v", era, got, want)
			}
		}
		out := inspector(t, g.dir, append(server, "--method", "tools/call", "--tool-name", "exec", "--tool-arg", `argv=["cat","/etc/hostname"]`)...)
		text, isErr := resultText(t, out)
		if !isErr || !strings.Contains(text, "refused by chock: exec.path.cat") || !strings.Contains(text, "chock.zon:5:") {
			t.Errorf("exec cat = %q (error %v)", text, isErr)
		}
		out = inspector(t, g.dir, append(server, "--method", "tools/call", "--tool-name", "helper__echo", "--tool-arg", "message=over http")...)
		if text, isErr := resultText(t, out); isErr || text != "echo: over http" {
			t.Errorf("helper__echo = %q (error %v)", text, isErr)
		}
		// Without the token the Inspector gets nowhere.
		node, script := mcptest.Inspector(t)
		cmd := exec.Command(node, script, "--cli", "--format", "json", "-q", "--transport", "http", "--server-url", g.url, "--method", "tools/list")
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		b, err := cmd.CombinedOutput()
		if err == nil || strings.Contains(string(b), `"tools"`) {
			t.Errorf("tools/list without the token: %v, %s", err, b)
		}
	})
}
