package runtime

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fence test's two network namespaces, joined by a veth pair: chock's
// side (fenceChock, 192.0.2.1) and the listener's (fenceHost, 192.0.2.2),
// both in TEST-NET-1 (RFC 5737), which exists only inside them.
const (
	fenceChockAddr = "192.0.2.1"
	fenceHostAddr  = "192.0.2.2"
	fencePort      = "8080"
	fenceInnerEnv  = "CHOCK_TEST_FENCE_INNER"
	fenceServeEnv  = "CHOCK_TEST_FENCE_SERVE"
	fenceGoProgEnv = "CHOCK_TEST_FENCE_BIN"
)

// fenceHosts is the /etc/hosts chock's side resolves with (bound over the
// real one in its mount namespace): the proxy resolves by the system's
// resolver, as in the product.
const fenceHosts = `127.0.0.1 localhost
192.0.2.2 allowed.test denied.test pypi.test
127.0.0.1 loop.test
192.0.2.1 own.test
`

// maybeServeFence is the listener side of the fence test, when this test
// binary was started as it (in the listener's namespace): a file server
// on 192.0.2.2:8080 that prints each request's path, and "ready" once it
// listens. It never returns then.
func maybeServeFence() {
	dir := os.Getenv(fenceServeEnv)
	if dir == "" {
		return
	}
	l, err := net.Listen("tcp", fenceHostAddr+":"+fencePort)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	fs := http.FileServer(http.Dir(dir))
	fmt.Println("ready")
	http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		fmt.Println("request", r.URL.Path)
		mu.Unlock()
		fs.ServeHTTP(w, r)
	}))
	os.Exit(0)
}

// run runs a command, failing the test with its output on an error.
func runCmd(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestNetworkFence runs real programs (curl, python3's urllib, git over
// http, a Go program) in real sessions whose chock side is in a network
// namespace this test makes, joined by a veth pair to a second one that
// holds the only listener: allowed hosts are reached through chock's
// egress proxy; a host the policy does not allow is refused with the
// rule named, and nothing a program does without the proxy (--noproxy,
// a raw socket, UDP, DNS) reaches the listener.
func TestNetworkFence(t *testing.T) {
	if os.Getenv(fenceInnerEnv) != "" {
		fenceInner(t)
		return
	}
	if os.Getuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("the fence test makes network namespaces, which needs root")
		}
		t.Skip("the fence test makes network namespaces, which needs root")
	}
	for _, tool := range []string{"ip", "curl", "git", "go", "/usr/bin/python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the fence test needs %s: %v", tool, err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("chk%d", os.Getpid()%100000)
	nsChock, nsHost := tag+"-c", tag+"-h"
	for _, ns := range []string{nsChock, nsHost} {
		runCmd(t, nil, "ip", "netns", "add", ns)
		t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	}
	runCmd(t, nil, "ip", "-n", nsChock, "link", "add", "vc", "type", "veth", "peer", "name", "vh", "netns", nsHost)
	for _, c := range [][]string{
		{"-n", nsChock, "addr", "add", fenceChockAddr + "/24", "dev", "vc"}, {"-n", nsHost, "addr", "add", fenceHostAddr + "/24", "dev", "vh"},
		{"-n", nsChock, "link", "set", "vc", "up"}, {"-n", nsHost, "link", "set", "vh", "up"},
		{"-n", nsChock, "link", "set", "lo", "up"}, {"-n", nsHost, "link", "set", "lo", "up"},
	} {
		runCmd(t, nil, "ip", c...)
	}
	// What the listener serves: a file, and a git repository over git's
	// dumb http protocol.
	site := t.TempDir()
	os.WriteFile(filepath.Join(site, "hello.txt"), []byte("hello from the listener\n"), 0o644)
	work := t.TempDir()
	genv := []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"}
	runCmd(t, genv, "git", "init", "-q", work)
	os.WriteFile(filepath.Join(work, "README"), []byte("fenced repo\n"), 0o644)
	runCmd(t, genv, "git", "-C", work, "add", "README")
	runCmd(t, genv, "git", "-C", work, "commit", "-qm", "one")
	runCmd(t, genv, "git", "clone", "-q", "--bare", work, filepath.Join(site, "repo.git"))
	runCmd(t, genv, "git", "-C", filepath.Join(site, "repo.git"), "update-server-info")
	// The Go program a call runs.
	bin := t.TempDir()
	src := filepath.Join(t.TempDir(), "main.go")
	os.WriteFile(src, []byte(`package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	r, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(r.Body)
	fmt.Printf("%d %s", r.StatusCode, b)
}
`), 0o644)
	runCmd(t, []string{"CGO_ENABLED=0", "GO111MODULE=off"}, "go", "build", "-o", filepath.Join(bin, "goget"), src)

	srv := exec.Command("ip", "netns", "exec", nsHost, exe, "-test.run=^$")
	srv.Env = append(os.Environ(), fenceServeEnv+"="+site)
	srvOut, _ := srv.StdoutPipe()
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(srvOut)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "ready" {
			t.Fatalf("the listener: %s", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the listener did not start")
	}
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte(fenceHosts), 0o644)
	inner := exec.Command("ip", "netns", "exec", nsChock, "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts,
		exe, "-test.run=^TestNetworkFence$", "-test.v", "-test.count=1")
	inner.Env = append(os.Environ(), fenceInnerEnv+"=1", fenceGoProgEnv+"="+bin)
	out, err := inner.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNetworkFence") {
		t.Fatalf("chock's side: %v\n%s", err, out)
	}
	t.Logf("chock's side:\n%s", out)
	srv.Process.Kill()
	srv.Wait()
	var seen []string
	for l := range lines {
		seen = append(seen, l)
	}
	all := strings.Join(seen, "\n")
	for _, want := range []string{"request /hello.txt", "request /repo.git/info/refs", "request /go-allowed"} {
		if !strings.Contains(all, want) {
			t.Errorf("the listener never saw %q; it saw:\n%s", want, all)
		}
	}
	if strings.Contains(all, "denied") {
		t.Errorf("a refused connection reached the listener:\n%s", all)
	}
}

// fenceInner is the fence test on chock's side of the veth pair.
func fenceInner(t *testing.T) {
	bin := os.Getenv(fenceGoProgEnv)
	policy := `.{
    .policy = .{
        .allow = .{ "exec.path.curl", "exec.path.python3", "exec.path.git", "exec.path.git-remote-http", "exec.path.goget",
                    "net.connect.test.allowed", "net.connect.test.loop", "net.connect.test.own" },
        .rules = .{
            .{ .action = "net.connect.test.denied", .decision = .deny, .why = "the test's forbidden host" },
        },
    },
    .programs = .{ .{ .name = "python3", .connects = .{"net.connect.test.pypi"} } },
}`
	env := func(o *Options) {
		o.BaseEnv = []string{"PATH=/usr/lib/git-core:/usr/bin:/bin:" + bin, "HOME=/nonexistent", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	}
	f := newFixtureWith(t, policy, nil, nil, env)
	url := func(host, path string) string { return "http://" + host + ":" + fencePort + path }
	urlopen := func(u string) []string {
		return []string{"python3", "-c", `import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end="")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode(), end=""); sys.exit(3)`, u}
	}
	deniedRule := regexp.MustCompile(`refused by chock: net\.connect\.test\.denied \(port 8080\) is deny by project rule "net\.connect\.test\.denied" at chock\.zon:\d+:\d+; why: the test's forbidden host`)
	type tc struct {
		name   string
		argv   []string
		out    string         // in stdout, when set
		exit   int            // -1: any non-zero
		refuse *regexp.Regexp // the one network line, when set
	}
	pyNet := `import socket, sys
def attempt(what, f):
    try:
        f(); print(what, "reached")
    except OSError as e:
        print(what, "failed", e.errno)
attempt("tcp", lambda: socket.create_connection(("192.0.2.2", 8080), 5).sendall(b"GET /denied-raw HTTP/1.0\r\n\r\n"))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
attempt("udp", lambda: u.sendto(b"denied-udp", ("192.0.2.2", 8080)))
query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x06denied\x04test\x00\x00\x01\x00\x01"
attempt("dns", lambda: u.sendto(query, ("192.0.2.2", 53)))
try:
    socket.getaddrinfo("nowhere.test", 80); print("lookup reached")
except socket.gaierror as e:
    print("lookup failed")
`
	for _, c := range []tc{
		{name: "curl", argv: []string{"curl", "-sS", url("allowed.test", "/hello.txt")}, out: "hello from the listener"},
		{name: "curl CONNECT", argv: []string{"curl", "-sS", "-p", url("allowed.test", "/hello.txt")}, out: "hello from the listener"},
		{name: "curl SOCKS5", argv: []string{"curl", "-sS", "-x", "socks5h://127.0.0.1:1080", url("allowed.test", "/hello.txt")}, out: "hello from the listener"},
		{name: "python3", argv: urlopen(url("allowed.test", "/hello.txt")), out: "hello from the listener"},
		{name: "git", argv: []string{"git", "clone", "-q", url("allowed.test", "/repo.git"), "/tmp/clone"}},
		{name: "go", argv: []string{"goget", url("allowed.test", "/go-allowed")}, out: "404"},
		{name: "curl denied", argv: []string{"curl", "-sS", "-f", url("denied.test", "/denied-curl")}, exit: -1, refuse: deniedRule},
		{name: "curl CONNECT denied", argv: []string{"curl", "-sS", "-p", url("denied.test", "/denied-connect")}, exit: -1, refuse: deniedRule},
		{name: "curl SOCKS5 denied", argv: []string{"curl", "-sS", "-x", "socks5h://127.0.0.1:1080", url("denied.test", "/denied-socks")}, exit: -1, refuse: deniedRule},
		{name: "python3 denied", argv: urlopen(url("denied.test", "/denied-python")), exit: 3, out: "the test's forbidden host", refuse: deniedRule},
		{name: "git denied", argv: []string{"git", "clone", "-q", url("denied.test", "/denied-git.git"), "/tmp/clone2"}, exit: -1, refuse: deniedRule},
		{name: "go denied", argv: []string{"goget", url("denied.test", "/denied-go")}, out: "403", refuse: deniedRule},
		{name: "curl --noproxy", argv: []string{"curl", "-sS", "--noproxy", "*", "--connect-timeout", "5", url("denied.test", "/denied-noproxy")}, exit: -1},
		{name: "raw, udp, dns", argv: []string{"python3", "-c", pyNet}, out: "tcp failed 101\nudp failed 101\ndns failed 101\nlookup failed\n"},
		{name: "loopback name", argv: []string{"curl", "-sS", url("loop.test", "/")}, out: "loop.test resolves to 127.0.0.1, a loopback address (this machine), which chock never connects to",
			refuse: regexp.MustCompile(`^refused by chock: net\.connect\.test\.loop \(port 8080\): loop\.test resolves to 127\.0\.0\.1, a loopback address`)},
		{name: "own address", argv: []string{"curl", "-sS", url("own.test", "/")}, out: "an address of this machine",
			refuse: regexp.MustCompile(`^refused by chock: net\.connect\.test\.own \(port 8080\): own\.test resolves to 192\.0\.2\.1, an address of this machine`)},
		{name: ".connects from python3", argv: urlopen(url("pypi.test", "/hello.txt")), out: "hello from the listener"},
		{name: ".connects not from curl", argv: []string{"curl", "-sS", url("pypi.test", "/denied-pypi-curl")}, out: "net.connect.test.pypi (port 8080) is deny by project's default",
			refuse: regexp.MustCompile(`^refused by chock: net\.connect\.test\.pypi \(port 8080\) is deny by project's default$`)},
	} {
		res, err := f.exec(t, 60*time.Second, c.argv...)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		switch {
		case c.exit == -1 && res.ExitCode == 0, c.exit != -1 && res.ExitCode != c.exit:
			t.Errorf("%s: exit %d, want %d\n%+v", c.name, res.ExitCode, c.exit, res)
		case !strings.Contains(res.Stdout, c.out):
			t.Errorf("%s: stdout %q, want %q in it\n%+v", c.name, res.Stdout, c.out, res)
		case c.refuse == nil && len(res.Network) > 0:
			t.Errorf("%s: refused connections %q", c.name, res.Network)
		case c.refuse != nil && (len(res.Network) == 0 || !c.refuse.MatchString(res.Network[0])):
			t.Errorf("%s: network lines %q, want one matching %s\n%+v", c.name, res.Network, c.refuse, res)
		}
	}
	if res, err := f.exec(t, 20*time.Second, "git", "-C", "/tmp/clone", "log", "--format=%s"); err != nil || res.Stdout != "one\n" {
		t.Errorf("the clone: %+v %v", res, err)
	}
	log, _ := os.ReadFile(f.s.LogPath())
	for _, want := range []string{`"kind":"net.connect"`, `"outcome":"connected"`, `"outcome":"refused_by_policy"`, `"outcome":"refused_by_address"`, `"address":"192.0.2.2"`,
		`"rule":"declared by .programs \"python3\" .connects net.connect.test.pypi`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the session log has no %s:\n%s", want, log)
		}
	}
	// A local server with mcp.S.network reaches the listener through the
	// proxy too, a host rule narrowing it.
	srv := newFixtureWith(t, fmt.Sprintf(`.{
    .policy = .{
        .allow = .{ "mcp.helper.tool.*", "mcp.helper.network" },
        .deny = .{ "mcp.helper.host.test.denied" },
    },
    .mcp_servers = .{ .{ .name = "helper", .command = %s } },
}`, helperCommand(t, "get")), nil, nil, env)
	if sts, err := srv.s.StartServers(context.Background()); err != nil || !sts[0].Started {
		t.Fatalf("%+v %v", sts, err)
	}
	for u, want := range map[string]string{url("allowed.test", "/hello.txt"): "200 hello from the listener",
		url("denied.test", "/denied-server"): `403 refused by chock: mcp.helper.host.test.denied (port 8080) is deny by project rule "mcp.helper.host.test.denied"`} {
		res, err := srv.s.Run(context.Background(), &Call{Tool: "mcp", MCP: &MCPRequest{Server: "helper", Tool: "get", Arguments: []byte(`{"url":"` + u + `"}`)}})
		if err != nil || !strings.HasPrefix(res.Content, want) {
			t.Errorf("the server's get %s: %+v %v", u, res, err)
		}
	}
	// No rule: no network (an empty allow set is none, not all).
	empty := newFixtureWith(t, `.{ .policy = .{ .allow = .{ "exec.path.curl" } } }`, nil, nil, env)
	res, err := empty.exec(t, 30*time.Second, "curl", "-sS", url("allowed.test", "/denied-empty"))
	if err != nil || len(res.Network) != 1 || !strings.Contains(res.Network[0], "net.connect.test.allowed (port 8080) is deny by project's default") {
		t.Errorf("an empty allow set: %+v %v", res, err)
	}
}
