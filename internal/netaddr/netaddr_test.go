package netaddr

import (
	"net"
	"net/netip"
	"strings"
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

func TestLoopbackListen(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:0": "127.0.0.1:0", "127.0.0.1:8931": "127.0.0.1:8931", "127.9.9.9:1": "127.9.9.9:1",
		"[::1]:8931": "[::1]:8931", "[::ffff:127.0.0.1]:80": "127.0.0.1:80",
	} {
		got, err := LoopbackListen(in)
		if err != nil || got.String() != want {
			t.Errorf("LoopbackListen(%s) = %v, %v; want %s", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"0.0.0.0:8931":      "the unspecified address",
		"[::]:8931":         "the unspecified address",
		"10.0.0.7:8931":     "not a loopback address",
		"192.168.1.2:80":    "not a loopback address",
		"localhost:8931":    "not a name",
		"example.com:80":    "not a name",
		"127.0.0.1":         "not HOST:PORT",
		"127.0.0.1:http":    "the port must be a number",
		"127.0.0.1:70000":   "the port must be a number",
		"[fe80::1%lo]:8931": "a link-local address",
	} {
		_, err := LoopbackListen(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoopbackListen(%s) = %v, want an error with %q", in, err, want)
		}
	}
}

func TestLoopback(t *testing.T) {
	for in, want := range map[string]bool{
		"localhost": true, "LOCALHOST.": true, "a.localhost": true, "127.0.0.1": true, "127.9.9.9": true,
		"::1": true, "[::1]": true, "::ffff:127.0.0.1": true, "[fe80::1%lo]": false, "0.0.0.0": false,
		"10.0.0.1": false, "opa.example.com": false, "localhost.example.com": false, "": false, "[::]": false,
	} {
		if got := Loopback(in); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestDialWhy(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ia := range addrs {
		p := ia.(*net.IPNet)
		a, _ := netip.AddrFromSlice(p.IP)
		if DialWhy(a) == "" {
			t.Errorf("DialWhy(%s), an address of this machine, = \"\"", a)
		}
	}
	if got := DialWhy(netip.MustParseAddr("127.0.0.1")); got != "a loopback address (this machine)" {
		t.Errorf("DialWhy(127.0.0.1) = %q", got)
	}
	if got := DialWhy(netip.MustParseAddr("192.0.2.77")); got != "" {
		t.Errorf("DialWhy(192.0.2.77) = %q (is it this machine's?)", got)
	}
}
