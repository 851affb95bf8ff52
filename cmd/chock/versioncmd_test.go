package main

import (
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	"testing"
)

// TestVersionText: the version lines from a build's info.
func TestVersionText(t *testing.T) {
	opa := func(v string, replace *debug.Module) *debug.Module {
		return &debug.Module{Path: opaModule, Version: v, Replace: replace}
	}
	other := &debug.Module{Path: "github.com/spf13/cobra", Version: "v1.10.2"}
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/chockhq/chock", Version: "v0.4.0"}, Deps: []*debug.Module{other, opa("v1.22.3", nil)}}, true,
			"chock v0.4.0\ngo go1.26.8\nopa v1.22.3\n"},
		{"work tree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/chockhq/chock", Version: "(devel)"}, Deps: []*debug.Module{opa("v1.22.3", nil)}}, true,
			"chock (devel)\ngo go1.26.8\nopa v1.22.3\n"},
		{"no main version", &debug.BuildInfo{GoVersion: "go1.26.8", Deps: []*debug.Module{opa("v1.22.3", nil)}}, true,
			"chock (devel)\ngo go1.26.8\nopa v1.22.3\n"},
		{"replaced OPA", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}, Deps: []*debug.Module{opa("v1.22.3", &debug.Module{Path: "example.com/opa-fork", Version: "v1.22.4-fix"})}}, true,
			"chock v0.4.0\ngo go1.26.8\nopa v1.22.4-fix\n"},
		{"no OPA", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}, Deps: []*debug.Module{other}}, true,
			"chock v0.4.0\ngo go1.26.8\nopa unknown\n"},
		{"no build info", nil, false, "chock unknown\ngo unknown\nopa unknown\n"},
	} {
		if got := versionText(tc.bi, tc.ok); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionCommand: chock version and chock --version name the OPA that
// go.mod requires and the Go this test was built with.
func TestVersionCommand(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/open-policy-agent/opa (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no OPA")
	}
	want := regexp.MustCompile(`^chock \S+\ngo ` + regexp.QuoteMeta(runtime.Version()) + `\nopa ` + regexp.QuoteMeta(string(m[1])) + `\nmanaged org ceilings: .+\n$`)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errs := runBuffered(t, args...)
		if code != exitOK || errs != "" || !want.MatchString(out) {
			t.Errorf("chock %s: exit %d, stdout %q, stderr %q; want stdout matching %s", args[0], code, out, errs, want)
		}
	}
}
