package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/runtime/redact"
)

// leakValue is the secret of the cross-output leak test: no output, log,
// file or bundle may hold it in any form the session masks.
const leakValue = `ghp_XLEAK0123456789"<&>/+?= end`

// TestNoLeakAnywhere runs a session whose granted program prints its
// secret in every encoded form, leaves it in a file a later call prints,
// and whose agent passes it in argv, URL and dir; then reads stdout,
// stderr, the session log, sessions show (text and JSON), every file in
// TMPDIR, explain and a compiled bundle, and finds no form of the value.
func TestNoLeakAnywhere(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o700)
	state := filepath.Join(dir, "state")
	t.Setenv("CHOCK_STATE_DIR", state)
	t.Setenv("CHOCK_CONFIG_DIR", filepath.Join(dir, "config"))
	t.Setenv("TMPDIR", tmp)
	t.Setenv("LEAK_TOKEN", leakValue)
	t.Setenv("PATH", "/usr/bin:/bin")
	conf := `.{
    .policy = .{ .allow = .{ "exec.path.sh", "exec.path.base64", "exec.path.cat", "exec.path.printf", "exec.path.python3", "secret.use.LEAK_TOKEN", "net.fetch.test.leak.*" } },
    .programs = .{ .{ .name = "sh", .calls = .{ "exec.path.base64", "exec.path.cat", "exec.path.printf", "exec.path.python3" } } },
    .secrets = .{
        .{ .name = "LEAK_TOKEN", .to = "exec.path.sh" },
        .{ .name = "LEAK_TOKEN", .to = "exec.path.python3", .bind = "file", .as = "LEAK_FILE" },
    },
    .credentials = .{ .store = .env },
}
`
	cfg := filepath.Join(dir, "chock.zon")
	os.WriteFile(cfg, []byte(conf), 0o644)
	b64 := base64.StdEncoding.EncodeToString([]byte(leakValue))
	script := strings.Join([]string{
		`{"tool":"exec","argv":["sh","-c","printf '%s\\n' \"$LEAK_TOKEN\"; printf '%s' \"$LEAK_TOKEN\" | base64 -w0; echo; printf 'x%s' \"$LEAK_TOKEN\" | base64 -w0; echo; printf 'xy%s' \"$LEAK_TOKEN\" | base64 -w0; echo >&2 \"$LEAK_TOKEN\"; printf '%s' \"$LEAK_TOKEN\" > ` + filepath.Join(dir, "left") + `"]}`,
		`{"tool":"exec","argv":["python3","-c","import json,urllib.parse,html,os;v=open(os.environ['LEAK_FILE']).read();print(json.dumps(v));print(urllib.parse.quote(v));print(urllib.parse.quote_plus(v));print(html.escape(v))"]}`,
		`{"tool":"exec","argv":["cat","` + filepath.Join(dir, "left") + `"]}`,
		`{"tool":"exec","argv":["printf","%s","` + b64 + `"]}`,
		`{"tool":"exec","argv":["cat","/nonexistent/` + strings.ReplaceAll(leakValue, `"`, `\"`) + `"]}`,
		`{"tool":"exec","argv":["sh","-c","true"],"dir":"/nonexistent/` + strings.ReplaceAll(leakValue, `"`, `\"`) + `"}`,
		`{"tool":"fetch_url","url":"https://leak.test/?q=` + leakValue[:10] + `"}`,
	}, "\n") + "\n"
	sp := filepath.Join(dir, "script.jsonl")
	os.WriteFile(sp, []byte(script), 0o644)
	var outputs []string
	runIt := func(args ...string) {
		var out, errb bytes.Buffer
		run(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
		outputs = append(outputs, strings.Join(args, " ")+": "+out.String()+errb.String())
	}
	runIt("run", "--config", cfg, "--ask", "deny", "--script", sp)
	runIt("run", "--config", cfg, "--ask", "deny", "--json", "--script", sp)
	if !strings.Contains(outputs[0], "[secret:LEAK_TOKEN]") {
		t.Fatalf("the session printed no masked value:\n%s", outputs[0])
	}
	logs, _ := filepath.Glob(filepath.Join(state, "sessions", "*.jsonl"))
	if len(logs) != 2 {
		t.Fatalf("session logs %v", logs)
	}
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		outputs = append(outputs, "log "+l+": "+string(b))
		id := strings.TrimSuffix(filepath.Base(l), ".jsonl")
		runIt("sessions", "show", id)
		runIt("sessions", "show", "--json", id)
	}
	runIt("explain", "--config", cfg, "exec.path.curl")
	bundle := filepath.Join(dir, "bundle.tar.gz")
	runIt("compile", "--config", cfg, "-o", bundle)
	b, _ := os.ReadFile(bundle)
	outputs = append(outputs, "bundle: "+string(b))
	filepath.Walk(tmp, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			outputs = append(outputs, "temp file "+p+": "+string(b))
		}
		return nil
	})
	// What other encoders make of the value, written out here, so the test
	// does not trust Forms to list them: Python's quote, quote_plus,
	// json.dumps and html.escape.
	independent := []string{"ghp_XLEAK0123456789%22%3C%26%3E/%2B%3F%3D%20end", "ghp_XLEAK0123456789%22%3C%26%3E%2F%2B%3F%3D+end",
		`ghp_XLEAK0123456789\"<&>/+?= end`, "ghp_XLEAK0123456789&quot;&lt;&amp;&gt;/+?= end"}
	for _, o := range outputs {
		for _, f := range append(redact.Forms(leakValue), independent...) {
			if strings.Contains(o, f) {
				t.Errorf("a form of the value (%q) is in %s", f, firstLine(o))
			}
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, ':'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestFolderIDsSeeAReplacedFolder: a folder moved away and another made
// in its place is told apart, so mcp serve does not read a policy a call
// put there.
func TestFolderIDsSeeAReplacedFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "policy")
	os.Mkdir(dir, 0o755)
	f := filepath.Join(dir, "chock.zon")
	os.WriteFile(f, []byte(".{}"), 0o644)
	before := folderIDs([]string{f})
	os.Rename(dir, dir+".moved")
	os.Mkdir(dir, 0o755)
	os.WriteFile(f, []byte(".{}"), 0o644)
	if after := folderIDs([]string{f}); len(after) != 1 || after[dir] == before[dir] {
		t.Fatalf("the replaced folder looks the same: %v %v", before, after)
	}
}
