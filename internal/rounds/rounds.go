// Package rounds measures one thing against another in one process, in
// interleaved rounds, for chock's benchmarks: the two share the machine's
// state at every moment (its load, its caches, the garbage collector),
// which two benchmarks run one after the other, minutes apart, do not. On a
// shared machine only a ratio measured so means anything.
//
// A round runs each side once (a batch of calls, or one costly job), the
// order alternating from round to round; the figure is the median of the
// rounds' ratios, which one disturbed round does not move.
package rounds

import (
	"slices"
	"testing"
	"time"
)

// P99Millis is the 99th percentile of ds (nearest rank), in
// milliseconds, or 0 for none.
func P99Millis(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[(len(s)*99+99)/100-1]) / float64(time.Millisecond)
}

// Median is the median of xs (the upper one of an even count), or 0.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// Result is what a run of rounds measured: per side, the median cost of a
// round, and the median of the rounds' ratios A/B.
type Result struct {
	A, B  float64
	Ratio float64
	N     int // rounds
}

// Run runs rounds of a and b, as many as the benchmark's loop asks for
// (at least min), each side returning its own cost of the round (seconds
// of wall time, of CPU, ...), and returns the medians.
func Run(b *testing.B, min int, fa, fb func() float64) Result {
	var as, bs, ratios []float64
	round := func(i int) {
		var x, y float64
		if i%2 == 0 {
			x = fa()
			y = fb()
		} else {
			y = fb()
			x = fa()
		}
		as, bs = append(as, x), append(bs, y)
		if y > 0 {
			ratios = append(ratios, x/y)
		}
	}
	i := 0
	for b.Loop() {
		round(i)
		i++
	}
	for ; i < min; i++ {
		round(i)
	}
	return Result{A: Median(as), B: Median(bs), Ratio: Median(ratios), N: i}
}

// Calls runs rounds of n calls of a and n calls of b and returns the
// medians in nanoseconds per call. The calls are given their index in the
// round.
func Calls(b *testing.B, n int, fa, fb func(i int)) Result {
	timed := func(f func(int)) func() float64 {
		return func() float64 {
			t0 := time.Now()
			for i := 0; i < n; i++ {
				f(i)
			}
			return float64(time.Since(t0).Nanoseconds()) / float64(n)
		}
	}
	return Run(b, 5, timed(fa), timed(fb))
}

// Report reports a result: the ratio under unit (as "engine/minimal") and
// each side's cost per call under nameA and nameB (as "engine-ns/op").
func (r Result) Report(b *testing.B, unit, nameA, nameB string) {
	b.ReportMetric(r.Ratio, unit)
	b.ReportMetric(r.A, nameA)
	b.ReportMetric(r.B, nameB)
	b.ReportMetric(float64(r.N), "rounds")
}
