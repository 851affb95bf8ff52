package runtime

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/waitfor"
	"github.com/chockhq/chock/runtime/sandbox"
	"github.com/chockhq/chock/runtime/sessionlog"
)

// The attacks of the sandbox issue, each with real programs, against a
// policy like README's: gh and git allowed, gh given GITHUB_TOKEN, curl
// denied.
const attackPolicy = `.{
    .policy = .{
        .allow = .{ "exec.path.gh", "exec.path.git", "exec.path.cp", "exec.path.sh", "exec.path.env", "exec.path.xargs",
                    "exec.path.find", "exec.path.python3", "exec.path.true", "exec.path.cat", "exec.path.sleep", "exec.path.setsid",
                    "exec.path.base64", "exec.path.ls", "exec.path.mv", "exec.path.rm", "secret.use.GITHUB_TOKEN" },
        .deny = .{ "exec.path.curl" },
    },
    .secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.gh" } },
}`

type attack struct {
	*fixture
	bin string // a PATH directory of the test's own, holding gh
	// empty is a PATH directory holding nothing: a call must not plant a
	// program there either.
	empty string
	work  string // where the agent's calls run
	hits  atomic.Int64
	url   string // a local server that counts every request curl makes
}

func newAttack(t *testing.T) *attack {
	t.Helper()
	for _, p := range []string{"/usr/bin/git", "/usr/bin/python3", "/usr/bin/curl", "/usr/bin/printenv", "/usr/bin/setsid"} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is needed (.ci/run installs it): %v", p, err)
		}
	}
	a := &attack{bin: t.TempDir(), empty: t.TempDir(), work: t.TempDir()}
	// gh stands in as a copy of printenv: it prints the variable it is
	// asked for, so a test sees whether it was given the token.
	b, err := os.ReadFile("/usr/bin/printenv")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.bin, "gh"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.hits.Add(1) }))
	t.Cleanup(srv.Close)
	a.url = srv.URL
	a.fixture = newFixtureWith(t, attackPolicy, values, nil, func(o *Options) {
		o.BaseEnv = []string{"PATH=" + a.bin + ":" + a.empty + ":/usr/bin:/bin", "HOME=" + a.work}
	})
	return a
}

func (a *attack) run(t *testing.T, argv ...string) (*Result, error) {
	t.Helper()
	return a.s.Run(context.Background(), &Call{Tool: "exec", Timeout: 20 * time.Second, Exec: &ExecRequest{Argv: argv, Dir: a.work}})
}

func (a *attack) events(t *testing.T, kind string) []sessionlog.Event {
	t.Helper()
	evs, err := sessionlog.Read(a.logDir, a.s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var out []sessionlog.Event
	for _, ev := range evs {
		if ev["kind"] == kind {
			out = append(out, ev)
		}
	}
	return out
}

// TestPlantedProgramIsRefused: a file the agent made and named gh is not
// the gh the policy means; no call can plant one in a PATH directory.
func TestPlantedProgramIsRefused(t *testing.T) {
	a := newAttack(t)
	if res, err := a.run(t, "gh", "GITHUB_TOKEN"); err != nil || res.Stdout != "[secret:GITHUB_TOKEN]\n" {
		t.Fatalf("the real gh: %v %+v", err, res)
	}
	// git alone writes an executable named gh, as the attacker did.
	hash := ""
	for i, argv := range [][]string{
		{"git", "init", "-q", "w"},
		{"git", "-C", "w", "hash-object", "-w", "--stdin"},
		{"git", "-C", "w", "update-index", "--add", "--cacheinfo", "100755,HASH,gh"},
		{"git", "-C", "w", "checkout-index", "gh"},
	} {
		for j := range argv {
			argv[j] = strings.ReplaceAll(argv[j], "HASH", hash)
		}
		stdin := ""
		if i == 1 {
			stdin = "#!/bin/sh\nprintenv GITHUB_TOKEN\n"
		}
		res, err := a.s.Run(context.Background(), &Call{Tool: "exec", Exec: &ExecRequest{Argv: argv, Dir: a.work, Stdin: stdin}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%v: %v %+v", argv, err, res)
		}
		if i == 1 {
			hash = strings.TrimSpace(res.Stdout)
		}
	}
	if st, err := os.Stat(filepath.Join(a.work, "w", "gh")); err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("git wrote no executable gh: %v", err)
	}
	res, err := a.s.Run(context.Background(), &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"./gh"}, Dir: filepath.Join(a.work, "w")}})
	var r *RefusedError
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "but exec.path.gh means "+filepath.Join(a.bin, "gh")) {
		t.Fatalf("./gh: %v %+v", err, res)
	}
	// Planting in a PATH directory: read-only in every call.
	res, err = a.run(t, "cp", "/usr/bin/printenv", filepath.Join(a.bin, "gh"))
	if err != nil || res.ExitCode == 0 || !strings.Contains(res.Stderr, "Read-only file system") {
		t.Fatalf("cp over the PATH's gh: %v %+v", err, res)
	}
	res, err = a.run(t, "sh", "-c", "echo '#!/bin/sh' > "+filepath.Join(a.bin, "git"))
	if err != nil || res.ExitCode == 0 {
		t.Fatalf("planting git: %v %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(a.bin, "git")); err == nil {
		t.Fatal("a call planted a program in a PATH directory")
	}
	res, err = a.run(t, "cp", "/usr/bin/printenv", filepath.Join(a.empty, "gh"))
	if err != nil || res.ExitCode == 0 || !strings.Contains(res.Stderr, "Read-only file system") {
		t.Fatalf("cp into a PATH directory holding nothing allowed: %v %+v", err, res)
	}
	assertNoLeak(t, a.fixture)
}

// TestSymlinkIsDecidedAsItsTarget: a link named ls to curl runs as curl,
// which the policy denies.
func TestSymlinkIsDecidedAsItsTarget(t *testing.T) {
	a := newAttack(t)
	if err := os.Symlink("/usr/bin/curl", filepath.Join(a.work, "ls")); err != nil {
		t.Fatal(err)
	}
	_, err := a.run(t, "./ls", a.url)
	var r *RefusedError
	if !errors.As(err, &r) || r.Action != "exec.path.curl" {
		t.Fatalf("./ls -> curl: %v", err)
	}
	if a.hits.Load() != 0 {
		t.Fatal("curl ran")
	}
}

// TestNestedExecsStayInPolicy: programs that run other programs (git's
// ! alias, env, xargs, find -exec, python3's subprocess) cannot run the
// denied curl, and every nested exec is logged with its parent and rule.
func TestNestedExecsStayInPolicy(t *testing.T) {
	a := newAttack(t)
	calls := [][]string{
		{"git", "-c", "alias.x=!curl -s " + a.url, "x"},
		{"env", "curl", "-s", a.url},
		{"sh", "-c", "echo " + a.url + " | xargs curl -s"},
		{"find", "/usr/bin/true", "-exec", "curl", "-s", a.url, ";"},
		{"python3", "-c", "import subprocess; subprocess.run(['curl', '-s', '" + a.url + "'])"},
		{"python3", "-c", "import os; os.execv('/usr/bin/curl', ['curl', '" + a.url + "'])"},
		// A copy of curl in memory or in a writable folder is no program.
		{"python3", "-c", "import os; fd = os.memfd_create('x'); os.write(fd, open('/usr/bin/curl','rb').read()); os.execv('/proc/self/fd/%d' % fd, ['curl', '" + a.url + "'])"},
		{"sh", "-c", "cp /usr/bin/curl ./c && chmod +x ./c && ./c -s " + a.url},
	}
	for _, argv := range calls {
		if _, err := a.run(t, argv...); err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
	}
	if n := a.hits.Load(); n != 0 {
		t.Fatalf("curl reached the server %d times", n)
	}
	refused := map[string]bool{}
	for _, ev := range a.events(t, "exec.nested") {
		if ev["program"] == "/usr/bin/curl" && ev["outcome"] == "refused" {
			refused[fmt.Sprint(ev["parent"])] = true
			if ev["action"] != "exec.path.curl" || ev["decision"] != "deny" || !strings.Contains(fmt.Sprint(ev["rule"]), "exec.path.curl (chock.zon:") {
				t.Errorf("exec.nested %v", ev)
			}
		}
	}
	// The git alias runs sh, which runs curl; the others run curl (the
	// last two run a copy, which is not /usr/bin/curl).
	for i := 1; i <= len(calls)-2; i++ {
		if !refused["c"+strconv.Itoa(i)] {
			t.Errorf("no refused exec.nested of curl for call c%d", i)
		}
	}
	// An allowed nested exec runs, and says so.
	if res, err := a.run(t, "env", "true"); err != nil || res.ExitCode != 0 {
		t.Fatalf("env true: %v %+v", err, res)
	}
	ran := false
	for _, ev := range a.events(t, "exec.nested") {
		if ev["parent"] == "c9" && ev["program"] == "/usr/bin/true" && ev["outcome"] == "run" && ev["action"] == "exec.path.true" {
			ran = true
		}
	}
	if !ran {
		t.Error("env true: no exec.nested event with outcome run")
	}
}

// TestCallsCannotReadChockOrEachOther: chock's /proc is not in a call's
// pid namespace; a background command cannot see a later call at all.
func TestCallsCannotReadChockOrEachOther(t *testing.T) {
	a := newAttack(t)
	res, err := a.run(t, "cat", fmt.Sprintf("/proc/%d/environ", os.Getpid()))
	if err != nil || res.ExitCode == 0 {
		t.Fatalf("cat chock's environ: %v %+v", err, res)
	}
	res, err = a.run(t, "ls", "/proc")
	if err != nil || strings.Contains(res.Stdout, strconv.Itoa(os.Getpid())+"\n") {
		t.Fatalf("ls /proc: %v %+v", err, res)
	}
	out := filepath.Join(a.work, "seen")
	bg := "for i in 1 2 3 4 5 6 7 8 9 10; do cat /proc/[0-9]*/environ 2>/dev/null; sleep 0.2; done > " + out
	started, err := a.s.Run(context.Background(), &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"sh", "-c", bg}, Background: true, Dir: a.work}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.run(t, "gh", "sleep-marker"); err != nil {
		t.Fatal(err)
	}
	a.run(t, "sh", "-c", "sleep 1")
	// The background command has looked for 2 s when it ends.
	if ok, err := waitfor.Exit(started.PID, 20*time.Second); !ok || err != nil {
		t.Fatalf("the background command did not end: %v", err)
	}
	b, _ := os.ReadFile(out)
	if strings.Contains(string(b), values["GITHUB_TOKEN"]) {
		t.Fatal("a background command read a later call's secret")
	}
	// chock itself is not dumpable: a same-uid process cannot read it.
	if b, _ := exec.Command("sh", "-c", fmt.Sprintf("grep -c dumpable /proc/%d/status; cat /proc/%d/environ | wc -c", os.Getpid(), os.Getpid())).CombinedOutput(); len(b) == 0 {
		t.Log("status unreadable")
	}
}

// TestSetsidChildDiesWithTheCall: a child in a session of its own, or
// double-forked, is killed when the call's program exits.
func TestSetsidChildDiesWithTheCall(t *testing.T) {
	a := newAttack(t)
	marker := fmt.Sprintf("30.%d7", os.Getpid())
	if _, err := a.run(t, "sh", "-c", "setsid sleep "+marker+" >/dev/null 2>&1 & (sleep "+marker+" &) ; echo started"); err != nil {
		t.Fatal(err)
	}
	if left := exitAll(marker, 2*time.Second); len(left) > 0 {
		t.Fatalf("processes %v outlived their call", left)
	}
}

// exitAll waits, up to timeout in all, for each process whose command
// line holds marker to exit; it returns those still there.
func exitAll(marker string, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for _, p := range withMarker(marker) {
		pid, _ := strconv.Atoi(p)
		waitfor.Exit(pid, time.Until(deadline))
	}
	return withMarker(marker)
}

// withMarker are the host pids whose command line holds marker.
func withMarker(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		st, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if strings.Contains(string(b), marker) && !strings.Contains(string(st), ") Z ") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestValueStaysMaskedForTheSession: a value a granted program left in a
// file is masked when a later call prints it, exact or base64'd, and the
// agent's argv holding it is masked in the log.
func TestValueStaysMaskedForTheSession(t *testing.T) {
	a := newAttack(t)
	if _, err := a.run(t, "gh", "GITHUB_TOKEN"); err != nil {
		t.Fatal(err)
	}
	v := values["GITHUB_TOKEN"]
	if err := os.WriteFile(filepath.Join(a.work, "left"), []byte(v+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"cat", "left"}, {"base64", "left"}, {"sh", "-c", "base64 -w0 left; echo; (printf x; cat left) | base64 -w0"}, {"sh", "-c", "printf '%s' " + v}} {
		res, err := a.run(t, argv...)
		if err != nil {
			t.Fatalf("%v: %v", argv, err)
		}
		if !strings.Contains(res.Stdout+res.Stderr, "[secret:GITHUB_TOKEN]") && argv[0] != "sh" {
			t.Errorf("%v: %q not masked", argv, res.Stdout)
		}
		assertNoForms(t, fmt.Sprint(argv), res.Stdout+res.Stderr)
	}
	assertNoLeak(t, a.fixture)
}

// TestSandboxRecordedInTheLog: session.start says whether calls run in a
// sandbox.
func TestSandboxRecordedInTheLog(t *testing.T) {
	f := newFixtureWith(t, testPolicy, values, nil, func(o *Options) { o.NoSandbox = true })
	evs, _ := sessionlog.Read(f.logDir, f.s.ID)
	if evs[0]["sandbox"] != "off (--no-sandbox)" {
		t.Fatalf("session.start %v", evs[0])
	}
}

// TestPinnedProgramRunsOnlyAsItsFiles: a program chock.zon pins runs only
// as one of its files; one elsewhere on the PATH is refused by name.
func TestPinnedProgramRunsOnlyAsItsFiles(t *testing.T) {
	pinned, shadow := t.TempDir(), t.TempDir()
	b, err := os.ReadFile("/usr/bin/printenv")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{pinned, shadow} {
		if err := os.WriteFile(filepath.Join(d, "gh"), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	policy := strings.Replace(attackPolicy, ".secrets =", `.programs = .{ .{ .name = "gh", .paths = .{"`+filepath.Join(pinned, "gh")+`"} } },
    .secrets =`, 1)
	f := newFixtureWith(t, policy, values, nil, func(o *Options) { o.BaseEnv = []string{"PATH=" + shadow + ":" + pinned + ":/usr/bin"} })
	_, err = f.exec(t, 0, "gh", "HOME")
	var r *RefusedError
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "exec.path.gh means "+filepath.Join(pinned, "gh")) {
		t.Fatalf("the shadowing gh: %v", err)
	}
	// The pinned file runs by its path, but it is not what gh means on the
	// session's PATH, so it is given no secret.
	res, err := f.exec(t, 0, filepath.Join(pinned, "gh"), "GITHUB_TOKEN")
	if err != nil || res.ExitCode != 1 || res.Stdout != "" {
		t.Fatalf("the pinned gh: %v %+v", err, res)
	}
}

// TestDeclaredCallRunsInsideItsProgram: env declares printenv, which the
// policy does not allow: env may run it, sh may not.
func TestDeclaredCallRunsInsideItsProgram(t *testing.T) {
	policy := strings.Replace(attackPolicy, ".secrets =", `.programs = .{ .{ .name = "env", .calls = .{"exec.path.printenv"} } },
    .secrets =`, 1)
	f := newFixtureWith(t, policy, values, nil, func(o *Options) { o.BaseEnv = []string{"PATH=/usr/bin:/bin", "HOME=/declared-home"} })
	res, err := f.exec(t, 0, "env", "printenv", "HOME")
	if err != nil || res.Stdout != "/declared-home\n" {
		t.Fatalf("env printenv: %v %+v", err, res)
	}
	res, err = f.exec(t, 0, "sh", "-c", "printenv HOME")
	if err != nil || res.ExitCode != 126 {
		t.Fatalf("sh -c printenv: %v %+v", err, res)
	}
	evs, _ := sessionlog.Read(f.logDir, f.s.ID)
	var seen []string
	for _, ev := range evs {
		if ev["kind"] == "exec.nested" && ev["program"] == "/usr/bin/printenv" {
			seen = append(seen, fmt.Sprint(ev["parent"], " ", ev["outcome"], " ", ev["rule"]))
		}
	}
	// (sh tries each PATH directory in turn: one refusal each.)
	if len(seen) < 2 || !strings.HasPrefix(seen[0], `c1 run declared by .programs "env" (chock.zon:`) {
		t.Fatalf("exec.nested of printenv: %q", seen)
	}
	for _, s := range seen[1:] {
		if !strings.HasPrefix(s, "c2 refused default") {
			t.Fatalf("exec.nested of printenv: %q", seen)
		}
	}
}

// TestNoSandboxNoCall: where the sandbox cannot be made the call is
// refused with the reason, never run bare.
func TestNoSandboxNoCall(t *testing.T) {
	for _, init := range []string{"/nonexistent/chock-sandbox", "/bin/true"} {
		marker := filepath.Join(t.TempDir(), "ran")
		f := newFixtureWith(t, attackPolicy, values, nil, func(o *Options) { o.SandboxInit = init })
		_, err := f.exec(t, 0, "sh", "-c", "echo > "+marker)
		var r *RefusedError
		if !errors.As(err, &r) || !strings.Contains(r.Reason, "the sandbox could not be made") || !strings.Contains(r.Reason, "--no-sandbox") {
			t.Fatalf("init %s: %v", init, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("init %s: the call ran without a sandbox", init)
		}
	}
}

// TestStoreAndLogsAreHidden: no call reads the file store's
// credentials.json or the session logs, or rewrites the init.
func TestStoreAndLogsAreHidden(t *testing.T) {
	a := newAttack(t)
	for _, argv := range [][]string{
		{"cat", filepath.Join(a.cfgDir, "credentials.json")},
		{"sh", "-c", "cat " + a.logDir + "/*.jsonl"},
	} {
		res, err := a.run(t, argv...)
		if err != nil || res.ExitCode == 0 || strings.Contains(res.Stdout, "[secret:") {
			t.Errorf("%v: %v %+v", argv, err, res)
		}
	}
	if _, err := os.Stat(filepath.Join(a.cfgDir, "credentials.json")); err != nil {
		t.Fatalf("the store is not where the test put it: %v", err)
	}
	exe, _ := os.Executable()
	res, err := a.run(t, "sh", "-c", "echo > "+filepath.Join(filepath.Dir(exe), "planted-init"))
	if err != nil || res.ExitCode == 0 {
		t.Errorf("writing beside chock's binary: %v %+v", err, res)
	}
}

// TestReplacedInitIsRefused: an init binary that changed since the
// session started makes no sandbox.
func TestReplacedInitIsRefused(t *testing.T) {
	dir := t.TempDir()
	init := filepath.Join(dir, "chock-sandbox")
	exe, _ := os.Executable()
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(init, b, 0o755)
	f := newFixtureWith(t, attackPolicy, values, nil, func(o *Options) { o.SandboxInit = init })
	if res, err := f.exec(t, 0, "true"); err != nil || res.ExitCode != 0 {
		t.Fatalf("with the init as it was: %v %+v", err, res)
	}
	os.Remove(init)
	os.WriteFile(init, b, 0o755)
	_, err = f.exec(t, 0, "true")
	var r *RefusedError
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "not the file the session started with") {
		t.Fatalf("a replaced init: %v", err)
	}
}

// TestDeclaredCallCappedByOrg: an org ceiling that does not allow a
// declared call keeps it from running, and a project rule naming it as
// deny does too.
func TestDeclaredCallCappedByOrg(t *testing.T) {
	project := strings.Replace(attackPolicy, ".secrets =", `.programs = .{ .{ .name = "env", .calls = .{"exec.path.printenv", "exec.path.id", "exec.path.whoami"} } },
    .secrets =`, 1)
	project = strings.Replace(project, `.deny = .{ "exec.path.curl" }`, `.deny = .{ "exec.path.curl", "exec.path.id" }`, 1)
	org := `.{ .name = "acme", .policy = .{ .default = .allow, .deny = .{"exec.path.printenv"} } }`
	p, ds, err := load.FromSources(context.Background(), load.Input{Configs: []load.Source{{Name: "chock.zon", Data: []byte(project)}},
		Orgs: []load.Source{{Name: "org.zon", Data: []byte(org)}}, Unlinted: true})
	if err != nil {
		t.Fatalf("%v %v", err, ds)
	}
	s, err := New(context.Background(), Options{Engine: p.Engine, Config: p.Config, LogDir: t.TempDir(), TempDir: t.TempDir(), BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for prog, want := range map[string]int{"printenv": 126, "id": 126, "whoami": 0} {
		res, err := s.Run(context.Background(), &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"env", prog}}})
		if err != nil || res.ExitCode != want {
			t.Errorf("env %s: %v %+v, want exit %d", prog, err, res, want)
		}
	}
}

// TestBackgroundDiesWithTheSession: a background command's sandbox goes
// when the session ends.
func TestBackgroundDiesWithTheSession(t *testing.T) {
	a := newAttack(t)
	marker := fmt.Sprintf("40.%d9", os.Getpid())
	if _, err := a.s.Run(context.Background(), &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"sh", "-c", "setsid sleep " + marker + " & sleep " + marker}, Background: true}}); err != nil {
		t.Fatal(err)
	}
	// Nothing tells of another process starting: its command line is
	// looked for.
	if !waitfor.PollWithin(2*time.Second, func() bool { return len(withMarker(marker)) >= 2 }) {
		t.Fatalf("%d background processes started", len(withMarker(marker)))
	}
	a.s.Close()
	if left := exitAll(marker, 2*time.Second); len(left) > 0 {
		t.Fatalf("background processes %v outlived the session", left)
	}
}

// TestNestedLogSaysWhatRan: the ELF interpreter exec'd by name is refused
// (the kernel still loads it for every allowed program), and the log says
// so.
func TestNestedLogSaysWhatRan(t *testing.T) {
	a := newAttack(t)
	interp, _, err := sandbox.Interpreter("/usr/bin/true")
	if err != nil || interp == "" {
		t.Fatalf("no ELF interpreter for /usr/bin/true: %v", err)
	}
	if _, err := a.run(t, "sh", "-c", interp+" /usr/bin/true"); err != nil {
		t.Fatal(err)
	}
	for _, ev := range a.events(t, "exec.nested") {
		if ev["path"] == interp {
			if ev["outcome"] != "refused" || !strings.Contains(fmt.Sprint(ev["why"]), "ELF interpreter") {
				t.Fatalf("exec.nested of the interpreter: %v", ev)
			}
			return
		}
	}
	t.Fatal("no exec.nested event for the interpreter")
}

// TestOnlyWritableFoldersAreWritable: outside the working directory and
// the scratch folders a call writes nothing, so it cannot move a folder
// above a protected path or plant where a later session looks; the
// policy's own files are read-only even inside a writable folder.
func TestOnlyWritableFoldersAreWritable(t *testing.T) {
	scratch, other := t.TempDir(), t.TempDir()
	policy := filepath.Join(scratch, "chock.zon")
	os.WriteFile(policy, []byte(attackPolicy), 0o644)
	store := filepath.Join(other, "config")
	os.MkdirAll(filepath.Join(store, "chock"), 0o700)
	f := newFixtureWith(t, attackPolicy, values, nil, func(o *Options) {
		o.Scratch = []string{scratch, o.TempDir} // TempDir: where file-bound secrets' mount points are
		o.Protect = []string{policy}
	})
	for _, tc := range []struct {
		script string
		ok     bool
	}{
		{"echo x > " + filepath.Join(scratch, "w"), true},
		{"echo x > " + filepath.Join(other, "w"), false},
		{"mv " + store + " " + store + "2", false},
		{"echo '.{}' > " + policy, false},
		{"mv " + policy + " " + policy + ".old", false},
		{"rm -f " + policy, false},
		{"echo x > /dev/null", true},
	} {
		res, err := f.s.Run(context.Background(), &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"sh", "-c", tc.script}, Dir: scratch}})
		if err != nil || (res.ExitCode == 0) != tc.ok {
			t.Errorf("%s: %v %+v, want ok=%v", tc.script, err, res, tc.ok)
		}
	}
	if b, _ := os.ReadFile(policy); string(b) != attackPolicy {
		t.Error("a call changed the policy file")
	}
	if _, err := os.Stat(store); err != nil {
		t.Errorf("a call moved the store's folder: %v", err)
	}
}

func TestOutermost(t *testing.T) {
	a := t.TempDir()
	b := filepath.Join(a, "b")
	os.Mkdir(b, 0o755)
	got := outermost([]string{b, a, a, "/nonexistent", b})
	if len(got) != 1 || got[0] != a {
		t.Fatalf("outermost: %v", got)
	}
}
