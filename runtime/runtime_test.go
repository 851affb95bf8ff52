package runtime

import (
	"context"
	"errors"
	"fmt"
	"github.com/chockhq/chock/internal/rounds"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/eval/load"
	"github.com/chockhq/chock/internal/waitfor"
	"github.com/chockhq/chock/runtime/credstore"
	"github.com/chockhq/chock/runtime/redact"
	"github.com/chockhq/chock/runtime/sessionlog"
)

// The known secret values of the leak tests. No test output, log, error or
// file may ever contain one.
var values = map[string]string{
	"GITHUB_TOKEN": "ghp_LEAKCHECKgithubvalue0123456789",
	"GCP_KEY":      "gcp-LEAKCHECK-file-bound-value-42",
	"DEPLOY_KEY":   "deploy-LEAKCHECK-asked-value-99",
	"BG_TOKEN":     "bg-LEAKCHECK-background-value-77",
}

const testPolicy = `.{
    .policy = .{
        .allow = .{ "exec.path.sh", "exec.path.true", "exec.path.false", "exec.path.cat", "exec.path.head", "exec.path.tail", "exec.path.sleep", "exec.path.stat", "secret.use.GITHUB_TOKEN", "secret.use.GCP_KEY", "secret.use.BG_TOKEN", "secret.use.MISSING" },
        .ask = .{ "secret.use.DEPLOY_KEY", "exec.path.ls" },
        .deny = .{ "exec.path.curl", "secret.use.REFUSED" },
    },
    // sh holds secrets: it runs only what it declares.
    .programs = .{ .{ .name = "sh", .calls = .{ "exec.path.cat", "exec.path.head", "exec.path.tail", "exec.path.sleep", "exec.path.stat", "exec.path.true", "exec.path.false" } } },
    .secrets = .{
        .{ .name = "GITHUB_TOKEN", .to = "exec.path.sh" },
        .{ .name = "GCP_KEY", .to = "exec.path.sh", .bind = "file", .as = "GCP_FILE" },
        .{ .name = "BG_TOKEN", .to = "exec.path.sh" },
    },
}`

type fixture struct {
	s       *Session
	logDir  string
	tempDir string
	cfgDir  string
}

func newFixture(t *testing.T, policy string, stored map[string]string, asker Asker) *fixture {
	t.Helper()
	return newFixtureWith(t, policy, stored, asker, nil)
}

// testEngine compiles a chock.zon source into an engine, through the
// library's one loader; lint errors do not stop it, since the run time must
// hold against a policy nobody linted.
func testEngine(tb testing.TB, policy string) (*eval.Engine, *config.Config) {
	tb.Helper()
	p, ds, err := load.FromSources(context.Background(), load.Input{Configs: []load.Source{{Name: "chock.zon", Data: []byte(policy)}}, Unlinted: true})
	if err != nil {
		tb.Fatalf("%v\n%v", err, ds)
	}
	return p.Engine, p.Config
}

// newFixtureWith is newFixture with the session's options adjusted by opt.
func newFixtureWith(t *testing.T, policy string, stored map[string]string, asker Asker, opt func(*Options)) *fixture {
	t.Helper()
	e, c := testEngine(t, policy)
	f := &fixture{logDir: t.TempDir(), tempDir: t.TempDir(), cfgDir: t.TempDir()}
	store, err := credstore.Open(config.StoreFile, credstore.Options{ConfigDir: f.cfgDir})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range stored {
		if err := store.Set(context.Background(), k, v); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{Engine: e, Config: c, Store: store, Asker: asker,
		LogDir: f.logDir, TempDir: f.tempDir, BaseEnv: []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}}
	if opt != nil {
		opt(&o)
	}
	f.s, err = New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.s.Close() })
	return f
}

func (f *fixture) exec(t *testing.T, timeout time.Duration, argv ...string) (*Result, error) {
	t.Helper()
	return f.s.Run(context.Background(), &Call{Tool: "exec", Timeout: timeout, Exec: &ExecRequest{Argv: argv}})
}

// assertNoForms checks that text holds no value of the leak tests, in
// its exact form or any encoded form the session masks.
func assertNoForms(t *testing.T, where, text string) {
	t.Helper()
	for name, v := range values {
		for _, f := range redact.Forms(v) {
			if strings.Contains(text, f) {
				t.Errorf("the value of %s leaked into %s (as %q)", name, where, f)
			}
		}
	}
}

// assertNoLeak checks every place a value could escape to.
func assertNoLeak(t *testing.T, f *fixture, outputs ...string) {
	t.Helper()
	f.s.Close()
	check := func(where, text string) { assertNoForms(t, where, text) }
	for i, o := range outputs {
		check(fmt.Sprintf("output %d", i), o)
	}
	logBytes, err := os.ReadFile(f.s.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	check("the session log", string(logBytes))
	if fi, _ := os.Stat(f.s.LogPath()); fi.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(f.tempDir)
	for _, e := range entries {
		t.Errorf("a file was left behind in TMPDIR: %s", e.Name())
	}
}

func TestEnvSecretIsGivenAndRedacted(t *testing.T) {
	f := newFixture(t, testPolicy, values, nil)
	res, err := f.exec(t, 0, "sh", "-c", `echo "token=$GITHUB_TOKEN"; echo "file=$(cat "$GCP_FILE")"; test "$(stat -c %a "$GCP_FILE")" = 400 && echo mode-ok`)
	if err != nil {
		t.Fatal(err)
	}
	want := "token=[secret:GITHUB_TOKEN]\nfile=[secret:GCP_KEY]\nmode-ok\n"
	if res.Stdout != want || res.ExitCode != 0 {
		t.Fatalf("stdout %q exit %d", res.Stdout, res.ExitCode)
	}
	evs, _ := sessionlog.Read(f.logDir, f.s.ID)
	var used []string
	for _, ev := range evs {
		if ev["kind"] == "secret.used" {
			line := fmt.Sprintf(`{"kind":"secret.used","name":%q,"action":%q,"call":%q,"bind":%q,"variable":%q}`, ev["name"], ev["action"], ev["call"], ev["bind"], ev["variable"])
			used = append(used, line)
			// Stamped as every event is, and tied to its call.
			if _, err := time.Parse(time.RFC3339Nano, fmt.Sprint(ev["time"])); err != nil {
				t.Errorf("secret.used has no time: %v", ev)
			}
			if len(ev) != 7 {
				t.Errorf("secret.used has other fields than kind, time, name, action, call, bind, variable: %v", ev)
			}
		}
	}
	if len(used) != 3 || used[0] != `{"kind":"secret.used","name":"GITHUB_TOKEN","action":"exec.path.sh","call":"c1","bind":"env","variable":"GITHUB_TOKEN"}` ||
		used[1] != `{"kind":"secret.used","name":"GCP_KEY","action":"exec.path.sh","call":"c1","bind":"file","variable":"GCP_FILE"}` {
		t.Errorf("secret.used events: %v", used)
	}
	assertNoLeak(t, f, res.Stdout, res.Stderr)
}

func TestNextCallHasNoSecret(t *testing.T) {
	policy := strings.Replace(testPolicy, `.{ .name = "GITHUB_TOKEN", .to = "exec.path.sh" },`, `.{ .name = "GITHUB_TOKEN", .to = "exec.path.true" },`, 1)
	f := newFixture(t, policy, values, nil)
	if _, err := f.exec(t, 0, "true"); err != nil {
		t.Fatal(err)
	}
	res, err := f.exec(t, 0, "sh", "-c", `echo "[$GITHUB_TOKEN]"; env | grep -c LEAKCHECK || true`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Stdout, "[]\n") {
		t.Errorf("a secret for exec.path.true reached sh: %q", res.Stdout)
	}
	assertNoLeak(t, f, res.Stdout)
}

func TestStraddledOutputAndErrors(t *testing.T) {
	f := newFixture(t, testPolicy, values, nil)
	// The value printed in two pieces with a pause between, on stderr, with
	// a failing exit.
	res, err := f.exec(t, 0, "sh", "-c", `printf '%s' "$GITHUB_TOKEN" | head -c 16 >&2; sleep 0.2; printf '%s' "$GITHUB_TOKEN" | tail -c +17 >&2; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stderr != "[secret:GITHUB_TOKEN]" || res.ExitCode != 3 {
		t.Errorf("stderr %q exit %d", res.Stderr, res.ExitCode)
	}
	// A value in an error message: a working directory named after it.
	_, err = f.s.Run(context.Background(), &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"sh", "-c", "true"}, Dir: "/nonexistent/" + values["GITHUB_TOKEN"]}})
	if err == nil || !strings.Contains(err.Error(), "[secret:GITHUB_TOKEN]") {
		t.Errorf("error not redacted: %v", err)
	}
	assertNoLeak(t, f, res.Stdout, res.Stderr, fmt.Sprint(err))
}

func TestTimeLimit(t *testing.T) {
	f := newFixture(t, testPolicy, values, nil)
	start := time.Now()
	// The budget covers making the sandbox too: 2 s leaves a loaded
	// machine room for that, and is still far from the program's 30 s.
	res, err := f.exec(t, 2*time.Second, "sh", "-c", `echo "$GITHUB_TOKEN"; cat "$GCP_FILE"; sleep 30`)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.ExitCode != -1 || time.Since(start) > 20*time.Second {
		t.Fatalf("timed out %v exit %d after %v", res.TimedOut, res.ExitCode, time.Since(start))
	}
	if !strings.Contains(res.Stdout, "[secret:GITHUB_TOKEN]") || !strings.Contains(res.Stdout, "[secret:GCP_KEY]") {
		t.Errorf("stdout %q", res.Stdout)
	}
	assertNoLeak(t, f, res.Stdout)
}

func TestRefusals(t *testing.T) {
	f := newFixture(t, testPolicy+"", values, nil)
	var r *RefusedError
	// A denied program.
	_, err := f.exec(t, 0, "curl", "https://example.invalid")
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "deny by project rule \"exec.path.curl\"") || r.Explanation == nil {
		t.Fatalf("curl: %v", err)
	}
	// An ask without anybody to ask.
	_, err = f.exec(t, 0, "ls")
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "answer was no") {
		t.Fatalf("ls: %v", err)
	}
	assertNoLeak(t, f, fmt.Sprint(err))
}

func TestSecretRefusedOrMissing(t *testing.T) {
	policy := `.{
		.policy = .{ .allow = .{ "exec.path.sh", "secret.use.GITHUB_TOKEN" }, .deny = .{"secret.use.REFUSED"}, .ask = .{"secret.use.DEPLOY_KEY"} },
		.secrets = .{ .{ .name = "GITHUB_TOKEN", .to = "exec.path.sh" }, .{ .name = "REFUSED", .to = "exec.path.sh" } },
	}`
	f := newFixture(t, policy, values, nil)
	var r *RefusedError
	_, err := f.exec(t, 0, "sh", "-c", "echo never")
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "secret REFUSED") {
		t.Fatalf("refused secret: %v", err)
	}
	missing := `.{ .policy = .{ .allow = .{ "exec.path.sh", "secret.use.*" } }, .secrets = .{ .{ .name = "NOT_STORED", .to = "exec.path.sh" } } }`
	g := newFixture(t, missing, values, nil)
	_, err = g.exec(t, 0, "sh", "-c", "echo never")
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "secret NOT_STORED is not in the file store (chock login --tool-secret NOT_STORED)") {
		t.Fatalf("missing secret: %v", err)
	}
	asked := `.{ .policy = .{ .allow = .{ "exec.path.sh" }, .ask = .{ "secret.use.DEPLOY_KEY" } }, .secrets = .{ .{ .name = "DEPLOY_KEY", .to = "exec.path.sh" } } }`
	yes := newFixture(t, asked, values, answer(true))
	res, err := yes.exec(t, 0, "sh", "-c", `echo "$DEPLOY_KEY"`)
	if err != nil || res.Stdout != "[secret:DEPLOY_KEY]\n" {
		t.Fatalf("asked and allowed: %v %+v", err, res)
	}
	no := newFixture(t, asked, values, answer(false))
	if _, err := no.exec(t, 0, "sh", "-c", `echo "$DEPLOY_KEY"`); !errors.As(err, &r) {
		t.Fatalf("asked and refused: %v", err)
	}
	assertNoLeak(t, f)
	assertNoLeak(t, yes, res.Stdout)
}

type answer bool

func (a answer) Ask(context.Context, Question) (bool, error) { return bool(a), nil }

func TestBackgroundGetsNothing(t *testing.T) {
	// A folder of its own, made writable: a call's /tmp is the session's.
	outDir := t.TempDir()
	f := newFixtureWith(t, testPolicy, values, nil, func(o *Options) { o.Writable = []string{outDir} })
	out := filepath.Join(outDir, "bg.txt")
	res, err := f.s.Run(context.Background(), &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"sh", "-c", `echo "[$BG_TOKEN][$GITHUB_TOKEN][$GCP_FILE]" > ` + out}, Background: true}})
	if err != nil || !res.Background || res.PID == 0 {
		t.Fatalf("%v %+v", err, res)
	}
	// The command has written its line when it ends.
	if ok, err := waitfor.Exit(res.PID, 10*time.Second); !ok || err != nil {
		t.Fatalf("the background command did not end: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil || len(b) == 0 {
		t.Fatalf("the background command did not run: %v", err)
	}
	if string(b) != "[][][]\n" {
		t.Fatalf("a background command was given secrets: %q", b)
	}
	assertNoLeak(t, f)
}

func TestTooManySecrets(t *testing.T) {
	var b strings.Builder
	stored := map[string]string{}
	b.WriteString(`.{ .policy = .{ .allow = .{ "exec.path.sh", "secret.use.*" } }, .secrets = .{`)
	for i := 0; i < action.MaxSlots+1; i++ {
		fmt.Fprintf(&b, `.{ .name = "S%d", .to = "exec.path.sh" },`, i)
		stored[fmt.Sprintf("S%d", i)] = fmt.Sprintf("value-number-%d-long-enough", i)
	}
	b.WriteString("} }")
	f := newFixture(t, b.String(), stored, nil)
	var r *RefusedError
	if _, err := f.exec(t, 0, "sh", "-c", "true"); !errors.As(err, &r) || !strings.Contains(r.Reason, "9 secrets; a call has 8 redaction slots") {
		t.Fatalf("%v", err)
	}
}

func TestSweepLeftovers(t *testing.T) {
	dir := t.TempDir()
	// A crashed session's file: a pid that is not running.
	cmd := exec.Command("true")
	cmd.Run()
	dead := cmd.ProcessState.Pid()
	stale := filepath.Join(dir, fmt.Sprintf("%s%d-123", secretFilePrefix, dead))
	os.WriteFile(stale, []byte("x"), 0o600)
	live := filepath.Join(dir, fmt.Sprintf("%s%d-456", secretFilePrefix, os.Getpid()))
	os.WriteFile(live, []byte("x"), 0o600)
	if n := SweepSecretFiles(dir); n != 1 {
		t.Errorf("swept %d files", n)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("the stale file is still there")
	}
	if _, err := os.Stat(live); err != nil {
		t.Error("a live session's file was swept")
	}
}

func TestNestedDecisionsNameTheirParent(t *testing.T) {
	f := newFixture(t, testPolicy, values, nil)
	if _, err := f.exec(t, 0, "sh", "-c", "true"); err != nil {
		t.Fatal(err)
	}
	f.s.Close()
	evs, _ := sessionlog.Read(f.logDir, f.s.ID)
	kinds := []string{}
	for _, ev := range evs {
		k := ev["kind"].(string)
		if k == "decision" {
			k += ":" + ev["action"].(string) + "<" + ev["parent"].(string)
		}
		kinds = append(kinds, k)
	}
	got := strings.Join(kinds, " ")
	want := "session.start tool.call decision:exec.path.sh<c1 decision:secret.use.GITHUB_TOKEN<c1 decision:secret.use.GCP_KEY<c1 decision:secret.use.BG_TOKEN<c1 secret.used secret.used secret.used tool.result session.end"
	if got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
}

// benchSession is a session under policy for a benchmark, closed with it.
func benchSession(b *testing.B, policy string) *Session {
	b.Helper()
	e, c := testEngine(b, policy)
	s, err := New(context.Background(), Options{Engine: e, Config: c, LogDir: b.TempDir(), TempDir: b.TempDir(), BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkExecTrue interleaves, round by round in one process, a
// brokered exec of /bin/true with the sandbox off (--no-sandbox: policy,
// secrets query, log) with a plain os/exec run of the same, capturing output as the
// broker does, and reports the median of the rounds' ratios.
func BenchmarkExecTrue(b *testing.B) {
	e, c := testEngine(b, `.{ .policy = .{ .allow = .{"exec.path.true"} } }`)
	s, err := New(context.Background(), Options{Engine: e, Config: c, LogDir: b.TempDir(), TempDir: b.TempDir(),
		BaseEnv: []string{"PATH=/usr/bin:/bin"}, NoSandbox: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	r := rounds.Calls(b, 5,
		func(int) {
			if _, err := s.Run(ctx, &Call{Tool: "exec", Exec: &ExecRequest{Argv: []string{"/bin/true"}}}); err != nil {
				b.Fatal(err)
			}
		},
		func(int) {
			var stdout, stderr strings.Builder
			cmd := exec.Command("/bin/true")
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		})
	r.Report(b, "brokered/os-exec", "brokered-ns/op", "os-exec-ns/op")
}

// BenchmarkSandboxExec interleaves, in one process, a brokered sandboxed
// exec of /bin/true (made by the chock-sandbox init, built here), the same
// program under bubblewrap with the namespaces chock's sandbox has, and a
// plain os/exec run. Each round runs each once; the ratios reported are
// the medians over the rounds.
func BenchmarkSandboxExec(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal("bwrap is needed (.ci/run installs Debian's bubblewrap)")
	}
	init := filepath.Join(b.TempDir(), "chock-sandbox")
	if out, err := exec.Command("go", "build", "-o", init, "github.com/chockhq/chock/cmd/chock-sandbox").CombinedOutput(); err != nil {
		b.Fatalf("building chock-sandbox: %v\n%s", err, out)
	}
	e, c := testEngine(b, `.{ .policy = .{ .allow = .{"exec.path.true"} } }`)
	s, err := New(context.Background(), Options{Engine: e, Config: c, LogDir: b.TempDir(), TempDir: b.TempDir(),
		BaseEnv: []string{"PATH=/usr/bin:/bin"}, SandboxInit: init})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run := map[string]func() error{
		"brokered": brokeredTrue(ctx, s),
		"bwrap": func() error {
			var out strings.Builder
			cmd := exec.Command(bwrap, "--unshare-user", "--unshare-pid", "--proc", "/proc", "--dev", "/dev", "--ro-bind", "/", "/", "/bin/true")
			cmd.Stdout, cmd.Stderr = &out, &out
			return cmd.Run()
		},
		// With the network namespace chock's sandbox has too (#26): bwrap
		// brings lo up in it; chock also makes and hands over two listeners.
		"bwrap-net": func() error {
			var out strings.Builder
			cmd := exec.Command(bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--proc", "/proc", "--dev", "/dev", "--ro-bind", "/", "/", "/bin/true")
			cmd.Stdout, cmd.Stderr = &out, &out
			return cmd.Run()
		},
		"os-exec": func() error {
			var stdout, stderr strings.Builder
			cmd := exec.Command("/bin/true")
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			return cmd.Run()
		},
	}
	names := []string{"brokered", "bwrap", "bwrap-net", "os-exec"}
	// Beside them, where the tools are installed, the same call under the
	// other harnesses' sandboxes: figures, never a failure when absent.
	for n, f := range otherSandboxes(b) {
		run[n] = f
		names = append(names, n)
	}
	for _, n := range names { // warm up
		if err := run[n](); err != nil {
			b.Fatalf("%s: %v", n, err)
		}
	}
	total := map[string]time.Duration{}
	var vsBwrap, vsBwrapNet, vsExec []float64
	others := map[string][]float64{}
	b.ResetTimer()
	for b.Loop() {
		took := map[string]time.Duration{}
		for _, n := range names {
			t0 := time.Now()
			if err := run[n](); err != nil {
				b.Fatalf("%s: %v", n, err)
			}
			took[n] = time.Since(t0)
			total[n] += took[n]
		}
		vsBwrap = append(vsBwrap, float64(took["brokered"])/float64(took["bwrap"]))
		vsBwrapNet = append(vsBwrapNet, float64(took["brokered"])/float64(took["bwrap-net"]))
		vsExec = append(vsExec, float64(took["brokered"])/float64(took["os-exec"]))
		for _, n := range names[4:] {
			others[n] = append(others[n], float64(took[n])/float64(took["brokered"]))
		}
	}
	for _, n := range names {
		b.ReportMetric(float64(total[n].Nanoseconds())/float64(b.N), n+"-ns/op")
	}
	for _, n := range names[4:] {
		b.ReportMetric(median(others[n]), n+"/brokered")
	}
	b.ReportMetric(median(vsBwrap), "brokered/bwrap")
	b.ReportMetric(median(vsBwrapNet), "brokered/bwrap-net")
	b.ReportMetric(median(vsExec), "brokered/os-exec")
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
