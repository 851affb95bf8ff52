// Package boundread reads a body up to a bound and fails a read past it,
// where io.LimitReader would end as if the body were complete: a reply cut
// at the bound must not be taken for the whole reply.
package boundread

import "io"

// Reader reads at most a bound of bytes from another reader. A body of
// exactly the bound reads whole, ending as the underlying reader ends; a
// byte past it fails the read with the error the Reader was made with.
type Reader struct {
	r    io.Reader
	left int64
	past func() error
	err  error
}

// New is a Reader of r bounded at bound bytes. past is called once, when
// a byte past the bound is read, and gives the error that read and every
// later one returns: the caller's own, which it branches on.
func New(r io.Reader, bound int64, past func() error) *Reader {
	return &Reader{r: r, left: bound, past: past}
}

// Read reads up to the bound; at the bound it reads one byte more, which
// tells a body of exactly the bound from a longer one.
func (b *Reader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.left <= 0 {
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			b.err = b.past()
			return 0, b.err
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// Close closes the underlying reader when it is an io.Closer.
func (b *Reader) Close() error {
	if c, ok := b.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
