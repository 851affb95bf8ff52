package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// queue is chock's span processor: a bounded queue a background exporter
// drains in batches. The SDK's BatchSpanProcessor drops on a full queue
// too, but keeps the count to itself (a debug log line); chock counts
// every span lost (queue full, export failed or timed out) and says so
// once, so a collector that is down is seen, and costs a call one
// non-blocking channel send.
type queue struct {
	exp   sdktrace.SpanExporter
	spans chan sdktrace.ReadOnlySpan
	flush chan chan struct{}
	done  chan struct{}
	// mu guards stopped and the closing of spans against a send.
	mu      sync.RWMutex
	stopped bool
	stop    sync.Once
	dropped atomic.Int64
	warn    *warner
	// failingUntil is when a failed export's pause ends (Unix nanoseconds):
	// till then every span is dropped at once, so a collector that is down
	// costs neither a marshal nor a queued span.
	failingUntil atomic.Int64
	pause        time.Duration
}

// batch is the most spans one export carries; every is how often a
// partial batch goes out.
const (
	batch       = 512
	every       = time.Second
	exportLimit = 10 * time.Second
)

func newQueue(exp sdktrace.SpanExporter, size int, warn *warner) *queue {
	q := &queue{exp: exp, spans: make(chan sdktrace.ReadOnlySpan, size), flush: make(chan chan struct{}), done: make(chan struct{}), warn: warn}
	go q.run()
	return q
}

// OnStart does nothing: a span is queued when it ends.
func (q *queue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues s, or drops it if the queue is full or stopped.
func (q *queue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if until := q.failingUntil.Load(); until != 0 && time.Now().UnixNano() < until {
		q.lose(1, "export")
		return
	}
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.stopped {
		q.lose(1, "stopped")
		return
	}
	select {
	case q.spans <- s:
	default:
		q.lose(1, "full")
	}
}

func (q *queue) lose(n int, why string) {
	q.dropped.Add(int64(n))
	switch why {
	case "full":
		q.warn.once("full", "chock: telemetry: the span queue is full (the collector is slow or down); spans are dropped and counted, and this is said once")
	case "export":
		q.warn.once("lost", "chock: telemetry: spans could not be sent and were dropped; this is said once")
	}
}

func (q *queue) run() {
	defer close(q.done)
	t := time.NewTicker(every)
	defer t.Stop()
	var buf []sdktrace.ReadOnlySpan
	send := func() {
		if len(buf) == 0 {
			return
		}
		if until := q.failingUntil.Load(); until != 0 && time.Now().UnixNano() < until {
			q.lose(len(buf), "export")
			buf = buf[:0]
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), exportLimit)
		if err := q.exp.ExportSpans(ctx, buf); err != nil {
			q.lose(len(buf), "export")
			// Paused, doubling from 1 s to 30 s while it keeps failing.
			q.pause = min(max(2*q.pause, time.Second), 30*time.Second)
			q.failingUntil.Store(time.Now().Add(q.pause).UnixNano())
		} else {
			q.pause = 0
			q.failingUntil.Store(0)
		}
		cancel()
		buf = buf[:0]
	}
	for {
		select {
		case s, ok := <-q.spans:
			if !ok {
				send()
				return
			}
			buf = append(buf, s)
			if len(buf) >= batch {
				send()
			}
		case <-t.C:
			send()
		case ack := <-q.flush:
			// Everything queued before the flush was asked goes out.
			for n := len(q.spans); n > 0; n-- {
				buf = append(buf, <-q.spans)
				if len(buf) >= batch {
					send()
				}
			}
			send()
			close(ack)
		}
	}
}

// ForceFlush sends what is queued, within ctx.
func (q *queue) ForceFlush(ctx context.Context) error {
	q.mu.RLock()
	stopped := q.stopped
	q.mu.RUnlock()
	if stopped {
		return nil
	}
	ack := make(chan struct{})
	select {
	case q.flush <- ack:
	case <-ctx.Done():
		return ctx.Err()
	case <-q.done:
		return nil
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown flushes within ctx and stops the exporter; spans still queued
// when ctx ends are dropped and counted.
func (q *queue) Shutdown(ctx context.Context) error {
	var err error
	q.stop.Do(func() {
		err = q.ForceFlush(ctx)
		q.mu.Lock()
		q.stopped = true
		if err != nil {
			q.lose(len(q.spans), "export")
		}
		close(q.spans)
		q.mu.Unlock()
		select {
		case <-q.done:
		case <-ctx.Done():
		}
		if serr := q.exp.Shutdown(ctx); err == nil {
			err = serr
		}
	})
	return err
}
