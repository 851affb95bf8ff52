// Package jaegertest runs a real Jaeger (the binary make jaeger builds
// from tools/jaeger) for a test: in-memory storage, OTLP receivers and the
// query API on loopback ports of its own, stopped when the test ends. A
// test reads back the traces chock sent through Jaeger's query API.
package jaegertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/internal/waitfor"
)

// Env names the Jaeger binary (make sets it to tools/jaeger/bin/jaeger).
const Env = "CHOCK_JAEGER"

// Jaeger is a running Jaeger.
type Jaeger struct {
	// OTLP is the OTLP/HTTP receiver's base URL, what --otel takes; GRPC
	// the OTLP/gRPC receiver's.
	OTLP, GRPC string
	query      string
	metrics    string
	log        *os.File
}

// Start starts Jaeger for t. Without the binary the test fails under
// CI=true and skips otherwise.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin := os.Getenv(Env)
	if bin == "" {
		bin = filepath.Join(moduleRoot(t), "tools", "jaeger", "bin", "jaeger")
	}
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("no Jaeger at %s (make jaeger builds it): %v", bin, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	ports := freePorts(t, 6)
	j := &Jaeger{OTLP: "http://127.0.0.1:" + ports[0], GRPC: "http://127.0.0.1:" + ports[1], query: "http://127.0.0.1:" + ports[2],
		metrics: "http://127.0.0.1:" + ports[5] + "/metrics"}
	cfg := fmt.Sprintf(config, ports[3], ports[2], ports[4], ports[0], ports[1], ports[5])
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "jaeger.log"))
	if err != nil {
		t.Fatal(err)
	}
	j.log = log
	cmd := exec.Command(bin, "--config", filepath.Join(dir, "config.yaml"))
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		log.Close()
	})
	health := "http://127.0.0.1:" + ports[3] + "/status"
	waitfor.Poll(t, 60*time.Second, "Jaeger to be healthy", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("Jaeger exited: %v\n%s", err, j.Log())
		default:
		}
		r, err := http.Get(health)
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
	return j
}

// Log is what Jaeger wrote.
func (j *Jaeger) Log() string {
	b, _ := os.ReadFile(j.log.Name())
	return string(b)
}

// Metrics are the metrics Jaeger's collector received, in Prometheus's
// text format (its prometheus exporter).
func (j *Jaeger) Metrics(t testing.TB) string {
	t.Helper()
	r, err := http.Get(j.metrics)
	if err != nil {
		t.Fatalf("the collector's metrics: %v", err)
	}
	defer r.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, r.Body); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Span is one span as Jaeger's query API gives it.
type Span struct {
	TraceID    string `json:"traceID"`
	SpanID     string `json:"spanID"`
	Operation  string `json:"operationName"`
	References []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []KV `json:"tags"`
	Logs []struct {
		Fields []KV `json:"fields"`
	} `json:"logs"`
	ProcessID string `json:"processID"`
}

// KV is a tag or a log field.
type KV struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Tag is the span's tag key, as text, or "".
func (s Span) Tag(key string) string { return lookup(s.Tags, key) }

func lookup(kvs []KV, key string) string {
	for _, kv := range kvs {
		if kv.Key == key {
			return fmt.Sprint(kv.Value)
		}
	}
	return ""
}

// Field is a log's field key, as text, or "".
func Field(fields []KV, key string) string { return lookup(fields, key) }

// Trace waits until Jaeger holds at least n spans of trace id (hex) and
// returns them.
func (j *Jaeger) Trace(t testing.TB, id string, n int) []Span {
	t.Helper()
	var spans []Span
	waitfor.Poll(t, 60*time.Second, fmt.Sprintf("%d spans of trace %s in Jaeger", n, id), func() bool {
		spans = j.get(t, id)
		return len(spans) >= n
	})
	return spans
}

// Services are the services Jaeger has seen.
func (j *Jaeger) Services(t testing.TB) []string {
	t.Helper()
	var out struct {
		Data []string `json:"data"`
	}
	j.getJSON(t, "/api/services", &out)
	return out.Data
}

// Find are the traces of service holding a span named operation.
func (j *Jaeger) Find(t testing.TB, service, operation string) [][]Span {
	t.Helper()
	var out struct {
		Data []struct {
			Spans []Span `json:"spans"`
		} `json:"data"`
	}
	j.getJSON(t, fmt.Sprintf("/api/traces?service=%s&operation=%s&limit=100", service, strings.ReplaceAll(operation, " ", "%20")), &out)
	var traces [][]Span
	for _, d := range out.Data {
		traces = append(traces, d.Spans)
	}
	return traces
}

func (j *Jaeger) get(t testing.TB, id string) []Span {
	var out struct {
		Data []struct {
			Spans []Span `json:"spans"`
		} `json:"data"`
	}
	if !j.getJSON(t, "/api/traces/"+id, &out) {
		return nil
	}
	var spans []Span
	for _, d := range out.Data {
		spans = append(spans, d.Spans...)
	}
	return spans
}

func (j *Jaeger) getJSON(t testing.TB, path string, v any) bool {
	t.Helper()
	r, err := http.Get(j.query + path)
	if err != nil {
		t.Fatalf("Jaeger's query API: %v", err)
	}
	defer r.Body.Close()
	if r.StatusCode == http.StatusNotFound {
		return false
	}
	if r.StatusCode != http.StatusOK {
		t.Fatalf("Jaeger's query API: %s %s", path, r.Status)
	}
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		t.Fatalf("Jaeger's query API: %s: %v", path, err)
	}
	return true
}

// freePorts are n loopback ports free now (the kernel's picks).
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	var ls []net.Listener
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		out = append(out, fmt.Sprint(l.Addr().(*net.TCPAddr).Port))
	}
	for _, l := range ls {
		l.Close()
	}
	return out
}

func moduleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// config is Jaeger's configuration: in-memory storage, OTLP in, the query
// API out, everything on loopback; %s are the ports of the health check,
// the query API's HTTP and gRPC, OTLP's HTTP and gRPC, and the metrics'
// Prometheus endpoint.
const config = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
    metrics:
      receivers: [otlp]
      exporters: [prometheus]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%s
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%s
    grpc:
      endpoint: 127.0.0.1:%s
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%s
      grpc:
        endpoint: 127.0.0.1:%s
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
  prometheus:
    endpoint: 127.0.0.1:%s
`
