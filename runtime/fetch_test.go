package runtime

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/runtime/netguard"
)

func fetchSession(t *testing.T, srv *httptest.Server, net *netguard.Checker) *Session {
	t.Helper()
	c, ds := config.Load("chock.zon", []byte(`.{ .policy = .{ .allow = .{"net.fetch.127.0.0.1"}, .deny = .{"net.fetch.com.example"} } }`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	out, _ := compile.Compile(compile.Input{Config: c})
	e, _ := eval.FromOutput(context.Background(), out)
	s, err := New(context.Background(), Options{Engine: e, Config: c, LogDir: t.TempDir(), TempDir: t.TempDir(), Net: net})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestFetchURL(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Write([]byte(strings.Repeat("x", MaxBody+10)))
		case "/redirect":
			http.Redirect(w, r, "/", http.StatusFound)
		default:
			w.Write([]byte("hello"))
		}
	}))
	defer srv.Close()
	loopbackOK := &netguard.Checker{Policy: func(a netip.Addr) string {
		if a.IsLoopback() {
			return ""
		}
		return netguard.Why(a)
	}, TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig}
	s := fetchSession(t, srv, loopbackOK)
	ctx := context.Background()
	res, err := s.Run(ctx, &Call{Tool: "fetch_url", Fetch: &FetchRequest{URL: srv.URL + "/"}})
	if err != nil || res.Status != 200 || res.Body != "hello" {
		t.Fatalf("%v %+v", err, res)
	}
	res, err = s.Run(ctx, &Call{Tool: "fetch_url", Fetch: &FetchRequest{URL: srv.URL + "/big"}})
	if err != nil || !res.Truncated || len(res.Body) != MaxBody {
		t.Fatalf("bound: %v truncated %v len %d", err, res != nil && res.Truncated, len(res.Body))
	}
	var r *RefusedError
	if _, err := s.Run(ctx, &Call{Tool: "fetch_url", Fetch: &FetchRequest{URL: srv.URL + "/redirect"}}); !errors.As(err, &r) || !strings.Contains(r.Reason, "redirect") {
		t.Errorf("redirect: %v", err)
	}
	if _, err := s.Run(ctx, &Call{Tool: "fetch_url", Fetch: &FetchRequest{URL: strings.Replace(srv.URL, "https", "http", 1)}}); !errors.As(err, &r) || !strings.Contains(r.Reason, "https only") {
		t.Errorf("http: %v", err)
	}
	if _, err := s.Run(ctx, &Call{Tool: "fetch_url", Fetch: &FetchRequest{URL: "https://example.com/"}}); !errors.As(err, &r) || !strings.Contains(r.Reason, "deny") {
		t.Errorf("policy: %v", err)
	}
	// The production checker refuses the loopback address whatever the policy says.
	prod := fetchSession(t, srv, nil)
	if _, err := prod.Run(ctx, &Call{Tool: "fetch_url", Fetch: &FetchRequest{URL: srv.URL + "/"}}); !errors.As(err, &r) || !strings.Contains(r.Reason, "loopback") {
		t.Errorf("production checker: %v", err)
	}
}

// TestFetchBudget: a fetch that names a longer time limit than the
// session's default has it (the limit is the call's one budget).
func TestFetchBudget(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A slow server is what this tests: the sleep stays.
		time.Sleep(400 * time.Millisecond)
		w.Write([]byte("late"))
	}))
	defer srv.Close()
	loopbackOK := &netguard.Checker{Policy: func(a netip.Addr) string {
		if a.IsLoopback() {
			return ""
		}
		return netguard.Why(a)
	}, TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig}
	s := fetchSession(t, srv, loopbackOK)
	s.opts.CallTimeout = 100 * time.Millisecond
	res, err := s.Run(context.Background(), &Call{Tool: "fetch_url", Timeout: 5 * time.Second, Fetch: &FetchRequest{URL: srv.URL + "/"}})
	if err != nil || res.Body != "late" {
		t.Fatalf("a 5 s limit: %+v %v", res, err)
	}
	if _, err := s.Run(context.Background(), &Call{Tool: "fetch_url", Fetch: &FetchRequest{URL: srv.URL + "/"}}); err == nil {
		t.Fatal("the 100 ms default did not hold")
	}
}
