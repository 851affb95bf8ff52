// Package telemetry exports chock's sessions to OpenTelemetry: a span per
// session, per call and per decision, named and attributed by the GenAI
// conventions, and a few metrics, over OTLP to whatever collector the
// standard environment (or --otel) names.
//
// Export never blocks a call: spans go to a bounded queue that a
// background exporter drains; a full queue drops the span, counts it and
// says so once on stderr. A command that exits flushes what is queued
// within OTEL_EXPORTER_OTLP_TIMEOUT (default 10 s).
//
// Start installs the providers as OpenTelemetry's global ones, so the
// runtime's packages name spans through otel.Tracer and no handle is
// threaded through them; without Start (or with OTEL_SDK_DISABLED=true)
// the globals are OpenTelemetry's no-op ones, and a span costs nothing.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span and metric chock
// makes.
const ScopeName = "github.com/chockhq/chock"

// DefaultTimeout is how long a command that exits waits for what is
// queued to be sent, when OTEL_EXPORTER_OTLP_TIMEOUT says nothing.
const DefaultTimeout = 10 * time.Second

// Options are what Start takes besides the environment.
type Options struct {
	// Endpoint is --otel: the collector's OTLP base URL
	// (http://127.0.0.1:4318 for http/protobuf, http://127.0.0.1:4317 for
	// grpc). It overrides OTEL_EXPORTER_OTLP_ENDPOINT; "" leaves export
	// to the environment.
	Endpoint string
	// Version is chock's version, the resource's service.version.
	Version string
	// Getenv reads the environment (os.Getenv by default).
	Getenv func(string) string
	// Warn is where the one-time warnings go (a dropped span, an export
	// that failed): chock's stderr.
	Warn io.Writer
	// MaxWait, when set, caps the wait Shutdown makes for what is queued
	// (chock hook, which a client waits for on every tool call).
	MaxWait time.Duration
}

// Exporter is the export Start set up: Shutdown flushes and stops it. A
// nil *Exporter (export off) is valid and does nothing.
type Exporter struct {
	tp      *sdktrace.TracerProvider
	mp      *sdkmetric.MeterProvider
	queue   *queue
	timeout time.Duration
}

// ErrConfig is a telemetry setting chock cannot follow (an unknown
// protocol, an endpoint that is not a URL).
var ErrConfig = errors.New("telemetry configuration")

// Start sets up export as the environment and o say, and installs it as
// OpenTelemetry's global tracer and meter providers and propagator. It
// returns nil (and installs only the propagator) when export is off: no
// endpoint is named, or OTEL_SDK_DISABLED is true, or both
// OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER are none.
func Start(ctx context.Context, o Options) (*Exporter, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	warn := o.Warn
	if warn == nil {
		warn = io.Discard
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	endpoint := o.Endpoint
	if endpoint == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") == "" {
		return nil, nil
	}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: --otel %q is not an http:// or https:// URL", ErrConfig, endpoint)
		}
	}
	traces := !strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none")
	metrics := !strings.EqualFold(getenv("OTEL_METRICS_EXPORTER"), "none")
	if !traces && !metrics {
		return nil, nil
	}
	timeout := DefaultTimeout
	if v := getenv("OTEL_EXPORTER_OTLP_TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_TIMEOUT=%q is not a positive number of milliseconds", ErrConfig, v)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(serviceName(getenv)), semconv.ServiceVersion(o.Version)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES: %w", ErrConfig, err)
	}
	if o.MaxWait > 0 && o.MaxWait < timeout {
		timeout = o.MaxWait
	}
	e := &Exporter{timeout: timeout}
	w := &warner{w: warn}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { w.once("export", "chock: telemetry: %v (further export errors are not shown)", err) }))
	if traces {
		proto, err := protocol(getenv, "TRACES")
		if err != nil {
			return nil, err
		}
		exp, err := traceExporter(ctx, proto, endpoint)
		if err != nil {
			return nil, err
		}
		e.queue = newQueue(exp, queueSize(getenv), w)
		e.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSpanProcessor(e.queue))
	}
	if metrics {
		proto, err := protocol(getenv, "METRICS")
		if err != nil {
			return nil, err
		}
		exp, err := metricExporter(ctx, proto, endpoint)
		if err != nil {
			return nil, err
		}
		e.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
	}
	e.Install()
	return e, nil
}

// Install makes e's providers OpenTelemetry's global ones (Start does;
// a benchmark switching between exporters does too).
func (e *Exporter) Install() {
	if e == nil {
		return
	}
	if e.tp != nil {
		otel.SetTracerProvider(e.tp)
	}
	if e.mp != nil {
		otel.SetMeterProvider(e.mp)
	}
	tracing.Store(e.tp != nil)
	metering.Store(e.mp != nil)
}

// tracing and metering say whether chock's own providers are installed:
// with export off, a decision builds no attribute at all.
var tracing, metering atomic.Bool

// Tracing says whether spans are exported (a provider of chock's, or a
// test's, is installed).
func Tracing() bool { return tracing.Load() }

// SetRecording says whether spans and metrics are made even though Start
// installed no provider (a test that installs its own).
func SetRecording(traces, metrics bool) {
	tracing.Store(traces)
	metering.Store(metrics)
}

// Shutdown sends what is queued, within OTEL_EXPORTER_OTLP_TIMEOUT, and
// stops export. What cannot be sent in time is dropped and counted.
func (e *Exporter) Shutdown(ctx context.Context) error {
	if e == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	var errs []error
	if e.tp != nil {
		errs = append(errs, e.tp.Shutdown(ctx))
	}
	if e.mp != nil {
		errs = append(errs, e.mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// Dropped is how many spans were dropped: the queue was full, the
// collector refused them or did not answer in time.
func (e *Exporter) Dropped() int64 {
	if e == nil || e.queue == nil {
		return 0
	}
	return e.queue.dropped.Load()
}

func serviceName(getenv func(string) string) string {
	if v := getenv("OTEL_SERVICE_NAME"); v != "" {
		return v
	}
	return "chock"
}

// protocol is OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL, else
// OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf.
func protocol(getenv func(string) string, signal string) (string, error) {
	p := getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", fmt.Errorf("%w: OTLP protocol %q: chock sends http/protobuf or grpc", ErrConfig, p)
}

func traceExporter(ctx context.Context, proto, endpoint string) (sdktrace.SpanExporter, error) {
	if proto == "grpc" {
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	var opts []otlptracehttp.Option
	if endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	}
	return otlptracehttp.New(ctx, opts...)
}

func metricExporter(ctx context.Context, proto, endpoint string) (sdkmetric.Exporter, error) {
	if proto == "grpc" {
		var opts []otlpmetricgrpc.Option
		if endpoint != "" {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(endpoint))
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	var opts []otlpmetrichttp.Option
	if endpoint != "" {
		opts = append(opts, otlpmetrichttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/metrics"))
	}
	return otlpmetrichttp.New(ctx, opts...)
}

// queueSize is OTEL_BSP_MAX_QUEUE_SIZE, else 2048 (the SDK's default).
func queueSize(getenv func(string) string) int {
	if n, err := strconv.Atoi(getenv("OTEL_BSP_MAX_QUEUE_SIZE")); err == nil && n > 0 {
		return n
	}
	return 2048
}

// warner says each kind of trouble once.
type warner struct {
	mu   sync.Mutex
	w    io.Writer
	said map[string]bool
}

func (w *warner) once(kind, format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.said[kind] {
		return
	}
	if w.said == nil {
		w.said = map[string]bool{}
	}
	w.said[kind] = true
	fmt.Fprintf(w.w, format+"\n", args...)
}

// Off makes OpenTelemetry's no-op providers the global ones again: no
// span or metric is made (as when Start found export off).
func Off() {
	otel.SetTracerProvider(tracenoop.NewTracerProvider())
	otel.SetMeterProvider(metricnoop.NewMeterProvider())
	SetRecording(false, false)
}
