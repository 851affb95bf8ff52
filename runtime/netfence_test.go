package runtime

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chockhq/chock/eval/load"
)

// TestNoNetworkByDefault: with no net.connect rule, a call has no network
// (the CVE-2025-66479 case: an empty allow set is none, not all): curl
// through the proxy is refused with the rule named, in the 403 body and
// the call's result; curl told to ignore the proxy has no route at all.
func TestNoNetworkByDefault(t *testing.T) {
	f := newFixture(t, `.{ .policy = .{ .allow = .{ "exec.path.curl", "exec.path.sh" } } }`, nil, nil)
	res, err := f.exec(t, 20*time.Second, "curl", "-sS", "http://example.com/")
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "refused by chock: net.connect.com.example (port 80) is deny by project's default") {
		t.Fatalf("%+v", res)
	}
	if len(res.Network) != 1 || !strings.Contains(res.Network[0], "net.connect.com.example (port 80) is deny by project's default") {
		t.Fatalf("network lines %q", res.Network)
	}
	res, err = f.exec(t, 20*time.Second, "curl", "-sS", "--noproxy", "*", "--connect-timeout", "5", "http://192.0.2.1/")
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "Couldn't connect") && !strings.Contains(res.Stderr, "unreachable") {
		t.Fatalf("--noproxy: %+v", res)
	}
	log, _ := os.ReadFile(f.s.LogPath())
	if !strings.Contains(string(log), `"kind":"net.connect"`) || !strings.Contains(string(log), `"outcome":"refused_by_policy"`) {
		t.Fatalf("log:\n%s", log)
	}
}

// countAsker answers every question with yes, or no, and counts them.
type countAsker struct {
	yes bool
	mu  sync.Mutex
	n   map[string]int
}

func (a *countAsker) Ask(_ context.Context, q Question) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[string]int{}
	}
	a.n[q.Action]++
	return a.yes, nil
}

// TestConnectAskHoldsForTheCall: a host the policy asks about is asked
// once in a call, the answer holding for the call's later connections to
// it; a yes still meets the address rule (127.0.0.2 is this machine); a no
// refuses with the rule named; nobody to ask refuses saying so.
func TestConnectAskHoldsForTheCall(t *testing.T) {
	policy := `.{ .policy = .{ .allow = .{ "exec.path.curl", "exec.path.sh" }, .ask = .{ "net.connect.127.0.0.2" } } }`
	script := "curl -sS http://127.0.0.2:9/a; curl -sS http://127.0.0.2:9/b"
	yes := &countAsker{yes: true}
	f := newFixture(t, policy, nil, yes)
	res, err := f.exec(t, 20*time.Second, "sh", "-c", script)
	if err != nil {
		t.Fatal(err)
	}
	if yes.n["net.connect.127.0.0.2"] != 1 || len(res.Network) != 2 || !strings.Contains(res.Network[1], "127.0.0.2 resolves to 127.0.0.2, a loopback address") {
		t.Fatalf("asked %v; %+v", yes.n, res)
	}
	// The next call asks again: an answer holds for its call only.
	if _, err := f.exec(t, 20*time.Second, "curl", "-sS", "http://127.0.0.2:9/c"); err != nil || yes.n["net.connect.127.0.0.2"] != 2 {
		t.Fatalf("asked %v, %v", yes.n, err)
	}
	no := &countAsker{}
	f = newFixture(t, policy, nil, no)
	res, _ = f.exec(t, 20*time.Second, "sh", "-c", script)
	want := regexp.MustCompile(`^refused by chock: net\.connect\.127\.0\.0\.2 \(port 9\): ask by project rule "net\.connect\.127\.0\.0\.2" at chock\.zon:1:\d+; the answer was no$`)
	if no.n["net.connect.127.0.0.2"] != 1 || len(res.Network) != 2 || !want.MatchString(res.Network[0]) || res.Network[0] != res.Network[1] {
		t.Fatalf("asked %v; %q", no.n, res.Network)
	}
	f = newFixture(t, policy, nil, nil)
	res, _ = f.exec(t, 20*time.Second, "curl", "-sS", "http://127.0.0.2:9/")
	if len(res.Network) != 1 || !strings.HasSuffix(res.Network[0], "and nobody can be asked in this session") {
		t.Fatalf("%q", res.Network)
	}
}

// TestServerNetworkThroughTheProxy: a local server with mcp.S.network
// allowed has only its own loopback and chock's proxy: a host a rule
// denies as mcp.S.host.<host> is refused with the rule, a host no rule
// names takes mcp.S.network's allow and then meets the address rule (the
// metadata address here: Go's client reaches a loopback one directly, which
// is the server's own loopback), and
// each connection is logged under the server.
func TestServerNetworkThroughTheProxy(t *testing.T) {
	policy := fmt.Sprintf(`.{
    .policy = .{
        .allow = .{ "mcp.helper.tool.*", "mcp.helper.network" },
        .rules = .{ .{ .action = "mcp.helper.host.com.example", .decision = .deny, .why = "not the helper's" } },
    },
    .mcp_servers = .{ .{ .name = "helper", .command = %s } },
}`, helperCommand(t, "get"))
	f := newFixture(t, policy, nil, nil)
	sts, err := f.s.StartServers(context.Background())
	if err != nil || len(sts) != 1 || !sts[0].Started || !sts[0].Network {
		t.Fatalf("%+v %v", sts, err)
	}
	call := func(tool string, args string) string {
		res, err := f.s.Run(context.Background(), &Call{Tool: "mcp", MCP: &MCPRequest{Server: "helper", Tool: tool, Arguments: []byte(args)}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res.Content
	}
	if got := call("net", "{}"); got != "lo up 2" && got != "lo up 1" {
		t.Errorf("the server's interfaces: %q", got)
	}
	if got := call("env", "{}"); !strings.Contains(got, "HTTP_PROXY=http://127.0.0.1:3128") || !strings.Contains(got, "ALL_PROXY=socks5h://127.0.0.1:1080") {
		t.Errorf("the server's environment: %q", got)
	}
	got := call("get", `{"url":"http://example.com/"}`)
	if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, `refused by chock: mcp.helper.host.com.example (port 80) is deny by project rule "mcp.helper.host.com.example" at chock.zon:4:34 at start; why: not the helper's`) {
		t.Errorf("a denied host: %q", got)
	}
	got = call("get", `{"url":"http://169.254.169.254/latest/"}`)
	if !strings.HasPrefix(got, "403 ") || !strings.Contains(got, "169.254.169.254 resolves to 169.254.169.254, the cloud metadata address") {
		t.Errorf("a host mcp.helper.network lets, on loopback: %q", got)
	}
	f.s.Close()
	log, _ := os.ReadFile(f.s.LogPath())
	for _, want := range []string{`"kind":"net.connect","time":`, `"call":"server:helper","host":"example.com","port":80,"via":"http","action":"mcp.helper.host.com.example","decision":"deny"`,
		`"call":"server:helper","host":"169.254.169.254","port":80,"via":"http","action":"mcp.helper.network","decision":"allow"`, `"network":"through chock's egress proxy"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the log has no %s:\n%s", want, log)
		}
	}
}

// TestProxyEnv: whatever the base environment says of a proxy, in either
// case, a call's proxy variables are its own listeners'.
func TestProxyEnv(t *testing.T) {
	env := proxyEnv([]string{"PATH=/usr/bin", "http_proxy=http://evil:1", "Https_Proxy=http://evil:2", "NO_PROXY=*", "ALL_PROXY=socks5://evil:3", "HOME=/h"})
	got := strings.Join(env, " ")
	want := "PATH=/usr/bin HOME=/h HTTP_PROXY=http://127.0.0.1:3128 http_proxy=http://127.0.0.1:3128 HTTPS_PROXY=http://127.0.0.1:3128 https_proxy=http://127.0.0.1:3128 " +
		"ALL_PROXY=socks5h://127.0.0.1:1080 all_proxy=socks5h://127.0.0.1:1080 NO_PROXY=localhost,127.0.0.1,::1 no_proxy=localhost,127.0.0.1,::1"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestServerHostCappedByOrg: a project rule allowing a local server's
// host does not widen an org ceiling whose default refuses it, though the
// org lets the server reach the network at all. (The metadata address: a
// regression meets the address rule, never the network.)
func TestServerHostCappedByOrg(t *testing.T) {
	policy := fmt.Sprintf(`.{
    .policy = .{ .allow = .{ "mcp.helper.tool.*", "mcp.helper.network", "mcp.helper.host.169.254.169.254" } },
    .mcp_servers = .{ .{ .name = "helper", .command = %s } },
}`, helperCommand(t, "get"))
	p, ds, err := load.FromSources(context.Background(), load.Input{Configs: []load.Source{{Name: "chock.zon", Data: []byte(policy)}},
		Orgs: []load.Source{{Name: "org.zon", Data: []byte(`.{ .name = "acme", .policy = .{ .default = .deny, .allow = .{ "mcp.helper.tool.*", "mcp.helper.network" } } }`)}}, Unlinted: true})
	if err != nil {
		t.Fatalf("%v\n%v", err, ds)
	}
	f := newFixtureWith(t, policy, nil, nil, func(o *Options) { o.Engine, o.Config = p.Engine, p.Config })
	if sts, err := f.s.StartServers(context.Background()); err != nil || !sts[0].Started || !sts[0].Network {
		t.Fatalf("%+v %v", sts, err)
	}
	res, err := f.s.Run(context.Background(), &Call{Tool: "mcp", MCP: &MCPRequest{Server: "helper", Tool: "get", Arguments: []byte(`{"url":"http://169.254.169.254/"}`)}})
	if err != nil || !strings.Contains(res.Content, `403 refused by chock: mcp.helper.host.169.254.169.254 (port 80) is deny by org:acme's default`) {
		t.Fatalf("%+v %v", res, err)
	}
}
