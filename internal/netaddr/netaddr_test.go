package netaddr

import (
	"net/netip"
	"testing"
)

func TestWhy(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1": "a loopback address (this machine)", "::1": "a loopback address (this machine)",
		"::ffff:127.0.0.1": "a loopback address (this machine)", "0.0.0.0": "the unspecified address (this machine)",
		"::": "the unspecified address (this machine)", "169.254.169.254": "the cloud metadata address",
		"::ffff:169.254.169.254": "the cloud metadata address", "fd00:ec2::254": "the cloud metadata address",
		"100.100.100.200": "the cloud metadata address", "169.254.10.10": "a link-local address",
		"fe80::1": "a link-local address", "224.0.0.1": "a multicast address", "ff02::1": "a multicast address",
		"203.0.113.10": "", "2001:db8::1": "", "10.0.0.7": "",
	} {
		if got := Why(netip.MustParseAddr(in)); got != want {
			t.Errorf("Why(%s) = %q, want %q", in, got, want)
		}
	}
}

func TestHostWhy(t *testing.T) {
	for in, want := range map[string]string{
		"localhost": "localhost is this machine", "a.localhost.": "localhost is this machine",
		"[fe80::1]": "a link-local address", "169.254.10.10": "a link-local address",
		"mcp.notion.com": "", "[2001:db8::1]": "",
	} {
		if got := HostWhy(in); got != want {
			t.Errorf("HostWhy(%s) = %q, want %q", in, got, want)
		}
	}
}
