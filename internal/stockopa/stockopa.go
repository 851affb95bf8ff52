// Package stockopa runs the stock opa command, built from the OPA version
// in go.mod (its tool directive), for the tests that hold chock to OPA
// itself: opa run --server on 127.0.0.1, opa eval, opa inspect.
package stockopa

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary builds (or finds in the build cache) the opa command. A test
// that needs it fails when it cannot be built: it never skips.
func Binary(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("go", "tool", "-n", "opa").Output()
	if err != nil {
		tb.Fatalf("building opa from go.mod: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// Server is one opa run --server on 127.0.0.1.
type Server struct {
	Cmd  *exec.Cmd
	Addr string
	URL  string
	// Output is what the server wrote on stdout and stderr.
	Output *Buffer
}

// Buffer is a writer safe for a process's two streams.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start runs opa run --server on a free port of 127.0.0.1 with args after
// it (no version check, no telemetry, errors only), and waits for
// /health?bundles through client (nil: plain http). The process is
// continued and killed when the test ends.
func Start(tb testing.TB, client *http.Client, args ...string) *Server {
	tb.Helper()
	opa := Binary(tb)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	scheme := "http"
	if client != nil {
		scheme = "https"
	} else {
		client = http.DefaultClient
	}
	s := &Server{Addr: addr, URL: scheme + "://" + addr, Output: &Buffer{}}
	s.Cmd = exec.Command(opa, append([]string{"run", "--server", "--addr", addr, "--skip-version-check", "--disable-telemetry", "--log-level", "error"}, args...)...)
	s.Cmd.Stderr = s.Output
	s.Cmd.Stdout = s.Output
	if err := s.Cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		s.Cmd.Process.Signal(syscall.SIGCONT)
		s.Cmd.Process.Kill()
		s.Cmd.Wait()
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(s.URL + "/health?bundles")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("opa run did not become ready: %s", s.Output.String())
	return nil
}

// Pause stops the server with SIGSTOP and returns once every one of its
// threads is stopped. The kernel stops a process's threads after kill
// returns, not before: a request sent in between can still be answered,
// so a test that needs a silent server waits for the stop. It reads
// /proc: Linux only, as chock's tests are.
func (s *Server) Pause() error {
	if err := s.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	tasks := fmt.Sprintf("/proc/%d/task", s.Cmd.Process.Pid)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if stopped(tasks) {
			return nil
		}
	}
	return fmt.Errorf("opa (pid %d) was sent SIGSTOP and has threads still running after 10s", s.Cmd.Process.Pid)
}

// Resume continues a paused server.
func (s *Server) Resume() error {
	return s.Cmd.Process.Signal(syscall.SIGCONT)
}

// stopped reports whether every thread under tasks (/proc/PID/task) is
// in the stopped state.
func stopped(tasks string) bool {
	ents, err := os.ReadDir(tasks)
	if err != nil || len(ents) == 0 {
		return false
	}
	for _, ent := range ents {
		b, err := os.ReadFile(filepath.Join(tasks, ent.Name(), "stat"))
		if err != nil {
			return false
		}
		// pid (comm) state ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Counter is a reverse proxy on 127.0.0.1 in front of a server that
// counts the requests to each path.
type Counter struct {
	// URL is the proxy's, to ask instead of the server's.
	URL string
	mu  sync.Mutex
	n   map[string]int
}

// Counted puts a Counter in front of the server, closed when the test
// ends.
func (s *Server) Counted(tb testing.TB) *Counter {
	tb.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		tb.Fatal(err)
	}
	c := &Counter{n: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.n[r.URL.Path]++
		c.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

// Take returns the counts by path so far, and starts again from zero.
func (c *Counter) Take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}
