package mcpconn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/mcptest"
)

// replyServer is an honest server but for its answer to tools/call,
// which is whatever the fuzzer wrote.
type replyServer struct {
	honest *mcptest.Hostile
	mu     sync.Mutex
	ctype  string
	body   []byte
}

func (r *replyServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodPost {
		b, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		req.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"tools/call"`)) {
			r.mu.Lock()
			ctype, body := r.ctype, r.body
			r.mu.Unlock()
			w.Header().Set("Content-Type", ctype)
			w.Write(body)
			return
		}
	}
	r.honest.ServeHTTP(w, req)
}

// FuzzReply feeds arbitrary tools/call replies, JSON or SSE, to the
// adapter: it must answer or fail with a classified error within its
// budget, never panic, and never hand over a result for a reply that was
// not one.
func FuzzReply(f *testing.F) {
	f.Add(false, []byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}`))
	f.Add(true, []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n"))
	f.Add(true, []byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"sampling/createMessage\",\"id\":7}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"image\",\"data\":\"AAAA\",\"mimeType\":\"image/png\"}]}}\n\n"))
	f.Add(false, []byte(`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"no"}}`))
	f.Add(false, []byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"resource","resource":{"uri":"x:y","text":"t"}}],"isError":true}}`))
	f.Add(true, []byte("id: 1\ndata: \n\n"))
	f.Add(false, []byte(`[[[[[[[[[[[[[[[[[[[[`))
	f.Add(false, []byte{0xff, 0xfe, 0})
	rs := &replyServer{honest: mcptest.NewHostile(mcptest.Honest)}
	u, checker := tlsServer(f, rs)
	s, err := OpenRemote(context.Background(), Remote{Name: "fuzz", URL: u, Net: checker},
		Options{DiscoverTimeout: 5 * time.Second, CallTimeout: 300 * time.Millisecond})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, isSSE bool, body []byte) {
		rs.mu.Lock()
		rs.ctype, rs.body = "application/json", body
		if isSSE {
			rs.ctype = "text/event-stream"
		}
		rs.mu.Unlock()
		start := time.Now()
		res, err := s.Call(context.Background(), "echo", json.RawMessage(`{}`))
		if took := time.Since(start); took > 20*time.Second {
			t.Fatalf("a call took %s", took)
		}
		var e *Error
		var te *ToolError
		switch {
		case err == nil:
			if res == nil {
				t.Fatal("no result and no error")
			}
		case errors.As(err, &e):
			if e.Outcome != NoAnswer && e.Outcome != Answered {
				t.Fatalf("outcome %s for a reply", e.Outcome)
			}
			if res != nil || strings.TrimSpace(e.Msg) == "" {
				t.Fatalf("res %v, msg %q", res, e.Msg)
			}
		case errors.As(err, &te):
		default:
			t.Fatalf("unclassified error %T: %v", err, err)
		}
	})
}
