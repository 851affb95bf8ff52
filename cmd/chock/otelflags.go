package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/chockhq/chock/runtime/telemetry"
	"github.com/spf13/pflag"
)

// otelFlags is --otel: where a session's traces and metrics go, besides
// what the standard OTEL_* environment says.
type otelFlags struct {
	endpoint string
	// maxWait caps the flush at exit (0: OTEL_EXPORTER_OTLP_TIMEOUT).
	maxWait time.Duration
}

func (f *otelFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.endpoint, "otel", "", "send traces and metrics over OTLP to the collector at `URL` (http://127.0.0.1:4318 for http/protobuf); default $OTEL_EXPORTER_OTLP_ENDPOINT, none without it")
}

// start sets export up, and continues the trace $TRACEPARENT names, if
// any, in the context it returns; the function it returns flushes what is
// queued (within OTEL_EXPORTER_OTLP_TIMEOUT) and stops it, saying on w
// how many spans were dropped, if any.
func (f *otelFlags) start(ctx context.Context, w io.Writer) (context.Context, func(), error) {
	exp, err := telemetry.Start(ctx, telemetry.Options{Endpoint: f.endpoint, Version: moduleVersion(), Warn: w, MaxWait: f.maxWait})
	if err != nil {
		if errors.Is(err, telemetry.ErrConfig) {
			return ctx, nil, failed(exitUsage, err)
		}
		return ctx, nil, failed(exitFailed, fmt.Errorf("telemetry: %w", err))
	}
	ctx = telemetry.FromEnvironment(ctx, os.Getenv)
	return ctx, func() {
		// A command that exits sends what it queued, within a bounded wait.
		exp.Shutdown(context.WithoutCancel(ctx))
		if n := exp.Dropped(); n > 0 {
			fmt.Fprintf(w, "chock: telemetry: %d spans were dropped (the collector was slow or down)\n", n)
		}
	}, nil
}
