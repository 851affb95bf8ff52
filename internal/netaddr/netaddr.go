// Package netaddr is the one owner of the address rule: which hosts chock
// never reaches whatever a policy says (this machine, the cloud metadata
// service, link-local and multicast space). lint checks a url with it
// before a session starts, and runtime/netguard checks every resolved
// address with it, so both say the same thing.
package netaddr

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// metadata are cloud metadata endpoints.
func metadata(a netip.Addr) bool {
	switch a {
	case netip.AddrFrom4([4]byte{169, 254, 169, 254}), // AWS, GCP, Azure, OpenStack
		netip.MustParseAddr("fd00:ec2::254"),         // AWS over IPv6
		netip.AddrFrom4([4]byte{100, 100, 100, 200}): // Alibaba Cloud
		return true
	}
	return false
}

// Why says why an address is refused, or "" when it may be reached.
// IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
func Why(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "not an address"
	case a.IsLoopback():
		return "a loopback address (this machine)"
	case a.IsUnspecified():
		return "the unspecified address (this machine)"
	case metadata(a):
		return "the cloud metadata address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast() || a.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	return ""
}

// Localhost says whether a host name is this machine by name: localhost
// and every name under .localhost (RFC 6761).
func Localhost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// Loopback says whether a host as a url names it is this machine's
// loopback: a loopback address literal (127.0.0.0/8, ::1, with or without
// brackets, no zone) or a localhost name (Localhost). What a name resolves
// to is not this check's to know: a caller that trusts the answer checks
// the address it connects to as well.
func Loopback(host string) bool {
	h := strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if Localhost(h) {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Zone() == "" && a.Unmap().IsLoopback()
}

// HostWhy says why a host as a url names it (a name, an IPv4 literal, an
// IPv6 literal with or without brackets) is refused before it is even
// resolved, or "": a localhost name, or a literal address Why refuses.
func HostWhy(host string) string {
	h := strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if Localhost(h) {
		return "localhost is this machine"
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return Why(a)
	}
	return ""
}

// LoopbackListen checks an address to listen on, HOST:PORT, for a server
// only this machine may reach (chock mcp serve --http): HOST must be a
// loopback address literal (127.0.0.0/8, ::1, in brackets for IPv6).
// A name, even localhost, is refused: what it resolves to is not this
// check's to know, and 0.0.0.0 or any other address reaches further.
func LoopbackListen(hostport string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q is not HOST:PORT: %v", hostport, err)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: the host must be a loopback address (127.0.0.1 or ::1), not a name", hostport)
	}
	if a.Zone() != "" || !a.Unmap().IsLoopback() {
		why := "not a loopback address"
		if w := Why(a); w != "" && !a.Unmap().IsLoopback() {
			why = w
		}
		return netip.AddrPort{}, fmt.Errorf("%q: %s; only 127.0.0.1 or ::1 may be listened on", hostport, why)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: the port must be a number from 0 to 65535", hostport)
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(p)), nil
}

// DialWhy is Why for an address about to be dialled by chock itself on a
// program's behalf: Why, and any address of this machine's own interfaces
// (a service listening on all of them is this machine too), read afresh
// at each call. An interface list that cannot be read refuses.
func DialWhy(a netip.Addr) string {
	if why := Why(a); why != "" {
		return why
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "this machine's own addresses could not be read, so no address is known not to be one"
	}
	u := a.Unmap()
	for _, ia := range addrs {
		if p, ok := ia.(*net.IPNet); ok {
			if own, ok := netip.AddrFromSlice(p.IP); ok && own.Unmap() == u {
				return "an address of this machine"
			}
		}
	}
	return ""
}
