// Package opaservice is a bundle service and a decision-log service on
// 127.0.0.1, for tests: a real HTTP server that OPA's bundle and
// decision-log plugins talk to as they would to any other.
package opaservice

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	"github.com/chockhq/chock/internal/waitfor"
)

// LogsPath is where the service takes decision logs; bundle NAME is
// served at bundles/NAME.tar.gz.
const LogsPath = "logs"

// Service serves bundles by name and keeps every decision-log event
// posted to LogsPath. Its Signal is notified after each request it
// serves, so a test waits on what the service saw (Until) rather than
// sleeping.
type Service struct {
	*httptest.Server
	waitfor.Signal
	mu       sync.Mutex
	bundles  map[string][]byte
	events   []map[string]any
	requests map[string]int
}

// New starts a service; Close stops it.
func New() *Service {
	s := &Service{bundles: map[string][]byte{}, requests: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /bundles/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimSuffix(r.PathValue("name"), ".tar.gz")
		s.mu.Lock()
		b := s.bundles[name]
		s.requests[name]++
		s.mu.Unlock()
		defer s.Notify()
		if b == nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		w.Write(b)
	})
	mux.HandleFunc("POST /"+LogsPath, func(w http.ResponseWriter, r *http.Request) {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var evs []map[string]any
		dec := json.NewDecoder(zr)
		dec.UseNumber()
		if err := dec.Decode(&evs); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.events = append(s.events, evs...)
		s.mu.Unlock()
		s.Notify()
	})
	s.Server = httptest.NewServer(mux)
	return s
}

// Serve makes b bundle "chock".
func (s *Service) Serve(b []byte) { s.ServeNamed("chock", b) }

// ServeNamed makes b the bundle called name; nil stops serving it.
func (s *Service) ServeNamed(name string, b []byte) {
	s.mu.Lock()
	s.bundles[name] = b
	s.mu.Unlock()
}

// Events are the decision-log events received so far.
func (s *Service) Events() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.events...)
}

// Requests is how many times bundle name was asked for.
func (s *Service) Requests(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[name]
}

// Config is an OPA configuration for the service: each named bundle
// (none named: "chock"), polled every second, verified with key k1
// (RS256, PEM pub) when pub is given; decision logs uploaded every
// second, or only when flushed (every five minutes) when lazy.
func (s *Service) Config(pub []byte, lazy bool, names ...string) []byte {
	if len(names) == 0 {
		names = []string{"chock"}
	}
	signing, keys := "", ""
	if pub != nil {
		signing = "\n    signing:\n      keyid: k1"
		keys = fmt.Sprintf("keys:\n  k1:\n    algorithm: RS256\n    key: %q\n", string(pub))
	}
	reporting := "min_delay_seconds: 1\n    max_delay_seconds: 1"
	if lazy {
		reporting = "min_delay_seconds: 300\n    max_delay_seconds: 600"
	}
	var bundles strings.Builder
	for _, n := range names {
		fmt.Fprintf(&bundles, `  %s:
    service: bs
    resource: bundles/%s.tar.gz
    polling:
      min_delay_seconds: 1
      max_delay_seconds: 1%s
`, n, n, signing)
	}
	return fmt.Appendf(nil, `services:
  bs:
    url: %s
bundles:
%sdecision_logs:
  service: bs
  resource: %s
  reporting:
    %s
%s`, s.URL, bundles.String(), LogsPath, reporting, strings.TrimSpace(keys))
}
