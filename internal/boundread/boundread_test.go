package boundread

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

var errPast = errors.New("past the bound")

// read reads a body of n bytes through a Reader bounded at bound, and
// counts the calls of past.
func read(t *testing.T, n int, bound int64) (string, int, error) {
	t.Helper()
	calls := 0
	r := New(strings.NewReader(strings.Repeat("x", n)), bound, func() error { calls++; return errPast })
	b, err := io.ReadAll(r)
	return string(b), calls, err
}

func TestUnderBound(t *testing.T) {
	b, calls, err := read(t, 5, 10)
	if err != nil || b != "xxxxx" || calls != 0 {
		t.Fatalf("got %q, %d calls, %v", b, calls, err)
	}
}

func TestExactlyAtBound(t *testing.T) {
	b, calls, err := read(t, 10, 10)
	if err != nil || len(b) != 10 || calls != 0 {
		t.Fatalf("got %d bytes, %d calls, %v", len(b), calls, err)
	}
}

func TestOnePast(t *testing.T) {
	b, calls, err := read(t, 11, 10)
	if !errors.Is(err, errPast) || len(b) != 10 || calls != 1 {
		t.Fatalf("got %d bytes, %d calls, %v", len(b), calls, err)
	}
}

func TestZeroBound(t *testing.T) {
	if _, _, err := read(t, 0, 0); err != nil {
		t.Fatalf("an empty body at a bound of 0: %v", err)
	}
	if _, _, err := read(t, 1, 0); !errors.Is(err, errPast) {
		t.Fatalf("one byte at a bound of 0: %v", err)
	}
}

// TestPastIsSticky: every read after the bound is passed fails the same
// way, and past is called once.
func TestPastIsSticky(t *testing.T) {
	calls := 0
	r := New(strings.NewReader("abcdef"), 2, func() error { calls++; return errPast })
	if _, err := io.ReadAll(r); !errors.Is(err, errPast) {
		t.Fatal(err)
	}
	for range 3 {
		if n, err := r.Read(make([]byte, 4)); n != 0 || !errors.Is(err, errPast) {
			t.Fatalf("read %d, %v", n, err)
		}
	}
	if calls != 1 {
		t.Fatalf("past called %d times", calls)
	}
}

// TestOneByteReads: a reader that gives a byte a read is bounded the same.
func TestOneByteReads(t *testing.T) {
	for _, n := range []int{9, 10, 11} {
		r := New(iotest.OneByteReader(strings.NewReader(strings.Repeat("x", n))), 10, func() error { return errPast })
		b, err := io.ReadAll(r)
		if past := n > 10; errors.Is(err, errPast) != past || (!past && err != nil) || len(b) != min(n, 10) {
			t.Fatalf("%d bytes: read %d, %v", n, len(b), err)
		}
	}
}

// TestDataWithEOF: a last read that returns data and io.EOF together is
// read whole at the bound.
func TestDataWithEOF(t *testing.T) {
	r := New(iotest.DataErrReader(strings.NewReader("0123456789")), 10, func() error { return errPast })
	b, err := io.ReadAll(r)
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("got %q, %v", b, err)
	}
}

type closer struct {
	io.Reader
	closed int
}

func (c *closer) Close() error { c.closed++; return nil }

func TestClose(t *testing.T) {
	c := &closer{Reader: strings.NewReader("x")}
	if err := New(c, 1, func() error { return errPast }).Close(); err != nil || c.closed != 1 {
		t.Fatalf("closed %d times, %v", c.closed, err)
	}
	// A reader that cannot be closed closes as nothing.
	if err := New(strings.NewReader("x"), 1, func() error { return errPast }).Close(); err != nil {
		t.Fatal(err)
	}
}
