package telemetry

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestOffWithoutEndpoint: no endpoint, OTEL_SDK_DISABLED, or both
// exporters none: no export at all.
func TestOffWithoutEndpoint(t *testing.T) {
	for _, e := range []map[string]string{
		{},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
	} {
		x, err := Start(context.Background(), Options{Getenv: env(e)})
		if err != nil || x != nil {
			t.Errorf("%v: Start = %v, %v; want export off", e, x, err)
		}
	}
}

// TestConfigErrors: a setting chock cannot follow is ErrConfig, naming it.
func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Endpoint: "127.0.0.1:4318"}, `--otel "127.0.0.1:4318" is not an http:// or https:// URL`},
		{Options{Endpoint: "ftp://x"}, "not an http:// or https:// URL"},
		{Options{Endpoint: "http://127.0.0.1:1", Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})}, `OTLP protocol "http/json": chock sends http/protobuf or grpc`},
		{Options{Endpoint: "http://127.0.0.1:1", Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"})}, `OTEL_EXPORTER_OTLP_TIMEOUT="soon"`},
	} {
		if c.o.Getenv == nil {
			c.o.Getenv = env(nil)
		}
		_, err := Start(context.Background(), c.o)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrConfig with %q", c.o.Endpoint, err, c.want)
		}
	}
	Off()
}

// TestHungCollectorCostsNoWait: a collector that accepts connections and
// never answers (a real loopback peer) fills the queue; spans beyond it
// are dropped and counted, never waited for, and the drop is said once.
// Shutdown gives up within its bounded wait.
func TestHungCollectorCostsNoWait(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	var warn bytes.Buffer
	x, err := Start(context.Background(), Options{Endpoint: "http://" + l.Addr().String(), Warn: &warn,
		Getenv: env(map[string]string{"OTEL_METRICS_EXPORTER": "none", "OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_EXPORTER_OTLP_TIMEOUT": "200"})})
	if err != nil || x == nil {
		t.Fatalf("Start: %v %v", x, err)
	}
	defer Off()
	tr := otel.Tracer("test")
	for range 10000 {
		_, sp := tr.Start(context.Background(), "s")
		sp.End()
	}
	if d := x.Dropped(); d < 10000-100-batch {
		t.Errorf("dropped %d of 10000 spans with a queue of 100", d)
	}
	if err := x.Shutdown(context.Background()); err == nil {
		t.Error("Shutdown against a hung collector reported no error")
	}
	if n := strings.Count(warn.String(), "queue is full"); n != 1 {
		t.Errorf("the full queue was said %d times:\n%s", n, warn.String())
	}
}

// TestMaxWaitCapsTheFlush: a command a client waits for (chock hook)
// caps the wait at exit below OTEL_EXPORTER_OTLP_TIMEOUT.
func TestMaxWaitCapsTheFlush(t *testing.T) {
	x, err := Start(context.Background(), Options{Endpoint: "http://127.0.0.1:1", MaxWait: time.Second,
		Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "60000", "OTEL_METRICS_EXPORTER": "none"})})
	if err != nil || x == nil {
		t.Fatalf("Start: %v %v", x, err)
	}
	defer Off()
	defer x.Shutdown(context.Background())
	if x.timeout != time.Second {
		t.Errorf("the flush waits %v, want 1s", x.timeout)
	}
}
