package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/internal/bundletest"
	"github.com/chockhq/chock/internal/opaservice"
	"github.com/open-policy-agent/opa/v1/util"
)

const project = `.{
    .policy = .{
        .default = .deny,
        .allow = .{ "exec.path.gh", "secret.use.GITHUB_TOKEN" },
        .ask = .{"exec.path.git"},
        .deny = .{"exec.path.curl"},
    },
    .secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" } },
}`

// compiled compiles a project policy.
func compiled(t *testing.T, src string) *compile.Output {
	t.Helper()
	c, ds := config.Load("chock.zon", []byte(src))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	out, err := compile.Compile(compile.Input{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func bundleBytes(t *testing.T, out *compile.Output, key *compile.Key) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := out.WriteBundle(&b, key); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// rsaKeys is a new RSA key pair in PEM (bundletest.RSAKeys).
func rsaKeys(t *testing.T) (priv, pub []byte) { return bundletest.RSAKeys(t) }

func newService(t *testing.T) *opaservice.Service {
	s := opaservice.New()
	t.Cleanup(s.Close)
	return s
}

// start starts a fleet on the service s's configuration cfg. Whatever
// the fleet says on log, and each swap, wakes whoever waits on s
// (eventually), as each request s serves does.
func start(t *testing.T, s *opaservice.Service, cfg []byte, log io.Writer) *Fleet {
	t.Helper()
	f, err := Start(context.Background(), Options{Config: cfg, Name: "opa.yaml", Wait: 10 * time.Second, Log: notifying{log, s},
		OnSwap: func(string) { s.Notify() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Stop(context.Background()) })
	return f
}

// syncBuffer is a writer safe for OPA's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// notifying is a log that notifies s after each write.
type notifying struct {
	w io.Writer
	s *opaservice.Service
}

func (n notifying) Write(p []byte) (int, error) {
	defer n.s.Notify()
	return n.w.Write(p)
}

// eventually waits up to 20 s for cond, checking it after each request
// s serves and each thing a fleet started on it says or swaps (start).
func eventually(t *testing.T, s *opaservice.Service, what string, cond func() bool) {
	t.Helper()
	s.Until(t, 20*time.Second, what, cond)
}

var actions = []string{"exec.path.gh", "exec.path.git", "exec.path.curl", "exec.path.ls", "secret.use.GITHUB_TOKEN", "mcp.x.tool.y"}

// TestDecidesAsEmbedded: a policy from a bundle service, signature
// verified, decides exactly as the same policy embedded, and offers the
// same secrets.
func TestDecidesAsEmbedded(t *testing.T) {
	priv, pub := rsaKeys(t)
	out := compiled(t, project)
	s := newService(t)
	s.Serve(bundleBytes(t, out, &compile.Key{Material: priv, Alg: "RS256", ID: "k1"}))
	f := start(t, s, s.Config(pub, true), io.Discard)
	want, err := eval.FromOutput(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, a := range actions {
		for _, ph := range []config.Phase{config.Start, config.Loop} {
			got, err := f.Engine().Decide(ctx, a, ph)
			if err != nil {
				t.Fatal(err)
			}
			exp, _ := want.Decide(ctx, a, ph)
			if got.ID == "" || got.Revision != out.Revision {
				t.Errorf("%s: decision_id %q, revision %q (want %q)", a, got.ID, got.Revision, out.Revision)
			}
			got.ID, got.Revision, exp.Revision = "", "", ""
			gj, _ := json.Marshal(got)
			ej, _ := json.Marshal(exp)
			if !bytes.Equal(gj, ej) {
				t.Errorf("%s at %s:\n got %s\nwant %s", a, ph, gj, ej)
			}
		}
	}
	sec, err := f.Engine().Secrets(ctx, eval.Target{Action: "exec.path.gh"})
	if err != nil || len(sec) != 1 || sec[0].Name != "GITHUB_TOKEN" {
		t.Errorf("secrets: %v, %v", sec, err)
	}
}

// TestSwapAndDecisionLogs: a new bundle on the service reaches a running
// engine between two decisions; a pinned view keeps the old one; every
// decision arrives at the decision-log service in OPA's format, with the
// rule and its span, and a tampered bundle is refused and the old one
// kept.
func TestSwapAndDecisionLogs(t *testing.T) {
	priv, pub := rsaKeys(t)
	key := &compile.Key{Material: priv, Alg: "RS256", ID: "k1"}
	v1 := compiled(t, project)
	v2 := compiled(t, strings.Replace(project, `.ask = .{"exec.path.git"}`, `.ask = .{"exec.path.git", "exec.path.ls"}`, 1))
	s := newService(t)
	s.Serve(bundleBytes(t, v1, key))
	log := &syncBuffer{}
	f := start(t, s, s.Config(pub, false), log)
	ctx := context.Background()
	e := f.Engine()
	d, err := e.Decide(ctx, "exec.path.ls", config.Loop)
	if err != nil || d.Decision != config.Deny {
		t.Fatalf("v1: %v %v", d, err)
	}
	pinned := e.Pinned()

	s.Serve(bundleBytes(t, v2, key))
	eventually(t, s, "v2 swapped in", func() bool { return e.Revision() == v2.Revision })
	d, err = e.Decide(ctx, "exec.path.ls", config.Loop)
	if err != nil || d.Decision != config.Ask || d.Revision != v2.Revision {
		t.Fatalf("v2: %+v %v", d, err)
	}
	if d, _ := pinned.Decide(ctx, "exec.path.ls", config.Loop); d.Decision != config.Deny || d.Revision != v1.Revision {
		t.Errorf("the pinned view decided %v under %s", d.Decision, d.Revision)
	}

	// Tampered: v1's bytes with v2's signature file would do; simplest is
	// v2's bundle with its policy data edited after signing.
	tampered := tamper(t, bundleBytes(t, compiled(t, strings.Replace(project, `"exec.path.curl"`, `"exec.path.rm"`, 1)), key))
	s.Serve(tampered)
	eventually(t, s, "the tampered bundle refused", func() bool {
		return strings.Contains(log.String(), "digest mismatch") || strings.Contains(log.String(), "verif")
	})
	if e.Revision() != v2.Revision {
		t.Errorf("after a tampered bundle, revision %s, want v2's", e.Revision())
	}
	if d, err := e.Decide(ctx, "exec.path.ls", config.Loop); err != nil || d.Decision != config.Ask {
		t.Errorf("after a tampered bundle: %v %v", d, err)
	}

	eventually(t, s, "decision logs delivered", func() bool { return len(s.Events()) >= 3 })
	evs := s.Events()
	byID := map[string]map[string]any{}
	for _, ev := range evs {
		byID[fmt.Sprint(ev["decision_id"])] = ev
	}
	ev, ok := byID[d.ID]
	if !ok {
		t.Fatalf("decision %s not in the log: %v", d.ID, evs)
	}
	if ev["path"] != "chock/decision" {
		t.Errorf("path %v", ev["path"])
	}
	b, _ := json.Marshal(ev)
	for _, want := range []string{`"bundles":{"chock":{"revision":"` + v2.Revision + `"}}`, `"input":{"action":"exec.path.ls","phase":"loop"}`, `"pattern":"exec.path.ls"`, `"span":{"end":{"col":49,"line":5,"offset":159},"file":"chock.zon"`, `"decision":"ask"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("event lacks %s:\n%s", want, b)
		}
	}
}

// tamper changes one byte of data.json's content inside a gzip'd bundle,
// keeping its signature: the bundle plugin must refuse it.
func tamper(t *testing.T, b []byte) []byte {
	t.Helper()
	return bundletest.Edit(t, b, "data.json", func(body []byte) []byte {
		return bytes.Replace(body, []byte(`"exec.path.rm"`), []byte(`"exec.path.rn"`), 1)
	})
}

// TestFlushOnStop: pending decision logs (a reporting delay of minutes)
// reach the service when the fleet stops.
func TestFlushOnStop(t *testing.T) {
	s := newService(t)
	s.Serve(bundleBytes(t, compiled(t, project), nil))
	f, err := Start(context.Background(), Options{Config: s.Config(nil, true), Name: "opa.yaml", Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actions {
		if _, err := f.Engine().Decide(context.Background(), a, config.Loop); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(s.Events()); n != 0 {
		t.Fatalf("%d events before stop; the test needs them pending", n)
	}
	f.Stop(context.Background())
	if n := len(s.Events()); n != len(actions) {
		t.Errorf("%d events after stop, want %d", n, len(actions))
	}
}

// TestNotAChockBundle: a bundle service that serves a bundle that is not
// chock's gives no engine, and says why; one that answers nothing says
// so within the wait.
func TestNotAChockBundle(t *testing.T) {
	s := newService(t)
	s.Serve(regoBundle(t, "package other\n\nallow := true\n"))
	_, err := Start(context.Background(), Options{Config: s.Config(nil, true), Name: "opa.yaml", Wait: 3 * time.Second})
	if !errors.Is(err, ErrNoPolicy) || !strings.Contains(err.Error(), "not a bundle compiled by chock") {
		t.Errorf("got %v", err)
	}
	dead := newService(t)
	dead.Close()
	_, err = Start(context.Background(), Options{Config: dead.Config(nil, true), Name: "opa.yaml", Wait: 2 * time.Second})
	if !errors.Is(err, ErrNoPolicy) || !strings.Contains(err.Error(), "within 2s") {
		t.Errorf("got %v", err)
	}
}

// TestSwapToForeignBundleRefuses: a running engine whose service then
// serves a bundle that is not chock's refuses every decision, and takes
// a chock bundle again when one comes.
func TestSwapToForeignBundleRefuses(t *testing.T) {
	out := compiled(t, project)
	s := newService(t)
	s.Serve(bundleBytes(t, out, nil))
	f := start(t, s, s.Config(nil, true), io.Discard)
	e := f.Engine()
	s.Serve(regoBundle(t, "package other\n\nallow := true\n"))
	eventually(t, s, "decisions refused", func() bool {
		_, err := e.Decide(context.Background(), "exec.path.gh", config.Loop)
		return errors.Is(err, eval.ErrUnavailable)
	})
	s.Serve(bundleBytes(t, out, nil))
	eventually(t, s, "decisions again", func() bool {
		d, err := e.Decide(context.Background(), "exec.path.gh", config.Loop)
		return err == nil && d.Decision == config.Allow
	})
}

// TestHTTPSendRefused: a served bundle that names http.send anywhere
// (called, in an else, in a comprehension, as the value of a with that
// puts it in a function's place, inside a function that mocks another
// built-in) is not a policy chock decides with, even though OPA's own
// compiler took it; no request is ever sent, not even by the probe.
func TestHTTPSendRefused(t *testing.T) {
	for name, extra := range map[string]string{
		"call":              "\nleak := http.send({\"method\": \"get\", \"url\": \"URL\"})\n",
		"with-mock":         "\nleakf(x) := x\ncore contains 0 if {\n\tr := leakf({\"method\": \"get\", \"url\": \"URL\"}) with leakf as http.send\n\tr.status_code == 999\n}\n",
		"with-mock-builtin": "\ncore contains 0 if {\n\tr := object.get({\"method\": \"get\", \"url\": \"URL\"}, \"zzz\", 1) with object.get as leak3\n\tr == 999\n}\nleak3(a, b, c) := http.send(a)\n",
		"else":              "\ncore contains 0 if { leak2 }\nleak2 if { false } else if { http.send({\"method\": \"get\", \"url\": \"URL\"}).status_code == 999 }\n",
		"comprehension":     "\ncore contains 0 if { count([1 | http.send({\"method\": \"get\", \"url\": \"URL\"}).status_code == 999]) > 0 }\n",
	} {
		t.Run(name, func(t *testing.T) {
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
			defer srv.Close()
			b := bundletest.Edit(t, bundleBytes(t, compiled(t, project), nil), compile.MainModule, func(body []byte) []byte {
				return append(body, strings.ReplaceAll(extra, "URL", srv.URL+"/leak")...)
			})
			s := newService(t)
			s.Serve(b)
			f, err := Start(context.Background(), Options{Config: s.Config(nil, true), Name: "opa.yaml", Wait: 3 * time.Second})
			if err == nil {
				f.Stop(context.Background())
			}
			if err == nil || !strings.Contains(err.Error(), "http.send") || hits.Load() != 0 {
				t.Errorf("got %v; %d requests sent", err, hits.Load())
			}
		})
	}
}

// TestLinkedOrgBundles: a project bundle that links its org by name and
// the org's own bundle, two bundles from the service, decide as the
// combined bundle does; until the org's bundle arrives no decision is
// made, and the wait says which org is missing; the decision log names
// both bundles' revisions.
func TestLinkedOrgBundles(t *testing.T) {
	c, ds := config.Load("chock.zon", []byte(project))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	org, ds := config.LoadOrg("org.zon", []byte(`.{ .name = "acme", .policy = .{ .deny = .{"exec.path.gh"}, .ask = .{"exec.path.ls"} } }`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	combined, err := compile.Compile(compile.Input{Config: c, Orgs: []*config.Org{org}})
	if err != nil {
		t.Fatal(err)
	}
	linked, err := compile.Compile(compile.Input{Config: c, Orgs: []*config.Org{org}, LinkOrgs: true})
	if err != nil {
		t.Fatal(err)
	}
	orgOut, err := compile.Compile(compile.Input{Orgs: []*config.Org{org}})
	if err != nil {
		t.Fatal(err)
	}
	s := newService(t)
	s.ServeNamed("project", bundleBytes(t, linked, nil))
	cfg := s.Config(nil, false, "project", "acme")
	_, err = Start(context.Background(), Options{Config: cfg, Name: "opa.yaml", Wait: 3 * time.Second})
	if !errors.Is(err, ErrNoPolicy) || !strings.Contains(err.Error(), `"acme"`) {
		t.Fatalf("with the org's bundle missing: %v", err)
	}
	s.ServeNamed("acme", bundleBytes(t, orgOut, nil))
	f := start(t, s, cfg, io.Discard)
	want, err := eval.FromOutput(context.Background(), combined)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var last *eval.Decision
	for _, a := range actions {
		for _, ph := range []config.Phase{config.Start, config.Loop} {
			got, err := f.Engine().Decide(ctx, a, ph)
			if err != nil {
				t.Fatal(err)
			}
			last = got
			exp, _ := want.Decide(ctx, a, ph)
			g, e := *got, *exp
			g.ID, g.Revision, e.Revision = "", "", ""
			gj, _ := json.Marshal(g)
			ej, _ := json.Marshal(e)
			if !bytes.Equal(gj, ej) {
				t.Errorf("%s at %s:\n got %s\nwant %s", a, ph, gj, ej)
			}
		}
	}
	eventually(t, s, "decision logs delivered", func() bool {
		for _, ev := range s.Events() {
			if ev["decision_id"] == last.ID {
				b, _ := json.Marshal(ev["bundles"])
				return strings.Contains(string(b), `"acme":{"revision":"`+orgOut.Revision) && strings.Contains(string(b), `"project":{"revision":"`+linked.Revision)
			}
		}
		return false
	})
}

// TestDocsConfig runs the configuration docs/fleet.md shows, as written,
// with the service's address and a public key put in: it downloads the
// signed bundle, decides, and its decision logs reach the service at
// stop.
func TestDocsConfig(t *testing.T) {
	doc, err := os.ReadFile("../../docs/fleet.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "<!-- fleet-config")
	if !ok {
		t.Fatal("docs/fleet.md has no <!-- fleet-config marker")
	}
	_, rest, _ = strings.Cut(rest, "```yaml\n")
	cfg, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("docs/fleet.md: the fleet config block does not end")
	}
	priv, pub := rsaKeys(t)
	s := newService(t)
	s.Serve(bundleBytes(t, compiled(t, project), &compile.Key{Material: priv, Alg: "RS256", ID: "k1"}))
	cfg = strings.Replace(strings.Replace(cfg, "http://127.0.0.1:8282", s.URL, 1), "http://127.0.0.1:8283", s.URL, 1)
	var key strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(pub)), "\n") {
		key.WriteString("      " + line + "\n")
	}
	before, after, ok := strings.Cut(cfg, "      -----BEGIN PUBLIC KEY-----\n")
	_, after, ok2 := strings.Cut(after, "      -----END PUBLIC KEY-----\n")
	if !ok || !ok2 {
		t.Fatal("docs/fleet.md: the config's key block is not where the test expects it")
	}
	cfg = before + key.String() + after
	f, err := Start(context.Background(), Options{Config: []byte(cfg), Name: "docs/fleet.md", Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.Engine().Decide(context.Background(), "exec.path.gh", config.Loop)
	if err != nil || d.Decision != config.Allow {
		t.Fatalf("%v %v", d, err)
	}
	f.Stop(context.Background())
	if n := len(s.Events()); n != 1 {
		t.Errorf("%d decision-log events after stop, want 1", n)
	}
}

// TestConfigMistakes: a configuration that names no bundles is refused at
// once, saying so; a key OPA does not know is named on the log.
func TestConfigMistakes(t *testing.T) {
	s := newService(t)
	s.Serve(bundleBytes(t, compiled(t, project), nil))
	cfg := strings.Replace(string(s.Config(nil, true)), "bundles:", "bundels:", 1)
	log := &syncBuffer{}
	t0 := time.Now()
	_, err := Start(context.Background(), Options{Config: []byte(cfg), Name: "opa.yaml", Wait: 10 * time.Second, Log: log})
	if !errors.Is(err, ErrNoPolicy) || !strings.Contains(err.Error(), "names no bundles") || time.Since(t0) > 5*time.Second {
		t.Errorf("got %v after %s", err, time.Since(t0))
	}
	if !strings.Contains(log.String(), `opa.yaml:4:1: OPA's configuration has no key "bundels" (a typo?)`) {
		t.Errorf("log: %s", log.String())
	}
}

// TestConfigErrorsHavePositions: a mistake in OPA's configuration is
// named at its line and column, where OPA names the line of the block
// around it (a syntax error) or none at all (a value of the wrong type).
func TestConfigErrorsHavePositions(t *testing.T) {
	const head = "services:\n  acme:\n    url: http://127.0.0.1:1\nbundles:\n  chock:\n    service: acme\n"
	for name, c := range map[string]struct{ config, want string }{
		// OPA says line 4, the bundles block.
		"indentation": {head + "   resource: x\n", "opa.yaml:7:4: did not find expected key"},
		"unclosed":    {head + "    resource: [x\n", "opa.yaml:7:5: did not find expected ',' or ']'"},
		"tab":         {"services:\n\t acme: 1\n", "opa.yaml:2:1: found character that cannot start any token"},
		// OPA names a Go struct field and no line.
		"type":        {head + "    polling:\n      min_delay_seconds: abc\n", "opa.yaml:8:26: bundles.chock.polling.min_delay_seconds is a string, where OPA wants an integer"},
		"object":      {"services:\n  acme:\n    url: http://127.0.0.1:1\n    credentials: 7\n", "opa.yaml:4:18: services.acme.credentials is a number, where OPA wants an object"},
		"json":        {`{"services": {"a": {"url": "http://127.0.0.1:1"}}, "bundles": {"c": {"service": "a", "polling": {"min_delay_seconds": "x"}}}}`, "opa.yaml:1:119: bundles.c.polling.min_delay_seconds is a string"},
		"no position": {head + "    service: other\n", "opa.yaml: "},
		// OPA says line 7, the object around the mistake, and a cut inside
		// any open object fails with the same problem.
		"json syntax": {"{\n  \"services\": {\n    \"acme\": {\n      \"url\": \"http://127.0.0.1:1\"\n    }\n  },\n  \"bundles\": {\n    \"chock\": {\n      \"service\": \"acme\"\n      \"resource\": \"x\"\n    }\n  }\n}\n",
			"opa.yaml:9:7: did not find expected ',' or '}'"},
		// A private Go type starts the field path.
		"private type": {"services:\n  acme:\n    url: http://127.0.0.1:1\n    credentials:\n      bearer:\n        token: 12345\n",
			"opa.yaml:6:16: services.acme.credentials.bearer.token is a number, where OPA wants a string"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Start(context.Background(), Options{Config: []byte(c.config), Name: "opa.yaml", Wait: time.Second})
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("got %v\nwant %s…", err, c.want)
			}
			t.Log(err)
		})
	}
}

// TestSameBundleAgainIsNoSwap: a bundle server without ETags has each
// poll activate the same bundle again; that is not a new policy, and
// nobody is told of one.
func TestSameBundleAgainIsNoSwap(t *testing.T) {
	s := newService(t)
	s.Serve(bundleBytes(t, compiled(t, project), nil))
	var swaps atomic.Int32
	log := &syncBuffer{}
	f, err := Start(context.Background(), Options{Config: s.Config(nil, true), Name: "opa.yaml", Wait: 10 * time.Second, Log: log,
		OnSwap: func(string) { swaps.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop(context.Background())
	// Counted, not slept for: OPA's downloader asks again only once it
	// has activated what it got, so at the fifth request the first
	// download and three polls have been activated, each kicking the
	// rebuild that would tell of a swap.
	s.Until(t, 20*time.Second, "three polls", func() bool { return s.Requests("chock") >= 5 })
	if n := swaps.Load(); n != 0 || strings.Contains(log.String(), "swapped in") {
		t.Errorf("%d swaps told of the same bundle; log %s", n, log.String())
	}
}

// FuzzConfigErrorAt: whatever the configuration, placing OPA's error in
// it never panics, and a position it gives is inside the file.
func FuzzConfigErrorAt(f *testing.F) {
	f.Add([]byte("services:\n  acme:\n    url: http://127.0.0.1:1\nbundles:\n  chock:\n    service: acme\n   resource: x\n"))
	f.Add([]byte("bundles:\n  c:\n    polling:\n      min_delay_seconds: abc\n"))
	f.Add([]byte(`{"services": {"a": {"credentials": 7}}}`))
	f.Add([]byte("a: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newConfig("opa.yaml", data)
		var boot map[string]any
		for _, err := range []error{util.Unmarshal(data, &boot), errors.New("json: cannot unmarshal string into Go struct field X.a.b of type int")} {
			if err == nil {
				continue
			}
			var d *diag.Diagnostic
			if errors.As(c.errorAt(err), &d) && d.Span.Start.Line > bytes.Count(data, []byte("\n"))+1 {
				t.Fatalf("line %d of a %d-line file", d.Span.Start.Line, bytes.Count(data, []byte("\n"))+1)
			}
		}
		for k := range boot {
			c.at(k)
		}
	})
}
