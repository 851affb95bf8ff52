package action

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"golang.org/x/net/idna"
)

// hostProfile converts internationalised names to punycode with the
// lookup rules browsers use, and refuses what DNS cannot carry.
var hostProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.ValidateLabels(true),
	idna.VerifyDNSLength(true),
	idna.BidiRule(),
)

// HostSegments writes a host the way every chock action does: last label
// first, lower case, trailing dot dropped, internationalised names in
// punycode. An IPv4 literal keeps its own order ("10.0.0.7"); an IPv6
// literal is one segment in brackets ("[2001:db8::1]").
func HostSegments(host string) (string, error) {
	h := strings.TrimSuffix(host, ".")
	if h == "" {
		return "", fmt.Errorf("empty host")
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		ip, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !ip.Is6() {
			return "", fmt.Errorf("invalid IPv6 literal %q", host)
		}
		return "[" + ip.WithZone("").String() + "]", nil
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Is4() {
			return ip.String(), nil
		}
		return "[" + ip.WithZone("").String() + "]", nil
	}
	ascii, err := hostProfile.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("invalid host name %q: %v", host, err)
	}
	ascii = strings.ToLower(ascii)
	labels := strings.Split(ascii, ".")
	for _, l := range labels {
		if l == "" {
			return "", fmt.Errorf("invalid host name %q: empty label", host)
		}
		if strings.ContainsAny(l, "* \t") {
			return "", fmt.Errorf("invalid host name %q: '*' or white space in a host", host)
		}
	}
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, "."), nil
}

// URLHost returns the host of an absolute URL, as written (no port).
func URLHost(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid URL: %v", err)
	}
	if u.Host == "" {
		return "", fmt.Errorf("URL %q has no host", raw)
	}
	h := u.Hostname()
	if strings.Contains(u.Host, "[") {
		h = "[" + h + "]"
	}
	return h, nil
}

// MCPHost builds mcp.<server>.host.<host> for a server's URL.
func MCPHost(server, rawURL string) (string, error) { return urlAction(MCPHostNS, rawURL, server) }

// Fetch builds net.fetch.<host> for a URL the fetch_url tool reaches.
func Fetch(rawURL string) (string, error) { return urlAction(NetFetch, rawURL) }

// urlAction builds an action of n whose last placeholder is rawURL's host.
func urlAction(n *Namespace, rawURL string, values ...string) (string, error) {
	h, err := URLHost(rawURL)
	if err != nil {
		return "", err
	}
	return n.Build(append(values, h)...)
}

// Connect builds net.connect.<host> for a connection a call's program
// makes to host (a name, or an IP literal, IPv6 with or without brackets).
func Connect(host string) (string, error) {
	if !strings.HasPrefix(host, "[") && strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return NetConnect.Build(host)
}

// Exec builds exec.path.<program> from argv[0]: its base name, where a dot
// separates segments ("python3.12" → exec.path.python3.12).
func Exec(argv0 string) (string, error) { return ExecPath.Build(argv0) }

// MCPTool builds mcp.<server>.tool.<name> for a tool a server declares; a
// dot in the name separates segments, as it does in a program's name.
func MCPTool(server, tool string) (string, error) { return MCPToolNS.Build(server, tool) }
