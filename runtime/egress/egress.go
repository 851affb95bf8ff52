// Package egress is chock's per-call egress proxy: the only way out of a
// call's network namespace. It serves an HTTP proxy (plain requests and
// CONNECT) and a SOCKS5 proxy (CONNECT, names resolved here: socks5h) on
// listening sockets that live inside the call's namespace, so every
// connection accepted on them is that call's by a kernel fact, never by
// anything the program sends. For each connection it asks a Decider
// (the policy's net.connect.<host>), and only then resolves the name
// itself, checks every address with the one address rule
// (internal/netaddr) and dials the checked address. A name is never
// looked up before the policy allows it: a lookup carries the name out.
package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chockhq/chock/internal/netaddr"
)

// Request is one connection a call asks for.
type Request struct {
	// Host is the destination as cleaned by CleanHost: a lower-case name
	// with no trailing dot, or an IP literal (IPv6 without brackets).
	Host string
	Port int
	// Via is how it was asked: "connect" (HTTP CONNECT), "http" (a plain
	// request) or "socks5".
	Via string
}

// Verdict is the policy's answer for one connection.
type Verdict struct {
	Allow bool
	// Action is the action decided (net.connect.<host>).
	Action string
	// Refusal, for a refused connection, says so for the program and the
	// model: the action, the deciding rule with its position and its
	// .why. It never says how to change the policy.
	Refusal string
	// Layer and Rule name what decided, for the log ("project",
	// "net.connect.* (chock.zon:3:9)").
	Layer, Rule string
}

// Decider decides connections. It may block (an ask) until ctx ends.
type Decider interface {
	Decide(ctx context.Context, r Request) Verdict
}

// DeciderFunc is a function as a Decider.
type DeciderFunc func(ctx context.Context, r Request) Verdict

// Decide calls f.
func (f DeciderFunc) Decide(ctx context.Context, r Request) Verdict { return f(ctx, r) }

// Resolver resolves a host name (net.DefaultResolver is one).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Outcomes of a connection, as logged.
const (
	Connected         = "connected"
	RefusedByPolicy   = "refused_by_policy"
	RefusedByAddress  = "refused_by_address"
	RefusedMalformed  = "refused_malformed"
	RefusedUnresolved = "unresolved"
	DialFailed        = "dial_failed"
	TooMany           = "too_many"
)

// Record is one connection, for the session log: no byte of what was sent
// is in it, only how many.
type Record struct {
	Host     string
	Port     int
	Via      string
	Action   string
	Allowed  bool
	Layer    string
	Rule     string
	Addr     netip.Addr // the address dialled, when one was
	Sent     int64      // bytes from the program to the host
	Received int64      // bytes from the host to the program
	Outcome  string
	Why      string
}

// MaxAddrs is how many addresses of one name are checked; a name answering
// more is refused rather than truncated.
const MaxAddrs = 16

// MaxConns is how many connections one call may hold open at once.
const MaxConns = 256

// handshakeTimeout bounds reading a request (HTTP head, SOCKS greeting).
const handshakeTimeout = 10 * time.Second

// Proxy is the egress proxy's configuration; one serves every call of a
// session (Serve once per call).
type Proxy struct {
	// Resolver resolves names: net.DefaultResolver (the system's) by
	// default. Tests give their own; the product never does.
	Resolver Resolver
	// AddrWhy says why an address is refused ("" allows it):
	// netaddr.DialWhy by default.
	AddrWhy func(netip.Addr) string
	// DialTimeout bounds one connection attempt (10 s by default).
	DialTimeout time.Duration
	// Log receives every connection once it is over.
	Log func(Record)
}

// Call is one call's proxy, serving its two listeners.
type Call struct {
	p       *Proxy
	d       Decider
	ctx     context.Context
	cancel  context.CancelFunc
	ls      []net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]bool
	open    atomic.Int32
	stopped bool
}

// Serve serves one call's HTTP and SOCKS5 listeners (either may be nil)
// until Close; ctx bounds every decision and connection (the call's
// budget).
func (p *Proxy) Serve(ctx context.Context, d Decider, httpL, socksL net.Listener) *Call {
	ctx, cancel := context.WithCancel(ctx)
	c := &Call{p: p, d: d, ctx: ctx, cancel: cancel, conns: map[net.Conn]bool{}}
	for _, l := range []struct {
		l     net.Listener
		serve func(net.Conn)
	}{{httpL, c.serveHTTP}, {socksL, c.serveSOCKS}} {
		if l.l == nil {
			continue
		}
		c.ls = append(c.ls, l.l)
		c.wg.Add(1)
		go c.accept(l.l, l.serve)
	}
	return c
}

// Close stops the call's proxy: the listeners and every connection are
// closed, and it returns once each has been logged.
func (c *Call) Close() {
	c.mu.Lock()
	c.stopped = true
	for _, l := range c.ls {
		l.Close()
	}
	for conn := range c.conns {
		conn.Close()
	}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

func (c *Call) accept(l net.Listener, serve func(net.Conn)) {
	defer c.wg.Done()
	for {
		conn, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if !c.track(conn) {
			conn.Close()
			continue
		}
		if c.open.Add(1) > MaxConns {
			c.open.Add(-1)
			c.untrack(conn)
			conn.Close()
			c.log(Record{Outcome: TooMany, Why: fmt.Sprintf("more than %d connections at once", MaxConns)})
			continue
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer c.open.Add(-1)
			defer c.untrack(conn)
			defer conn.Close()
			serve(conn)
		}()
	}
}

func (c *Call) track(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	c.conns[conn] = true
	return true
}

func (c *Call) untrack(conn net.Conn) {
	c.mu.Lock()
	delete(c.conns, conn)
	c.mu.Unlock()
}

func (c *Call) log(r Record) {
	if c.p.Log != nil {
		c.p.Log(r)
	}
}

// ErrMalformed is a destination that is not one clean host name or IP
// literal.
var ErrMalformed = errors.New("not a host")

// CleanHost checks a destination host as a program sent it and returns
// the one spelling it is decided and resolved under: an IP literal
// (brackets dropped, no zone), or a name of ASCII letters, digits, '-' and
// '_' in labels of 1 to 63 bytes, at most 253 in all, lower-cased, one
// trailing dot dropped. Anything else is refused: a NUL or control byte
// (a resolver that stops at it reaches another name), userinfo ('@'), a
// percent escape, white space, an empty label ("a..b", a second trailing
// dot), a name whose last label is all digits or hex (127.1, 0x7f.1: what
// some resolvers read as an address), a non-ASCII name (programs send
// IDNA's punycode).
func CleanHost(h string) (string, error) {
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", fmt.Errorf("%w: %q is not an IPv6 literal", ErrMalformed, h)
		}
		return a.String(), nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("%w: %q has a zone", ErrMalformed, h)
		}
		return a.String(), nil
	}
	name := strings.TrimSuffix(h, ".")
	if name == "" || len(name) > 253 {
		return "", fmt.Errorf("%w: a name of %d bytes", ErrMalformed, len(name))
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", fmt.Errorf("%w: %q has an empty or overlong label", ErrMalformed, safe(h))
		}
		for i := 0; i < len(l); i++ {
			b := l[i]
			if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_') {
				return "", fmt.Errorf("%w: %q holds a byte no host name has (0x%02x)", ErrMalformed, safe(h), b)
			}
		}
	}
	last := strings.ToLower(labels[len(labels)-1])
	if numeric(last) {
		return "", fmt.Errorf("%w: %q ends in a number, which is read as an address by some resolvers; write the address in full", ErrMalformed, safe(h))
	}
	return strings.ToLower(name), nil
}

// numeric says whether a label is a number in decimal, octal or hex.
func numeric(l string) bool {
	if s, ok := strings.CutPrefix(l, "0x"); ok {
		_, err := strconv.ParseUint(s, 16, 64)
		return err == nil || s == ""
	}
	_, err := strconv.ParseUint(l, 10, 64)
	return err == nil
}

// safe is h for an error message: control bytes and non-ASCII quoted.
func safe(h string) string {
	if len(h) > 300 {
		h = h[:300]
	}
	return strconv.QuoteToASCII(h)[1 : len(strconv.QuoteToASCII(h))-1]
}

// dial resolves r's host (for a name: only now, after the policy allowed
// it), checks every address and dials the first checked one that answers.
func (c *Call) dial(ctx context.Context, rec *Record) (net.Conn, error) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(rec.Host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		res := c.p.Resolver
		if res == nil {
			res = net.DefaultResolver
		}
		// Rooted: the resolver's search list never makes the name another
		// one (evil.example.com.corp.internal for evil.example.com).
		addrs, err = res.LookupNetIP(ctx, "ip", rec.Host+".")
		if err != nil || len(addrs) == 0 {
			rec.Outcome, rec.Why = RefusedUnresolved, "the name has no address"
			if err != nil {
				var de *net.DNSError
				if errors.As(err, &de) {
					rec.Why = "the name could not be resolved: " + de.Err
				} else {
					rec.Why = "the name could not be resolved"
				}
			}
			return nil, errors.New(rec.Why)
		}
	}
	if len(addrs) > MaxAddrs {
		rec.Outcome, rec.Why = RefusedByAddress, fmt.Sprintf("it answers %d addresses, more than the %d checked", len(addrs), MaxAddrs)
		return nil, errors.New(rec.Why)
	}
	why := c.p.AddrWhy
	if why == nil {
		why = netaddr.DialWhy
	}
	for _, a := range addrs {
		if w := why(a); w != "" {
			rec.Addr = a.Unmap()
			rec.Outcome, rec.Why = RefusedByAddress, fmt.Sprintf("%s resolves to %s, %s, which chock never connects to", rec.Host, a.Unmap(), w)
			return nil, errors.New(rec.Why)
		}
	}
	timeout := c.p.DialTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	d := net.Dialer{Timeout: timeout}
	var errs []error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(rec.Port)).String())
		if err == nil {
			rec.Addr = a.Unmap()
			return conn, nil
		}
		errs = append(errs, err)
	}
	rec.Outcome, rec.Why = DialFailed, "no address answered"
	if len(errs) > 0 {
		var oe *net.OpError
		if errors.As(errs[len(errs)-1], &oe) && oe.Err != nil {
			rec.Why = "no address answered: " + oe.Err.Error()
		}
	}
	return nil, errors.New(rec.Why)
}

// errStopped is a connection dialled as the call's proxy stopped.
var errStopped = errors.New("the call is over")

// upstream dials rec's destination (dial) and tracks the connection, so Close
// closes it too; release undoes both.
func (c *Call) upstream(rec *Record) (net.Conn, error) {
	up, err := c.dial(c.ctx, rec)
	if err != nil {
		return nil, err
	}
	if !c.track(up) {
		up.Close()
		rec.Outcome, rec.Why = DialFailed, errStopped.Error()
		return nil, errStopped
	}
	return up, nil
}

func (c *Call) release(up net.Conn) {
	c.untrack(up)
	up.Close()
}

// decide cleans the destination and asks the Decider; it fills rec.
func (c *Call) decide(host string, port int, via string, rec *Record) (Verdict, bool) {
	rec.Via, rec.Port = via, port
	h, err := CleanHost(host)
	if err != nil {
		rec.Host, rec.Outcome, rec.Why = safe(host), RefusedMalformed, err.Error()
		return Verdict{Refusal: "chock refused the connection: " + err.Error()}, false
	}
	rec.Host = h
	if port <= 0 || port > 65535 {
		rec.Outcome, rec.Why = RefusedMalformed, fmt.Sprintf("port %d", port)
		return Verdict{Refusal: fmt.Sprintf("chock refused the connection: port %d is not a port", port)}, false
	}
	if netaddr.Localhost(h) {
		rec.Outcome, rec.Why = RefusedByAddress, "localhost is this machine"
		return Verdict{Refusal: "chock refused the connection to " + h + ": localhost is this machine (a program reaches its own call's loopback directly)"}, false
	}
	v := c.d.Decide(c.ctx, Request{Host: h, Port: port, Via: via})
	rec.Action, rec.Allowed, rec.Layer, rec.Rule = v.Action, v.Allow, v.Layer, v.Rule
	if !v.Allow {
		rec.Outcome, rec.Why = RefusedByPolicy, v.Refusal
		return v, false
	}
	return v, true
}

// pipe copies both ways until either side is done, counting the bytes.
func pipe(a, b net.Conn, rec *Record, pre []byte) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rec.Received += relay(a, b)
		closeWrite(a)
	}()
	if len(pre) > 0 {
		n, _ := b.Write(pre)
		rec.Sent += int64(n)
	}
	rec.Sent += relay(b, a)
	closeWrite(b)
	wg.Wait()
}

// relayBuffer is how much one relay reads at a time: large reads keep a
// download's syscalls few (a splice through the kernel's 64 KiB pipe
// measured slower on loopback: BenchmarkEgressDownload).
const relayBuffer = 256 << 10

var relayBuffers = sync.Pool{New: func() any { b := make([]byte, relayBuffer); return &b }}

// relay copies from src to dst until src ends or either fails, and
// returns how many bytes it wrote.
func relay(dst io.Writer, src io.Reader) int64 {
	buf := relayBuffers.Get().(*[]byte)
	defer relayBuffers.Put(buf)
	// The wrappers hide ReadFrom and WriteTo: the copy is this buffer's.
	n, _ := io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, *buf)
	return n
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}
