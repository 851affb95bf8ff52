// Package netguard decides which addresses chock may connect to and pins
// every connection to an address it checked: a host that resolves onto
// this machine (loopback, the unspecified address), the cloud metadata
// address, or link-local space is refused whatever a policy says about the
// name; every address a name answers with is checked; a name answering
// more addresses than are checked is refused rather than truncated; no
// proxy is ever used and redirects are refused.
package netguard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/chockhq/chock/internal/netaddr"
)

// ErrRefused is wrapped by every refusal of an address.
var ErrRefused = errors.New("address refused")

// RefusedError names the host, the address and why.
type RefusedError struct {
	Host string
	Addr netip.Addr
	Why  string
}

func (e *RefusedError) Error() string {
	if e.Addr.IsValid() {
		return fmt.Sprintf("%s resolves to %s, %s", e.Host, e.Addr, e.Why)
	}
	return fmt.Sprintf("%s: %s", e.Host, e.Why)
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// Why says why the production policy refuses an address, or "": the
// address rule, owned by internal/netaddr, which lint applies too.
func Why(a netip.Addr) string { return netaddr.Why(a) }

// MaxAddrs is how many addresses of one name are checked.
const MaxAddrs = 16

// Checker resolves names and checks addresses.
type Checker struct {
	// Lookup resolves a host; net.DefaultResolver.LookupNetIP by default.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Policy says why an address is refused ("" allows it); Why by
	// default. Tests of other parts may replace it; the production policy
	// is Why.
	Policy func(netip.Addr) string
	// MaxAddrs overrides the package's MaxAddrs.
	MaxAddrs int
	// DialTimeout bounds one connection attempt (10 s by default).
	DialTimeout time.Duration
	// TLS, when set, is the TLS configuration (tests give their own roots);
	// the system's by default.
	TLS *tls.Config
}

func (c *Checker) policy(a netip.Addr) string {
	if c.Policy != nil {
		return c.Policy(a)
	}
	return Why(a)
}

// Resolve returns the addresses of host, every one checked; any refused
// address, or more addresses than are checked, refuses the host.
func (c *Checker) Resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	h := strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if netaddr.Localhost(h) {
		return nil, &RefusedError{Host: host, Why: "localhost is this machine"}
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(h); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lookup := c.Lookup
		if lookup == nil {
			lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
				return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			}
		}
		addrs, err = lookup(ctx, h)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", host, err)
		}
	}
	limit := c.MaxAddrs
	if limit <= 0 {
		limit = MaxAddrs
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	if len(addrs) > limit {
		return nil, &RefusedError{Host: host, Why: fmt.Sprintf("it answers %d addresses, more than the %d checked", len(addrs), limit)}
	}
	for _, a := range addrs {
		if why := c.policy(a); why != "" {
			return nil, &RefusedError{Host: host, Addr: a, Why: why}
		}
	}
	return addrs, nil
}

// DialContext dials addr ("host:port") on an address Resolve checked, so a
// proxy setting or a second DNS answer cannot move the connection.
func (c *Checker) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := c.Resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	timeout := c.DialTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	d := net.Dialer{Timeout: timeout}
	var errs []error
	for _, a := range addrs {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// ErrRedirect is returned for a redirect, which is always refused.
var ErrRedirect = errors.New("redirect refused")

// Client returns an HTTP client that uses no proxy, dials only checked
// addresses, and refuses redirects.
func (c *Checker) Client(timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil, // whatever HTTPS_PROXY says
		DialContext:           c.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          8,
		TLSClientConfig:       c.TLS,
		IdleConnTimeout:       30 * time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			return fmt.Errorf("%w: to %s", ErrRedirect, req.URL.Redacted())
		},
	}
}
