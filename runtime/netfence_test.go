package runtime

import (
	"os"
	"strings"
	"testing"
	"time"
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
