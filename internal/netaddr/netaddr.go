// Package netaddr is the one owner of the address rule: which hosts chock
// never reaches whatever a policy says (this machine, the cloud metadata
// service, link-local and multicast space). lint checks a url with it
// before a session starts, and runtime/netguard checks every resolved
// address with it, so both say the same thing.
package netaddr

import (
	"net/netip"
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
