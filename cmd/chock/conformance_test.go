package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/mcptest"
)

// TestConformance runs the server scenarios of the MCP conformance suite
// (npm @modelcontextprotocol/conformance) against chock mcp serve over
// Streamable HTTP. The suite expects the SDKs' "everything" test server,
// whose tools, prompts and resources a gateway does not have: each
// scenario that fails for that is listed, with why, in
// testdata/conformance/expected-failures.yml and in the README, and the
// suite exits 0 only when exactly those fail (a new failure, or a listed
// one that passes, fails the test).
//
// The suite sends no token: a proxy on loopback adds it to every request,
// keeping the Host the suite sent (its DNS-rebinding scenario sends a
// foreign one).
func TestConformance(t *testing.T) {
	node, script := mcptest.Conformance(t)
	g := startGateway(t, gwPolicy(t, ""), true)
	target, err := url.Parse(g.url)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.URL.Path = target.Path
			r.Out.Host = r.In.Host
			r.Out.Header.Set("Authorization", "Bearer "+g.token)
		},
		FlushInterval: -1, // server-sent events as they come
	}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	baseline, err := filepath.Abs("../../testdata/conformance/expected-failures.yml")
	if err != nil {
		t.Fatal(err)
	}
	// CHOCK_CONFORMANCE_OUT keeps the suite's results (checks.json for
	// each scenario) for a look.
	out := os.Getenv("CHOCK_CONFORMANCE_OUT")
	if out == "" {
		out = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, "server", "--url", srv.URL+"/mcp", "--expected-failures", baseline, "-o", out)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	err = cmd.Run()
	t.Logf("conformance server:\n%s", stdout.String())
	if err != nil {
		t.Errorf("the conformance suite: %v (new failures, or listed ones that pass; see the log above)", err)
	}
	if strings.Contains(stdout.String(), gwToken) || strings.Contains(stdout.String(), gwHelperKey) {
		t.Error("a secret value in the suite's output")
	}
}
