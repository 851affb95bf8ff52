package sandbox

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	MaybeInit()
	os.Exit(m.Run())
}

// run runs argv (argv[0] a path) in a sandbox allowing exec of the files
// in allow, and returns its output and the nested execs reported.
func run(t *testing.T, spec *Spec) (string, int, []Exec) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if spec.Env == nil {
		spec.Env = []string{"PATH=/usr/bin:/bin"}
	}
	spec.Exec = append(spec.Exec, spec.Path)
	c := Command(spec, exe)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	var mu sync.Mutex
	var execs []Exec
	c.Report = func(e Exec) { mu.Lock(); execs = append(execs, e); mu.Unlock() }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	c.Wait()
	// No wait for Report: watch reports a nested exec before it answers
	// the notification that holds the exec, so every exec a process of
	// the call made was reported before that process, and pid 1 after it,
	// could exit.
	mu.Lock()
	defer mu.Unlock()
	return out.String(), c.ProcessState.ExitCode(), execs
}

func interp(t *testing.T, path string) []string {
	i, _, err := Interpreter(path)
	if err != nil {
		t.Fatal(err)
	}
	if i == "" {
		return []string{path}
	}
	return []string{path, i}
}

func TestRunsAsPid1(t *testing.T) {
	sh, _ := Identify("/bin/sh")
	_ = sh
	out, code, _ := run(t, &Spec{Path: "/usr/bin/dash", Argv: []string{"sh", "-c", "echo $$; echo hi > /usr/bin/chock-planted; echo rc=$?"}, Exec: interp(t, "/usr/bin/dash"), ReadOnly: []string{"/usr/bin"}, Writable: []string{"/tmp"}, Notify: true})
	if code != 0 || !strings.HasPrefix(out, "1\n") || !strings.Contains(out, "rc=2") {
		t.Fatalf("code %d out %q", code, out)
	}
	if _, err := os.Stat("/usr/bin/chock-planted"); err == nil {
		os.Remove("/usr/bin/chock-planted")
		t.Fatal("planted a file in a read-only PATH dir")
	}
}

func TestNestedExecRefused(t *testing.T) {
	out, code, execs := run(t, &Spec{Path: "/usr/bin/dash", Argv: []string{"sh", "-c", "/usr/bin/id -u; echo rc=$?"}, Exec: interp(t, "/usr/bin/dash"), Notify: true})
	if !strings.Contains(out, "rc=126") || code != 0 {
		t.Fatalf("code %d out %q", code, out)
	}
	if len(execs) != 1 || execs[0].File != "/usr/bin/id" {
		t.Fatalf("execs %+v", execs)
	}
}

func TestSetsidChildDies(t *testing.T) {
	marker := "chock-sandbox-test-" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	allow := append(interp(t, "/usr/bin/dash"), "/usr/bin/setsid", "/usr/bin/sleep")
	_, _, _ = run(t, &Spec{Path: "/usr/bin/dash", Argv: []string{"sh", "-c", "setsid sleep 30 " + marker + " >/dev/null 2>&1 & echo started"}, Exec: allow, Notify: true})
	// No wait: the kernel kills and reaps every other process of a pid
	// namespace before its pid 1's exit is reported, so once run has
	// waited for pid 1 no process of the call is left.
	ps, _ := os.ReadDir("/proc")
	for _, p := range ps {
		b, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if bytes.Contains(b, []byte(marker)) {
			t.Fatalf("a setsid child outlived the call: pid %s", p.Name())
		}
	}
}

// TestMountsCannotBeUndone: a call cannot unmount or remount rw what the
// init mounted (Landlock forbids a restricted process to change the mount
// topology), nor reach a copy of a program through memfd.
func TestMountsCannotBeUndone(t *testing.T) {
	allow := append(interp(t, "/usr/bin/dash"), "/usr/bin/umount", "/usr/bin/mount")
	script := "umount -l /usr/bin; echo umount=$?; mount -o remount,bind,rw /usr/bin; echo remount=$?; touch /usr/bin/chock-rw-test; echo touch=$?"
	out, _, _ := run(t, &Spec{Path: "/usr/bin/dash", Argv: []string{"sh", "-c", script}, Exec: allow, ReadOnly: []string{"/usr/bin"}, Writable: []string{"/tmp"}, Notify: true})
	os.Remove("/usr/bin/chock-rw-test")
	for _, want := range []string{"umount=32", "remount=32", "touch=1"} {
		if !strings.Contains(out, want) {
			t.Errorf("want %s in %q", want, out)
		}
	}
}

// TestProgramIsRootWithoutCapabilities: the init maps this user and group
// to root of the call's user namespace itself (setgroups denied), and the
// program it runs holds no capability in any set, ambient ones included
// (the init carries its namespace's across its own exec as ambient ones).
func TestProgramIsRootWithoutCapabilities(t *testing.T) {
	// Shell builtins only: the call may execute dash and nothing else.
	script := `for f in uid_map gid_map setgroups status; do while read -r l; do case $f:$l in status:Cap*|status:NoNewPrivs*|[ugs]*) echo "$l";; esac; done < /proc/self/$f; done`
	out, code, _ := run(t, &Spec{Path: "/usr/bin/dash", Argv: []string{"sh", "-c", script}, Exec: interp(t, "/usr/bin/dash")})
	if code != 0 {
		t.Fatalf("code %d out %q", code, out)
	}
	fields := strings.Fields(out)
	want := []string{"0", strconv.Itoa(os.Getuid()), "1", "0", strconv.Itoa(os.Getgid()), "1", "deny"}
	if len(fields) < len(want) || !slices.Equal(fields[:len(want)], want) {
		t.Fatalf("the maps are %q, want %q", out, want)
	}
	caps := 0
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(k, "Cap") {
			caps++
			if strings.Trim(strings.TrimSpace(v), "0") != "" {
				t.Errorf("%s is %s in the program", k, strings.TrimSpace(v))
			}
		}
	}
	nnp := strings.Fields(out[strings.Index(out, "NoNewPrivs:")+len("NoNewPrivs:"):])
	if caps != 5 || len(nnp) == 0 || nnp[0] != "1" {
		t.Fatalf("status: %q", out)
	}
}
