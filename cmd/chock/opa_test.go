package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/opaservice"
	"github.com/chockhq/chock/internal/stockopa"
	"github.com/chockhq/chock/internal/waitfor"
)

const opaProject = `.{
    .policy = .{
        .default = .deny,
        .allow = .{ "exec.path.true", "exec.path.gh", "exec.path.sleep" },
        .deny = .{ "exec.path.curl" },
    },
}`

// opaFiles writes the project's bundle and a script of one exec call into
// a folder of the test's, and returns the folder and the bundle's bytes.
func opaFiles(t *testing.T) (string, []byte) {
	t.Helper()
	c, ds := config.Load("chock.zon", []byte(opaProject))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	out, err := compile.Compile(compile.Input{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := out.WriteBundle(&b, nil); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{
		"bundle.tar.gz": b.Bytes(),
		"calls.jsonl":   []byte(`{"tool":"exec","argv":["true"]}` + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, b.Bytes()
}

var opaActions = []string{"exec.path.true", "exec.path.gh", "exec.path.curl", "exec.path.ls"}

// TestEvalOPAConfig: chock eval --opa-config decides as --bundle does,
// and its decision logs, held back by a long reporting delay, reach the
// decision-log service before it exits.
func TestEvalOPAConfig(t *testing.T) {
	dir, b := opaFiles(t)
	svc := opaservice.New()
	defer svc.Close()
	svc.Serve(b)
	cfg := filepath.Join(dir, "opa.yaml")
	if err := os.WriteFile(cfg, svc.Config(nil, true), 0o644); err != nil {
		t.Fatal(err)
	}
	_, want, _ := runBuffered(t, append([]string{"eval", "--bundle", filepath.Join(dir, "bundle.tar.gz")}, opaActions...)...)
	code, got, stderr := runBuffered(t, append([]string{"eval", "--opa-config", cfg}, opaActions...)...)
	if code != 0 || got != want {
		t.Fatalf("exit %d\n got %s\nwant %s\nstderr %s", code, got, want, stderr)
	}
	evs := svc.Events()
	if len(evs) != len(opaActions) {
		t.Fatalf("%d decision-log events at exit, want %d", len(evs), len(opaActions))
	}
	for i, ev := range evs {
		raw, _ := json.Marshal(ev["result"])
		if !strings.Contains(string(raw), `"action":"`+opaActions[i]+`"`) || ev["decision_id"] == "" {
			t.Errorf("event %d: %s", i, raw)
		}
	}
}

// TestOPAURL: chock eval --opa-url decides as --bundle does; an OPA that
// stops answering makes eval fail within --opa-timeout and a session's
// call refused, naming the budget; the flags that cannot go together are
// usage errors.
func TestOPAURL(t *testing.T) {
	dir, _ := opaFiles(t)
	srv := stockopa.Start(t, nil, "--bundle", filepath.Join(dir, "bundle.tar.gz"))
	_, want, _ := runBuffered(t, append([]string{"eval", "--bundle", filepath.Join(dir, "bundle.tar.gz")}, opaActions...)...)
	code, got, stderr := runBuffered(t, append([]string{"eval", "--opa-url", srv.URL}, opaActions...)...)
	if code != 0 || got != want {
		t.Fatalf("exit %d\n got %s\nwant %s\nstderr %s", code, got, want, stderr)
	}
	// A session's exec rights, a decision for each program on its PATH,
	// take one request per 500 programs: a remote OPA is a
	// round trip away.
	script := filepath.Join(dir, "calls.jsonl")
	counted := srv.Counted(t)
	if code, out, stderr := runBuffered(t, "run", "--opa-url", counted.URL, "--exit-code", "--script", script); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, stderr)
	}
	n := counted.Take()
	if n["/v1/data/chock/decisions"] == 0 || n["/v1/data/chock/decisions"] > 10 || n["/v1/data/chock/decision"] > 5 {
		t.Errorf("requests of one call's session: %v", n)
	}
	t.Logf("requests of one call's session: %v", n)

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runBuffered(t, "eval", "--opa-url", srv.URL, "--opa-timeout", "300ms", "exec.path.true")
	if code != 1 || !strings.Contains(stderr, "did not answer within 300ms") {
		t.Errorf("eval with OPA stopped: exit %d, %s", code, stderr)
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}

	for _, bad := range [][]string{
		{"eval", "--opa-url", srv.URL, "--bundle", filepath.Join(dir, "bundle.tar.gz"), "exec.path.true"},
		{"eval", "--opa-url", srv.URL, "--opa-config", "x.yaml", "exec.path.true"},
		{"eval", "--opa-ca", "ca.pem", "exec.path.true"},
		{"eval", "--opa-url", "http://192.0.2.1:8181", "exec.path.true"},
		{"eval", "--opa-url", srv.URL, "--opa-timeout", "0s", "exec.path.true"},
	} {
		if code, _, stderr := runBuffered(t, bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", bad, code, exitUsage, stderr)
		}
	}
}

// TestRunRefusedWhenOPAStops: a session whose OPA stops answering in
// the middle refuses its next call with the reason, and logs the decision
// as a deny.
func TestRunRefusedWhenOPAStops(t *testing.T) {
	dir, _ := opaFiles(t)
	srv := stockopa.Start(t, nil, "--bundle", filepath.Join(dir, "bundle.tar.gz"))
	script := filepath.Join(dir, "calls.jsonl")
	os.WriteFile(script, []byte(`{"tool":"exec","argv":["sleep","1"]}`+"\n"+`{"tool":"exec","argv":["true"]}`+"\n"), 0o644)
	state := t.TempDir()
	t.Setenv("CHOCK_STATE_DIR", state)
	t.Setenv("CHOCK_CONFIG_DIR", t.TempDir())
	// OPA stops once the first call is running: its decision is made.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		// Nothing in this test hears of the session log's lines: the log
		// is read until it holds the first call's decision.
		decided := func() bool {
			logs, _ := filepath.Glob(filepath.Join(state, "*", "*.jsonl"))
			logs2, _ := filepath.Glob(filepath.Join(state, "*.jsonl"))
			for _, l := range append(logs, logs2...) {
				if b, _ := os.ReadFile(l); bytes.Contains(b, []byte(`"exec.path.sleep"`)) {
					return true
				}
			}
			return false
		}
		if waitfor.PollWithin(4*time.Second, decided) {
			if err := srv.Pause(); err != nil {
				t.Error(err)
			}
		}
	}()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"run", "--opa-url", srv.URL, "--opa-timeout", "300ms", "--exit-code", "--script", script}, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	<-stopped
	srv.Resume()
	if code == 0 || !strings.Contains(out.String(), "did not answer within 300ms") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

// TestExplainStaleSource: explaining from a bundle quotes chock.zon only
// while it is the text the bundle was compiled from; an edited one gives
// no excerpt rather than a wrong one.
func TestExplainStaleSource(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("chock.zon", []byte(".{\n    .policy = .{\n        .default = .deny,\n        .allow = .{ \"exec.path.gh\" },\n    },\n}\n"), 0o644)
	if code, _, stderr := runBuffered(t, "compile", "-o", "b.tar.gz"); code != 0 {
		t.Fatal(stderr)
	}
	_, out, _ := runBuffered(t, "explain", "--bundle", "b.tar.gz", "exec.path.gh")
	if !strings.Contains(out, `4 |         .allow = .{ "exec.path.gh" },`) {
		t.Fatalf("no excerpt from the same source:\n%s", out)
	}
	os.WriteFile("chock.zon", []byte(".{\n    .policy = .{\n        .default = .deny,\n        .deny = .{ \"exec.path.curl\" },\n        .allow = .{ \"exec.path.gh\" },\n    },\n}\n"), 0o644)
	_, out, _ = runBuffered(t, "explain", "--bundle", "b.tar.gz", "exec.path.gh")
	if strings.Contains(out, " | ") {
		t.Fatalf("an excerpt from an edited source:\n%s", out)
	}
}
