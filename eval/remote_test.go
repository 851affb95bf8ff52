package eval

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/bundletest"
	"github.com/chockhq/chock/internal/stockopa"
	"github.com/chockhq/chock/internal/waitfor"
)

// compiled compiles a project under orgs.
func compiled(t testing.TB, project string, orgs ...string) *compile.Output {
	t.Helper()
	out, err := compile.Compile(input(t, project, orgs...))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeBundle writes out's unsigned bundle into dir and returns its path.
func writeBundle(t testing.TB, dir string, out *compile.Output) string {
	t.Helper()
	var buf bytes.Buffer
	if err := out.WriteBundle(&buf, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "bundle.tar.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startOPA is stockopa.Start.
func startOPA(t testing.TB, client *http.Client, args ...string) *stockopa.Server {
	t.Helper()
	return stockopa.Start(t, client, args...)
}

// remoteActions are random actions over the seed policy's own segments,
// malformed ones among them.
func remoteActions(n int, seed uint64) []string {
	r := mrand.New(mrand.NewPCG(seed, 17))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	var out []string
	for len(out) < n {
		var a string
		switch r.IntN(6) {
		case 0:
			a = "exec.path." + pick("gh", "curl", "git", "python3", "*", "gh.extra")
		case 1:
			a = "secret.use." + pick("DEPLOY_KEY", "GITHUB_TOKEN", "OTHER", "KEY")
		case 2:
			a = "mcp." + pick("notion", "probe", "other") + ".host.com." + pick("notion", "probe", "x") + "." + pick("mcp", "api")
		case 3:
			a = "mcp." + pick("notion", "probe") + ".tool." + pick("search", "write", "x")
		case 4:
			a = "net.fetch.com." + pick("example", "notion", "github")
		default:
			a = pick("exec..gh", "", "exec.path.", "EXEC.path.gh", "a b", "mcp.notion", "exec.path.gh\x00", "x")
		}
		out = append(out, a)
	}
	return out
}

// stripped is a decision without what only a remote answer carries.
func stripped(d *Decision) Decision {
	c := *d
	c.ID, c.Revision = "", ""
	if len(c.Layers) == 0 {
		c.Layers = nil // a cached decision's copy has an empty slice
	}
	return c
}

// embedded is the engine of out in process.
func embedded(t testing.TB, out *compile.Output) *Engine {
	t.Helper()
	e, err := FromOutput(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// same fails the test when got and want differ but for ID and revision;
// what (a format and its args) says which decision it is.
func same(t testing.TB, got, want *Decision, what string, args ...any) {
	t.Helper()
	if g, w := stripped(got), stripped(want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n remote %+v\n local  %+v", fmt.Sprintf(what, args...), g, w)
	}
}

// TestRemoteDecidesAsEmbedded: an engine asking stock opa run --server
// decides exactly as the embedded engine on the same compilation, at both
// phases, gives the same secrets and reads the same meta and revision.
func TestRemoteDecidesAsEmbedded(t *testing.T) {
	out := compiled(t, seedProject, seedOrg)
	local, remote, srv := localAndRemote(t, out)
	ctx := context.Background()
	if !reflect.DeepEqual(remote.Meta(), local.Meta()) {
		t.Fatalf("meta:\n remote %+v\n local  %+v", remote.Meta(), local.Meta())
	}
	// localhost is loopback by name.
	_, port, _ := net.SplitHostPort(srv.Addr)
	if _, err := NewRemote(ctx, RemoteOptions{URL: "http://localhost:" + port + "/"}); err != nil {
		t.Fatalf("localhost: %v", err)
	}
	if remote.Revision() != out.Revision {
		t.Fatalf("revision %q, want %q", remote.Revision(), out.Revision)
	}
	n := 0
	for i, a := range remoteActions(300, 1) {
		for _, ph := range []config.Phase{config.Start, config.Loop} {
			want, err := local.Decide(ctx, a, ph)
			if err != nil {
				t.Fatal(err)
			}
			got, err := remote.Decide(ctx, a, ph)
			if err != nil {
				t.Fatalf("%d %q at %s: %v", i, a, ph, err)
			}
			same(t, got, want, "%q at %s", a, ph)
			if got.Revision != out.Revision || got.ID != "" {
				t.Fatalf("%q: revision %q id %q", a, got.Revision, got.ID)
			}
			n++
		}
	}
	t.Logf("%d decisions agree", n)
	// Eight sessions at once, each on its own view, agree too.
	var wg sync.WaitGroup
	acts := remoteActions(200, 2)
	for s := range 8 {
		view := remote.Pinned()
		wg.Go(func() {
			for _, a := range acts[s*25 : (s+1)*25] {
				want, err := local.Decide(ctx, a, config.Loop)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := view.Decide(ctx, a, config.Loop)
				if err != nil {
					t.Error(err)
					return
				}
				if g, w := stripped(got), stripped(want); !reflect.DeepEqual(g, w) {
					t.Errorf("%q concurrently:\n remote %+v\n local  %+v", a, g, w)
					return
				}
			}
		})
	}
	wg.Wait()
	targets := []Target{{Server: "notion"}, {Server: "probe"}, {Server: "none"}}
	for _, a := range []string{"exec.path.gh", "exec.path.curl", "mcp.notion.tool.search", "mcp.probe.tool.x", "mcp.other.tool.x"} {
		targets = append(targets, Target{Action: a})
	}
	for _, tg := range targets {
		want, err := local.Secrets(ctx, tg)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Secrets(ctx, tg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("secrets of %+v: remote %+v, local %+v", tg, got, want)
		}
	}
}

// TestRemoteToken: an opa run with token authentication and a
// system.authz policy takes the right bearer token and refuses no token
// or a wrong one with a 401, and the token is in no error.
func TestRemoteToken(t *testing.T) {
	const token = "s3cr3t-t0ken-for-chock"
	dir := t.TempDir()
	authz := filepath.Join(dir, "authz")
	os.MkdirAll(authz, 0o700)
	os.WriteFile(filepath.Join(authz, ".manifest"), []byte(`{"roots": ["system"]}`), 0o600)
	os.WriteFile(filepath.Join(authz, "authz.rego"), []byte(`package system.authz

default allow := false

allow if input.identity == "`+token+`"

allow if input.path == ["health"]
`), 0o600)
	out := compiled(t, seedProject)
	srv := startOPA(t, nil, "--authentication=token", "--authorization=basic", "--bundle", writeBundle(t, dir, out), authz)
	ctx := context.Background()
	e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.Decide(ctx, "exec.path.gh", config.Loop); err != nil || d.Decision != config.Allow {
		t.Fatalf("with the token: %+v %v", d, err)
	}
	for _, tok := range []string{"", "wrong-" + token, token + "x"} {
		_, err := NewRemote(ctx, RemoteOptions{URL: srv.URL, Token: tok})
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "401") {
			t.Fatalf("token %q: %v", tok, err)
		}
		if strings.Contains(err.Error(), token) {
			t.Fatalf("the error shows the token: %v", err)
		}
		t.Logf("token %q: %v", tok, err)
	}
}

// TestRemoteStopped: an opa that stops answering (SIGSTOP) fails a
// decision within its budget; once it runs again (SIGCONT) it answers; a
// killed one refuses the connection. None of them is an allow.
func TestRemoteStopped(t *testing.T) {
	out := compiled(t, seedProject)
	srv := startOPA(t, nil, "--bundle", writeBundle(t, t.TempDir(), out))
	ctx := context.Background()
	const budget = 300 * time.Millisecond
	e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Decide(ctx, "exec.path.gh", config.Loop); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d, err := e.Decide(ctx, "exec.path.gh", config.Loop)
	took := time.Since(start)
	want := fmt.Sprintf("opa at %s did not answer within 300ms", srv.URL)
	if d != nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), want) {
		t.Fatalf("stopped: %+v %v", d, err)
	}
	if took > budget+5*time.Second {
		t.Fatalf("stopped: took %s, the budget is %s", took, budget)
	}
	if _, err := e.Secrets(ctx, Target{Action: "exec.path.gh"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("secrets while stopped: %v", err)
	}
	t.Logf("stopped, after %s: %v", took, err)
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	if d, err := e.Decide(ctx, "exec.path.gh", config.Loop); err != nil || d.Decision != config.Allow {
		t.Fatalf("continued: %+v %v", d, err)
	}
	srv.Cmd.Process.Kill()
	srv.Cmd.Wait()
	d, err = e.Decide(ctx, "exec.path.gh", config.Loop)
	if d != nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "refused the connection") {
		t.Fatalf("killed: %+v %v", d, err)
	}
	t.Logf("killed: %v", err)
	if _, err := NewRemote(ctx, RemoteOptions{URL: srv.URL}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("NewRemote of a killed server: %v", err)
	}
}

// TestRemoteBadServers: a server on 127.0.0.1 that answers garbage, 500,
// a wrong-shaped result, no result, a huge body or a redirect is refused
// with ErrUnavailable, at construction or at a decision.
func TestRemoteBadServers(t *testing.T) {
	out := compiled(t, seedProject)
	local, err := FromOutput(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	metaJSON, err := json.Marshal(map[string]any{"result": local.Meta(), "provenance": map[string]any{"bundles": map[string]any{"b": map[string]any{"revision": "r1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	good, err := local.Decide(context.Background(), "exec.path.gh", config.Loop)
	if err != nil {
		t.Fatal(err)
	}
	goodJSON, _ := json.Marshal(good)
	huge := `{"result": "` + strings.Repeat("x", maxAnswer+10) + `"}`
	var wrongLayer Decision = *good
	wrongLayer.Layers = append([]Layer{}, good.Layers...)
	wrongLayer.Layers[0].Name = "intruder"
	wrongLayerJSON, _ := json.Marshal(&wrongLayer)
	answers := map[string]struct {
		status int
		body   string
		want   string
	}{
		"garbage":      {200, "not json {", "not OPA's JSON"},
		"500":          {500, `{"code": "internal_error", "message": "boom"}`, "500 Internal Server Error: internal_error: boom"},
		"html 500":     {500, `<html>oops</html>`, "500 Internal Server Error"},
		"undefined":    {200, `{}`, "chock's bundle is not loaded"},
		"wrong shape":  {200, `{"result": {"allow": true}}`, "not chock's"},
		"a string":     {200, `{"result": "allow"}`, "not chock's"},
		"allow":        {200, `{"result": true}`, "not chock's"},
		"wrong action": {200, strings.Replace(string(goodJSON), `"exec.path.gh"`, `"exec.path.other"`, 1), "answers about"},
		"wrong layer":  {200, `{"result": ` + string(wrongLayerJSON) + `, "provenance": {"bundles": {"b": {"revision": "r1"}}}}`, "where the bundle records"},
		"two values":   {200, `{"result": ` + string(goodJSON) + `} {}`, "more than one JSON value"},
		"huge":         {200, huge, "answered more than"},
		"redirect":     {302, ``, "redirect"},
	}
	for name, a := range answers {
		t.Run(name, func(t *testing.T) {
			var asked int
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet && r.URL.Path == "/v1/data/chock/meta" {
					w.Write(metaJSON)
					return
				}
				mu.Lock()
				asked++
				mu.Unlock()
				if a.status == 302 {
					http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
					return
				}
				if a.status != 200 {
					w.WriteHeader(a.status)
				}
				body := a.body
				if strings.HasPrefix(body, `{"action"`) {
					body = `{"result": ` + body + `}`
				}
				w.Write([]byte(body))
			}))
			defer srv.Close()
			ctx := context.Background()
			e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL, Token: "tok-en-1234"})
			if err != nil {
				t.Fatal(err)
			}
			d, err := e.Decide(ctx, "exec.path.gh", config.Loop)
			if d != nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), a.want) {
				t.Fatalf("got %+v, %v; want an error saying %q", d, err, a.want)
			}
			if strings.Contains(err.Error(), "tok-en-1234") {
				t.Fatalf("the token is in %v", err)
			}
			t.Log(err)
		})
	}
	// A server that echoes the token back has it removed from the error.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(map[string]string{"code": "x", "message": "you sent " + r.Header.Get("Authorization")})
	}))
	_, err = NewRemote(context.Background(), RemoteOptions{URL: echo.URL, Token: "echoed-token-42"})
	echo.Close()
	if !errors.Is(err, ErrUnavailable) || strings.Contains(err.Error(), "echoed-token-42") || !strings.Contains(err.Error(), "403") {
		t.Fatalf("echoed token: %v", err)
	}
	t.Logf("echo: %v", err)
	// Meta that is not chock's, or no meta at all, refuses the engine.
	for name, body := range map[string]string{"no meta": `{}`, "not chock's": `{"result": {"format": 1}}`, "garbage": `<html>`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
		_, err := NewRemote(context.Background(), RemoteOptions{URL: srv.URL})
		srv.Close()
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

// TestRemoteURLRule: https anywhere, http to loopback only, no userinfo;
// a refused URL is refused before any connection.
func TestRemoteURLRule(t *testing.T) {
	for _, u := range []string{
		"http://10.0.0.1:8181", "http://opa.example.com", "http://localhost.example.com:8181",
		"http://0.0.0.0:8181", "ftp://127.0.0.1", "127.0.0.1:8181", "https://user:pw@opa.example.com",
		"http://user@127.0.0.1:8181", "https://opa.example.com/?x=1", "https://", "http://[fe80::1%25lo]:8181",
		"https://user:pw@opa.example.com/%zz", "http://[::ffff:10.0.0.1]:8181", "http://127.0.0.1.example.com",
	} {
		_, err := NewRemote(context.Background(), RemoteOptions{URL: u, Budget: time.Millisecond})
		if !errors.Is(err, ErrRemoteURL) || errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v", u, err)
		}
		if strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: the password is in %v", u, err)
		}
	}
	// http:// connects to loopback only, whatever a name resolved to.
	for addr, ok := range map[string]bool{"127.0.0.1:80": true, "[::1]:80": true, "127.3.0.1:80": true, "10.0.0.1:80": false, "[::ffff:10.0.0.1]:80": false, "[2001:db8::1]:80": false, "x": false} {
		if err := loopbackOnly("tcp", addr, nil); (err == nil) != ok {
			t.Errorf("dial %s: %v", addr, err)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8181", "http://localhost:8181/", "http://[::1]:8181", "https://opa.example.com", "https://10.0.0.1:8181/opa/"} {
		if _, err := CheckRemoteURL(u); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}

// testCert makes a CA and a server certificate for 127.0.0.1 signed by
// it, as PEM.
func testCert(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "chock test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	caCert, _ := x509.ParseCertificate(caDER)
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// TestRemoteTLS: opa run serving TLS with a certificate of a test CA is
// asked with that CA; without it the certificate is refused.
func TestRemoteTLS(t *testing.T) {
	caPEM, certPEM, keyPEM := testCert(t)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certPath, certPEM, 0o600)
	os.WriteFile(keyPath, keyPEM, 0o600)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	out := compiled(t, seedProject, seedOrg)
	srv := startOPA(t, client, "--tls-cert-file", certPath, "--tls-private-key-file", keyPath, "--bundle", writeBundle(t, dir, out))
	ctx := context.Background()
	e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL, CA: caPEM, Token: "tls-token-abc"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(ctx, "exec.path.gh", config.Loop)
	if err != nil || d.Decision != config.Deny || d.CappedBy == nil || *d.CappedBy != "acme" {
		t.Fatalf("over TLS: %+v %v", d, err)
	}
	_, err = NewRemote(ctx, RemoteOptions{URL: srv.URL, Token: "tls-token-abc"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "--opa-ca FILE") || strings.Contains(err.Error(), "tls-token-abc") {
		t.Fatalf("without the CA: %v", err)
	}
	t.Logf("without the CA: %v", err)
	if _, err := NewRemote(ctx, RemoteOptions{URL: srv.URL, CA: []byte("not pem")}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("a CA that is not PEM: %v", err)
	}
	// The same server over plain http:// to loopback is allowed by the
	// rule, and fails as OPA refuses it.
	if _, err := NewRemote(ctx, RemoteOptions{URL: "http://" + srv.Addr}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("http:// to a TLS server: %v", err)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestRemoteDecisionID: an opa that keeps decision logs gives each
// decision a decision_id, which the decision carries.
func TestRemoteDecisionID(t *testing.T) {
	out := compiled(t, seedProject)
	srv := startOPA(t, nil, "--set", "decision_logs.console=true", "--bundle", writeBundle(t, t.TempDir(), out))
	ctx := context.Background()
	e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for range 3 {
		d, err := e.Decide(ctx, "exec.path.gh", config.Loop)
		if err != nil {
			t.Fatal(err)
		}
		if !uuidRE.MatchString(d.ID) || ids[d.ID] {
			t.Fatalf("decision_id %q (seen %v)", d.ID, ids)
		}
		ids[d.ID] = true
	}
}

// TestRemoteSwap: when opa run --watch loads a new bundle, the next
// decision comes from it, with its revision, and the meta is read again
// when the new policy's layers differ.
func TestRemoteSwap(t *testing.T) {
	dir := t.TempDir()
	first := compiled(t, seedProject)
	path := writeBundle(t, dir, first)
	srv := startOPA(t, nil, "--watch", "--bundle", path)
	ctx := context.Background()
	e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := e.Decide(ctx, "exec.path.gh", config.Loop); err != nil || d.Decision != config.Allow || d.Revision != first.Revision {
		t.Fatalf("first: %+v %v", d, err)
	}
	second := compiled(t, seedProject, seedOrg)
	tmp := filepath.Join(t.TempDir(), "next.tar.gz")
	var buf bytes.Buffer
	if err := second.WriteBundle(&buf, nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(tmp, buf.Bytes(), 0o600)
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// Nothing tells of another process taking the new bundle in but its
	// answers: it is asked until it answers with the new revision.
	var d *Decision
	if !waitfor.PollWithin(20*time.Second, func() bool {
		d, err = e.Decide(ctx, "exec.path.gh", config.Loop)
		return err == nil && d.Revision == second.Revision
	}) {
		t.Fatalf("the new bundle was not picked up: %+v %v\n%s", d, err, srv.Output.String())
	}
	if d.Decision != config.Deny || d.CappedBy == nil || *d.CappedBy != "acme" || len(d.Layers) != 2 {
		t.Fatalf("second: %+v", d)
	}
	if e.Revision() != second.Revision || len(e.Meta().Layers) != 2 {
		t.Fatalf("after the swap: revision %q, %d layers", e.Revision(), len(e.Meta().Layers))
	}
}

// TestRemoteForgedAnswers: a remote answer its own layers do not make
// (an allow over a layer that denies, a start ask not read as deny) is
// refused; so is one dripped out slower than the budget.
func TestRemoteForgedAnswers(t *testing.T) {
	ctx := context.Background()
	local := embedded(t, compiled(t, seedProject))
	metaJSON, _ := json.Marshal(map[string]any{"result": local.Meta()})
	forge := func(action string, phase config.Phase, from, to string) string {
		d, err := local.Decide(ctx, action, phase)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(d)
		f := strings.Replace(string(j), from, to, 1)
		if f == string(j) {
			t.Fatalf("nothing to forge in %s", j)
		}
		return f
	}
	answers := map[string]string{
		"exec.path.curl":               forge("exec.path.curl", config.Loop, `"decision":"deny","layers"`, `"decision":"allow","layers"`),
		"mcp.probe.host.com.probe.mcp": forge("mcp.probe.host.com.probe.mcp", config.Start, `"decision":"deny","layers"`, `"decision":"ask","layers"`),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Write(metaJSON)
			return
		}
		var body struct{ Input struct{ Action string } }
		json.NewDecoder(r.Body).Decode(&body)
		if a, ok := answers[body.Input.Action]; ok {
			w.Write([]byte(`{"result": ` + a + `}`))
			return
		}
		w.Write([]byte(`{"result": `))
		for {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
				w.Write([]byte(" "))
				w.(http.Flusher).Flush()
			}
		}
	}))
	defer srv.Close()
	e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL, Budget: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		action string
		phase  config.Phase
	}{{"exec.path.curl", config.Loop}, {"mcp.probe.host.com.probe.mcp", config.Start}} {
		if d, err := e.Decide(ctx, c.action, c.phase); !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrContract) {
			t.Errorf("%s: forged answer taken: %+v %v", c.action, d, err)
		}
	}
	t0 := time.Now()
	if _, err := e.Decide(ctx, "exec.path.gh", config.Loop); !errors.Is(err, ErrUnavailable) || time.Since(t0) > 5*time.Second {
		t.Errorf("a dripped answer: %v after %s", err, time.Since(t0))
	}
}

// TestRemoteBatch: DecideManyUnlogged through stock opa run --server
// decides as the embedded engine, in one request per batchLimit
// actions. A bundle without data.chock.decisions (an older chock's), and
// an OPA whose authorization policy refuses that path, are asked one
// action at a time with the same answers: the older bundle is asked for a
// batch once while it is loaded, the refusing OPA once in batchPause.
func TestRemoteBatch(t *testing.T) {
	ctx := context.Background()
	out := compiled(t, seedProject, seedOrg)
	local, err := FromOutput(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	acts := remoteActions(2*batchLimit+100, 3)
	acts = append(acts, acts[0], acts[1]) // repeated actions are answered each time
	want := map[config.Phase][]Decision{}
	for _, ph := range []config.Phase{config.Start, config.Loop} {
		for _, a := range acts {
			d, err := local.Decide(ctx, a, ph)
			if err != nil {
				t.Fatal(err)
			}
			want[ph] = append(want[ph], stripped(d))
		}
	}
	agree := func(t *testing.T, e *Engine) {
		t.Helper()
		for _, ph := range []config.Phase{config.Start, config.Loop} {
			ds, err := e.DecideManyUnlogged(ctx, acts, ph)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != len(acts) {
				t.Fatalf("%d answers to %d actions", len(ds), len(acts))
			}
			for i, d := range ds {
				if g := stripped(d); !reflect.DeepEqual(g, want[ph][i]) {
					t.Fatalf("%q at %s:\n remote %+v\n local  %+v", acts[i], ph, g, want[ph][i])
				}
				if d.Revision == "" {
					t.Fatalf("%q: no revision", acts[i])
				}
			}
		}
	}
	dir := t.TempDir()
	path := writeBundle(t, dir, out)

	t.Run("batch", func(t *testing.T) {
		p := startOPA(t, nil, "--bundle", path).Counted(t)
		e, err := NewRemote(ctx, RemoteOptions{URL: p.URL})
		if err != nil {
			t.Fatal(err)
		}
		p.Take()
		agree(t, e)
		if n := p.Take(); n["/v1/data/chock/decisions"] != 6 || n["/v1/data/chock/decision"] != 0 {
			t.Fatalf("requests: %v, want 3 batches a phase", n)
		}
	})

	t.Run("older bundle", func(t *testing.T) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		old := bundletest.Edit(t, b, compile.MainModule, func(m []byte) []byte {
			return bytes.Replace(m, []byte("\ndecisions := "), []byte("\nnot_decisions := "), 1)
		})
		oldPath := filepath.Join(t.TempDir(), "old.tar.gz")
		os.WriteFile(oldPath, old, 0o600)
		p := startOPA(t, nil, "--bundle", oldPath).Counted(t)
		e, err := NewRemote(ctx, RemoteOptions{URL: p.URL})
		if err != nil {
			t.Fatal(err)
		}
		p.Take()
		agree(t, e)
		if n := p.Take(); n["/v1/data/chock/decisions"] != 1 || n["/v1/data/chock/decision"] != 2*len(acts) {
			t.Fatalf("requests: %v", n)
		}
	})

	t.Run("authorization refuses the batch", func(t *testing.T) {
		authz := filepath.Join(t.TempDir(), "authz")
		os.MkdirAll(authz, 0o700)
		os.WriteFile(filepath.Join(authz, ".manifest"), []byte(`{"roots": ["system"]}`), 0o600)
		os.WriteFile(filepath.Join(authz, "authz.rego"), []byte(`package system.authz

default allow := false

allow if input.path == ["health"]

allow if {
	input.path[0] == "v1"
	input.path[1] == "data"
	input.path != ["v1", "data", "chock", "decisions"]
}
`), 0o600)
		p := startOPA(t, nil, "--authorization=basic", "--bundle", path, authz).Counted(t)
		e, err := NewRemote(ctx, RemoteOptions{URL: p.URL})
		if err != nil {
			t.Fatal(err)
		}
		p.Take()
		agree(t, e)
		if n := p.Take(); n["/v1/data/chock/decisions"] != 1 || n["/v1/data/chock/decision"] != 2*len(acts) {
			t.Fatalf("requests: %v", n)
		}
	})
}

// TestRemoteForgedBatch: a batch answer that leaves an action out, is not
// an object, answers about another action, or forges one decision is
// refused whole, as no policy could decide.
func TestRemoteForgedBatch(t *testing.T) {
	ctx := context.Background()
	local := embedded(t, compiled(t, seedProject))
	metaJSON, _ := json.Marshal(map[string]any{"result": local.Meta()})
	acts := []string{"exec.path.gh", "exec.path.curl"}
	answer := map[string]any{}
	for _, a := range acts {
		d, err := local.Decide(ctx, a, config.Loop)
		if err != nil {
			t.Fatal(err)
		}
		answer[a] = d
	}
	good, _ := json.Marshal(answer)
	cases := map[string]struct{ body, want string }{
		"one left out":  {strings.Replace(string(good), `"exec.path.curl":`, `"exec.path.curl2":`, 1), `asked about "exec.path.curl"`},
		"not an object": {`[]`, "is not an object"},
		"forged allow":  {strings.Replace(string(good), `"decision":"deny","layers"`, `"decision":"allow","layers"`, 1), `deciding "exec.path.curl"`},
		"other action":  {strings.Replace(string(good), `"action":"exec.path.gh"`, `"action":"exec.path.sh"`, 1), `asked about "exec.path.gh"`},
		"other phase":   {strings.Replace(string(good), `"phase":"loop"`, `"phase":"start"`, 1), "asked at loop, it answers at start"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if !strings.Contains(c.body, "exec.path") && name != "not an object" || c.body == string(good) {
				t.Fatal("the case forges nothing")
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					w.Write(metaJSON)
					return
				}
				w.Write([]byte(`{"result": ` + c.body + `}`))
			}))
			defer srv.Close()
			e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			ds, err := e.DecideManyUnlogged(ctx, acts, config.Loop)
			if ds != nil || !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrContract) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%+v %v", ds, err)
			}
			t.Log(err)
		})
	}
}

// TestRemoteReplicasAtTwoRevisions: behind a load balancer whose two
// replicas hold different revisions, answers flip between them; each is
// checked against its own revision's meta, read once per revision, not
// once per flip.
func TestRemoteReplicasAtTwoRevisions(t *testing.T) {
	ctx := context.Background()
	outs := []*compile.Output{compiled(t, seedProject), compiled(t, seedProject, seedOrg)}
	var targets []*url.URL
	locals := map[string]*Engine{}
	for _, out := range outs {
		u, err := url.Parse(startOPA(t, nil, "--bundle", writeBundle(t, t.TempDir(), out)).URL)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, u)
		if locals[out.Revision], err = FromOutput(ctx, out); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	next, metaReads := 0, 0
	lb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		to := targets[next%2]
		next++
		if strings.Contains(r.URL.Path, "/meta") {
			metaReads++
		}
		mu.Unlock()
		httputil.NewSingleHostReverseProxy(to).ServeHTTP(w, r)
	}))
	defer lb.Close()
	e, err := NewRemote(ctx, RemoteOptions{URL: lb.URL})
	if err != nil {
		t.Fatal(err)
	}
	revs := map[string]int{}
	for _, a := range remoteActions(40, 7) {
		got, err := e.Decide(ctx, a, config.Loop)
		if err != nil {
			t.Fatalf("%q: %v", a, err)
		}
		want, err := locals[got.Revision].Decide(ctx, a, config.Loop)
		if err != nil {
			t.Fatal(err)
		}
		same(t, got, want, "%q at %s", a, got.Revision)
		revs[got.Revision]++
	}
	mu.Lock()
	defer mu.Unlock()
	// One meta read at the start; one or two for the second revision (a
	// read can reach the other replica, and is made again); none per flip.
	if len(revs) != 2 || metaReads > 3 {
		t.Fatalf("answers by revision %v, %d meta reads", revs, metaReads)
	}
	t.Logf("answers by revision %v, %d meta reads", revs, metaReads)
}

// fakeOPA is an OPA's data API written for a test: meta from local, and
// each POST answered by answer (nil: as local decides).
func fakeOPA(t *testing.T, local *Engine, rev string, answer func(path string, in map[string]any) (int, string)) (*httptest.Server, *sync.Map) {
	t.Helper()
	var asked sync.Map // path → *atomic.Int32
	prov := `"provenance": {"bundles": {"b": {"revision": "` + rev + `"}}}`
	metaJSON, _ := json.Marshal(local.Meta())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := asked.LoadOrStore(r.URL.Path, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		if r.Method == http.MethodGet {
			w.Write([]byte(`{"result": ` + string(metaJSON) + `, ` + prov + `}`))
			return
		}
		var body struct{ Input map[string]any }
		json.NewDecoder(r.Body).Decode(&body)
		if answer != nil {
			if code, text := answer(r.URL.Path, body.Input); code != 0 {
				w.WriteHeader(code)
				w.Write([]byte(text))
				return
			}
		}
		ph := config.Loop
		if body.Input["phase"] == "start" {
			ph = config.Start
		}
		var result any
		if r.URL.Path == "/v1/data/chock/decisions" {
			all := map[string]any{}
			for _, a := range body.Input["actions"].([]any) {
				d, _ := local.Decide(r.Context(), a.(string), ph)
				all[a.(string)] = d
			}
			result = all
		} else {
			result, _ = local.Decide(r.Context(), body.Input["action"].(string), ph)
		}
		b, _ := json.Marshal(result)
		w.Write([]byte(`{"result": ` + string(b) + `, ` + prov + `}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

func count(m *sync.Map, path string) int {
	n, ok := m.Load(path)
	if !ok {
		return 0
	}
	return int(n.(*atomic.Int32).Load())
}

// TestRemoteBatchAfterARefusal: a 401 on data.chock.decisions (an OPA
// restarting, a token its policy keeps from that path) has the actions
// asked one at a time, with the same answers, for batchPause; then a batch
// is asked for again. A token refused on every path is refused, named as
// refused and never shown.
func TestRemoteBatchAfterARefusal(t *testing.T) {
	ctx := context.Background()
	local := embedded(t, compiled(t, seedProject))
	const token = "tok-3x4mple-secret"
	var refuseAll atomic.Bool
	var refusals atomic.Int32
	refusals.Store(1)
	srv, asked := fakeOPA(t, local, "r1", func(path string, _ map[string]any) (int, string) {
		if refuseAll.Load() || path == "/v1/data/chock/decisions" && refusals.Add(-1) >= 0 {
			return http.StatusUnauthorized, `{"code": "unauthorized", "message": "request rejected by administrative policy"}`
		}
		return 0, ""
	})
	e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	acts := []string{"exec.path.gh", "exec.path.curl", "exec.path.git"}
	for range 2 {
		ds, err := e.DecideManyUnlogged(ctx, acts, config.Loop)
		if err != nil || len(ds) != 3 || ds[0].Decision != config.Allow || ds[1].Decision != config.Deny {
			t.Fatalf("%+v %v", ds, err)
		}
	}
	if b, one := count(asked, "/v1/data/chock/decisions"), count(asked, "/v1/data/chock/decision"); b != 1 || one != 6 {
		t.Fatalf("%d batches, %d single requests; want 1 (refused) and 6", b, one)
	}
	r := e.remote.(*remoteOPA)
	r.mu.Lock()
	r.noBatch.until = time.Now().Add(-time.Second) // batchPause is over
	r.mu.Unlock()
	if _, err := e.DecideManyUnlogged(ctx, acts, config.Loop); err != nil || count(asked, "/v1/data/chock/decisions") != 2 || count(asked, "/v1/data/chock/decision") != 6 {
		t.Fatalf("after the pause: %v, %d batches", err, count(asked, "/v1/data/chock/decisions"))
	}
	refuseAll.Store(true)
	_, err = e.DecideManyUnlogged(ctx, acts, config.Loop)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "the token was refused") || strings.Contains(err.Error(), token) {
		t.Fatalf("a refused token: %v", err)
	}
	if ds, err := e.DecideManyUnlogged(ctx, nil, config.Loop); err != nil || len(ds) != 0 {
		t.Fatalf("no actions: %v %v", ds, err)
	}
}

// TestRemoteNeverLabelsAnotherRevision: an answer from revision B checked
// while every meta read comes from revision C (a policy swapped again
// during the read, replicas at other revisions) is refused, never checked
// against C's meta or labelled C.
func TestRemoteNeverLabelsAnotherRevision(t *testing.T) {
	ctx := context.Background()
	local := embedded(t, compiled(t, seedProject))
	metaJSON, _ := json.Marshal(local.Meta())
	var metaReads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := "rev-b"
		if r.Method == http.MethodGet {
			rev = "rev-c"
			if metaReads.Add(1) == 1 {
				rev = "rev-a"
			}
			w.Write([]byte(`{"result": ` + string(metaJSON) + `, "provenance": {"revision": "` + rev + `"}}`))
			return
		}
		d, _ := local.Decide(r.Context(), "exec.path.gh", config.Loop)
		b, _ := json.Marshal(d)
		if r.URL.Path == "/v1/data/chock/decisions" {
			b = []byte(`{"exec.path.gh": ` + string(b) + `, "exec.path.gh2": ` + strings.Replace(string(b), `"exec.path.gh"`, `"exec.path.gh2"`, 1) + `}`)
		}
		w.Write([]byte(`{"result": ` + string(b) + `, "provenance": {"revision": "` + rev + `"}}`))
	}))
	defer srv.Close()
	e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.Decide(ctx, "exec.path.gh", config.Loop)
	if d != nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "answered from revision rev-b, and its meta came from rev-c") {
		t.Fatalf("one: %+v %v", d, err)
	}
	ds, err := e.DecideManyUnlogged(ctx, []string{"exec.path.gh", "exec.path.gh2"}, config.Loop)
	if ds != nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "rev-b") {
		t.Fatalf("a batch: %+v %v", ds, err)
	}
	t.Log(err)
}

// TestRemoteBatchTooLarge: a batch whose answer is over maxAnswer is
// asked again in halves, down to one action a request, with the same
// answers.
func TestRemoteBatchTooLarge(t *testing.T) {
	ctx := context.Background()
	local := embedded(t, compiled(t, seedProject))
	srv, asked := fakeOPA(t, local, "r1", func(path string, in map[string]any) (int, string) {
		if acts, _ := in["actions"].([]any); len(acts) > 2 {
			return 200, `{"result": "` + strings.Repeat("x", maxAnswer) + `"}`
		}
		return 0, ""
	})
	e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	acts := []string{"exec.path.gh", "exec.path.curl", "exec.path.git", "exec.path.ls", "exec.path.sh"}
	ds, err := e.DecideManyUnlogged(ctx, acts, config.Start)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range acts {
		want, _ := local.Decide(ctx, a, config.Start)
		same(t, ds[i], want, "%q", a)
	}
	// 5 → 2 (answered) + 3 → 1 (asked alone) + 2 (answered).
	if b, one := count(asked, "/v1/data/chock/decisions"), count(asked, "/v1/data/chock/decision"); b != 4 || one != 1 {
		t.Fatalf("%d batches, %d single requests", b, one)
	}
}

// TestRemoteBatchBehindAProxy: a proxy in front of OPA that lets through
// only the paths it knows (404 or 405 for data.chock.decisions) has the
// actions asked one at a time, as before the batch existed.
func TestRemoteBatchBehindAProxy(t *testing.T) {
	ctx := context.Background()
	local := embedded(t, compiled(t, seedProject))
	for _, code := range []int{http.StatusNotFound, http.StatusMethodNotAllowed} {
		srv, asked := fakeOPA(t, local, "r1", func(path string, _ map[string]any) (int, string) {
			if path == "/v1/data/chock/decisions" {
				return code, "<html>no</html>"
			}
			return 0, ""
		})
		e, err := NewRemote(ctx, RemoteOptions{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		ds, err := e.DecideManyUnlogged(ctx, []string{"exec.path.gh", "exec.path.curl"}, config.Loop)
		if err != nil || len(ds) != 2 || ds[0].Decision != config.Allow || ds[1].Decision != config.Deny {
			t.Fatalf("%d: %+v %v", code, ds, err)
		}
		if b, one := count(asked, "/v1/data/chock/decisions"), count(asked, "/v1/data/chock/decision"); b != 1 || one != 2 {
			t.Fatalf("%d: %d batches, %d single requests", code, b, one)
		}
	}
}

// TestRemoteDecidesArgsAsEmbedded: a stock OPA serving a bundle with .args
// rules decides a call with its arguments as the embedded engine does,
// the deciding rule's record (with its .args) held to the bundle's meta.
func TestRemoteDecidesArgsAsEmbedded(t *testing.T) {
	local, remote, _ := localAndRemote(t, compiled(t, argsPolicy, argsOrg))
	ctx := context.Background()
	for _, args := range [][]string{nil, {}, {"push"}, {"-C", "x", "push"}, {"push", "--dry-run"}, {"push", "-f", "--dry-run"}, {"reset", "--merge"}, {action.Unknown}} {
		want, err := local.DecideArgs(ctx, "exec.path.git", args, config.Loop)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.DecideArgs(ctx, "exec.path.git", args, config.Loop)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if got.Decision != want.Decision || got.Decider().RuleText() != want.Decider().RuleText() {
			t.Errorf("%q: remote %s by %s, embedded %s by %s", args, got.Decision, got.Decider().RuleText(), want.Decision, want.Decider().RuleText())
		}
	}
}

// localAndRemote are an engine of out and one asking a stock opa run
// --server that serves out's bundle.
func localAndRemote(t *testing.T, out *compile.Output) (*Engine, *Engine, *stockopa.Server) {
	t.Helper()
	local, err := FromOutput(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	srv := startOPA(t, nil, "--bundle", writeBundle(t, t.TempDir(), out))
	remote, err := NewRemote(context.Background(), RemoteOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return local, remote, srv
}
