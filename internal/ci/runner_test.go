package ci

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"
)

// A runner for the GitHub Actions files of this repository, as a GitHub
// runner would run them, for the tests: the run: steps of a workflow and
// of action.yml (a composite action) in bash as GitHub runs them (bash
// --noprofile --norc -eo pipefail), with their env: and with: values and
// if: conditions evaluated (expr_test.go), GITHUB_OUTPUT, GITHUB_PATH,
// GITHUB_ENV and GITHUB_STEP_SUMMARY files read back after each step, and
// step outcomes feeding steps.*.outcome and success(). A uses: step runs
// action.yml when it names chockhq/chock (or ./); the other actions the
// files use are stood in for (stand-ins below), and any other is an
// error.
//
// go install of chock inside a step builds this module instead: the
// steps run with a go on PATH (goShim) that turns
// "go install github.com/chockhq/chock/cmd/chock@VERSION" into "go -C
// ROOT install ./cmd/chock" into the runner's GOBIN, logs VERSION, and
// passes every other go command to the real go.

// repoRoot is the module's root, from this package.
const repoRoot = "../.."

type (
	workflowFile struct {
		Jobs map[string]struct {
			Steps []stepDef `yaml:"steps"`
		} `yaml:"jobs"`
	}
	actionFile struct {
		Inputs map[string]struct {
			Default string `yaml:"default"`
		} `yaml:"inputs"`
		Outputs map[string]struct {
			Value string `yaml:"value"`
		} `yaml:"outputs"`
		Runs struct {
			Using string    `yaml:"using"`
			Steps []stepDef `yaml:"steps"`
		} `yaml:"runs"`
	}
	stepDef struct {
		ID    string            `yaml:"id"`
		Name  string            `yaml:"name"`
		If    string            `yaml:"if"`
		Uses  string            `yaml:"uses"`
		Run   string            `yaml:"run"`
		Shell string            `yaml:"shell"`
		Env   map[string]string `yaml:"env"`
		With  map[string]string `yaml:"with"`
	}
)

// stepResult is what one step did.
type stepResult struct {
	ID, Name string
	Outcome  string // success, failure or skipped
	Output   string // stdout and stderr
	Outputs  map[string]any
}

// runner runs steps in one job's workspace.
type runner struct {
	t         *testing.T
	workspace string
	temp      string // RUNNER_TEMP
	event     string // github.event_name
	baseRef   string // github.base_ref, GITHUB_BASE_REF
	path      []string
	env       map[string]string // GITHUB_ENV
	summary   string            // GITHUB_STEP_SUMMARY
	results   []stepResult      // every step, the action's inside it too
	n         int
}

// tools is the per-process state the runs share: a shim go, and the GOBIN
// it installs chock into.
type tools struct {
	shimDir, gobin, log string
}

var (
	toolsOnce sync.Once
	toolsVal  tools
	toolsErr  error
)

// sharedTools makes the go shim once for the test binary.
func sharedTools(t *testing.T) tools {
	t.Helper()
	toolsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chock-ci-tools")
		if err != nil {
			toolsErr = err
			return
		}
		root, err := filepath.Abs(repoRoot)
		if err != nil {
			toolsErr = err
			return
		}
		realGo := filepath.Join(runtime.GOROOT(), "bin", "go")
		toolsVal = tools{shimDir: filepath.Join(dir, "shim"), gobin: filepath.Join(dir, "gobin"), log: filepath.Join(dir, "go-install.log")}
		shim := fmt.Sprintf(`#!/bin/sh
# go, for the CI tests: chock's go install builds this module.
if [ "$1" = install ]; then
  case "$2" in
    github.com/chockhq/chock/cmd/chock@*)
      [ $# -eq 2 ] || { echo "go shim: unexpected arguments: $*" >&2; exit 1; }
      echo "$2" >> %[1]q
      exec %[2]q -C %[3]q install ./cmd/chock ;;
  esac
  echo "go shim: go install $*: only chock's own install is built here" >&2
  exit 1
fi
exec %[2]q "$@"
`, toolsVal.log, realGo, root)
		if err := os.MkdirAll(toolsVal.shimDir, 0o755); err != nil {
			toolsErr = err
			return
		}
		toolsErr = os.WriteFile(filepath.Join(toolsVal.shimDir, "go"), []byte(shim), 0o755)
	})
	if toolsErr != nil {
		t.Fatal(toolsErr)
	}
	return toolsVal
}

// installs are the module queries the shim was asked to install.
func (tl tools) installs(t *testing.T) []string {
	b, err := os.ReadFile(tl.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// goEnv reads one go env value from the real go.
func goEnv(t *testing.T, name string) string {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

func newRunner(t *testing.T, workspace, event, baseRef string) *runner {
	tl := sharedTools(t)
	return &runner{
		t: t, workspace: workspace, temp: t.TempDir(), event: event, baseRef: baseRef,
		path: []string{tl.shimDir, "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"},
		env:  map[string]string{},
	}
}

// baseEnv is the environment of every step: a fixed one, not the test's,
// with Go's caches shared so building chock reuses this build's work.
func (r *runner) baseEnv() []string {
	tl := sharedTools(r.t)
	env := map[string]string{
		"PATH":                strings.Join(r.path, ":"),
		"HOME":                filepath.Join(r.temp, "home"),
		"GOBIN":               tl.gobin,
		"GOPATH":              goEnv(r.t, "GOPATH"),
		"GOCACHE":             goEnv(r.t, "GOCACHE"),
		"GOMODCACHE":          goEnv(r.t, "GOMODCACHE"),
		"GOFLAGS":             os.Getenv("GOFLAGS"),
		"GOTOOLCHAIN":         "local",
		"GOPROXY":             "off",
		"CI":                  "true",
		"GITHUB_ACTIONS":      "true",
		"GITHUB_WORKSPACE":    r.workspace,
		"GITHUB_EVENT_NAME":   r.event,
		"GITHUB_BASE_REF":     r.baseRef,
		"RUNNER_TEMP":         r.temp,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "ci", "GIT_AUTHOR_EMAIL": "ci@example.invalid",
		"GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.invalid",
	}
	for k, v := range r.env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// github is the github context.
func (r *runner) github(actionRef string) map[string]any {
	return map[string]any{"event_name": r.event, "base_ref": r.baseRef, "action_ref": actionRef, "workspace": r.workspace}
}

// runWorkflow runs every step of the job in the workflow YAML, and
// returns whether the job succeeded.
func (r *runner) runWorkflow(src []byte) bool {
	var wf workflowFile
	if err := yaml.Unmarshal(src, &wf); err != nil {
		r.t.Fatalf("the workflow: %v", err)
	}
	if len(wf.Jobs) != 1 {
		r.t.Fatalf("the workflow has %d jobs; the runner runs one", len(wf.Jobs))
	}
	for _, job := range wf.Jobs {
		cx := &exprContext{values: map[string]any{"github": r.github(""), "steps": map[string]any{}, "env": map[string]any{}, "inputs": map[string]any{}}}
		return r.runSteps(job.Steps, cx)
	}
	return false
}

// runSteps runs steps in order in the context cx; it returns whether none
// failed.
func (r *runner) runSteps(steps []stepDef, cx *exprContext) bool {
	for _, s := range steps {
		res := stepResult{ID: s.ID, Name: s.Name, Outputs: map[string]any{}}
		ok, err := evalIf(cx, s.If)
		if err != nil {
			r.t.Fatalf("step %q: if: %v", s.Name, err)
		}
		switch {
		case !ok:
			res.Outcome = "skipped"
		case s.Run != "":
			res.Outcome, res.Output, res.Outputs = r.runScript(s, cx)
		case s.Uses != "":
			res.Outcome, res.Output, res.Outputs = r.uses(s, cx)
		default:
			r.t.Fatalf("step %q has neither run: nor uses:", s.Name)
		}
		if res.Outcome == "failure" {
			cx.failed = true
		}
		if s.ID != "" {
			cx.values["steps"].(map[string]any)[s.ID] = map[string]any{"outcome": res.Outcome, "conclusion": res.Outcome, "outputs": res.Outputs}
		}
		r.results = append(r.results, res)
	}
	return !cx.failed
}

// interpolateMap evaluates the ${{ }} of every value.
func (r *runner) interpolateMap(cx *exprContext, m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		s, err := interpolate(cx, v)
		if err != nil {
			r.t.Fatalf("%s: %v", k, err)
		}
		out[k] = s
	}
	return out
}

// runScript runs a run: step in bash, as GitHub does for shell: bash.
func (r *runner) runScript(s stepDef, cx *exprContext) (outcome, output string, outputs map[string]any) {
	if s.Shell != "" && s.Shell != "bash" {
		r.t.Fatalf("step %q: shell %q; the runner has bash", s.Name, s.Shell)
	}
	run, err := interpolate(cx, s.Run)
	if err != nil {
		r.t.Fatalf("step %q: run: %v", s.Name, err)
	}
	if strings.Contains(s.Run, "${{") {
		r.t.Errorf("step %q pastes an expression into its script; pass it through env: (a value is never code)", s.Name)
	}
	r.n++
	dir := filepath.Join(r.temp, fmt.Sprintf("step%d", r.n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(r.temp, "home"), 0o755)
	script := filepath.Join(dir, "script.sh")
	files := map[string]string{}
	for _, f := range []string{"GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_ENV", "GITHUB_STEP_SUMMARY"} {
		files[f] = filepath.Join(dir, f)
		os.WriteFile(files[f], nil, 0o644)
	}
	if err := os.WriteFile(script, []byte(run), 0o644); err != nil {
		r.t.Fatal(err)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script)
	cmd.Dir = r.workspace
	cmd.Env = r.baseEnv()
	for k, v := range files {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	for k, v := range r.interpolateMap(cx, s.Env) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	outcome = "success"
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			r.t.Fatalf("step %q: %v", s.Name, err)
		}
		outcome = "failure"
	}
	outputs = map[string]any{}
	for k, v := range readKeyValues(r.t, files["GITHUB_OUTPUT"]) {
		outputs[k] = v
	}
	for k, v := range readKeyValues(r.t, files["GITHUB_ENV"]) {
		r.env[k] = v
	}
	if b, err := os.ReadFile(files["GITHUB_PATH"]); err == nil {
		for _, p := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if p != "" {
				r.path = append([]string{p}, r.path...)
			}
		}
	}
	if b, err := os.ReadFile(files["GITHUB_STEP_SUMMARY"]); err == nil {
		r.summary += string(b)
	}
	r.t.Logf("step %q: %s\n%s", s.Name, outcome, out.String())
	return outcome, out.String(), outputs
}

// readKeyValues reads a GITHUB_OUTPUT or GITHUB_ENV file: NAME=VALUE
// lines, and NAME<<DELIMITER blocks.
func readKeyValues(t *testing.T, name string) map[string]string {
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if k, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(k, "=") {
			var val []string
			for sc.Scan() && sc.Text() != delim {
				val = append(val, sc.Text())
			}
			out[k] = strings.Join(val, "\n")
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[k] = v
		}
	}
	return out
}

// uses runs a uses: step: this repository's action, or a stand-in.
func (r *runner) uses(s stepDef, cx *exprContext) (outcome, output string, outputs map[string]any) {
	with := r.interpolateMap(cx, s.With)
	name, ref, _ := strings.Cut(s.Uses, "@")
	switch name {
	case "./", "chockhq/chock":
		ok, outs := r.runAction(with, ref)
		if ok {
			return "success", "", outs
		}
		return "failure", "", outs
	case "actions/checkout":
		// The workspace is the checkout.
		return "success", "", nil
	case "actions/setup-go":
		// The runner's go is the real one (and the shim before it).
		return "success", "", nil
	case "github/codeql-action/upload-sarif":
		return r.standIn(s, checkSARIF(with["sarif_file"]))
	case "actions/upload-artifact":
		_, err := os.Stat(with["path"])
		return r.standIn(s, err)
	}
	r.t.Fatalf("step %q uses %s, which the runner has no stand-in for", s.Name, s.Uses)
	return "", "", nil
}

// standIn is the outcome of a stood-in action: err says why it failed.
func (r *runner) standIn(s stepDef, err error) (string, string, map[string]any) {
	if err != nil {
		r.t.Logf("step %q (stand-in for %s): failure: %v", s.Name, s.Uses, err)
		return "failure", err.Error(), nil
	}
	return "success", "", nil
}

// checkSARIF stands in for upload-sarif: the file must be a SARIF 2.1.0
// log, which is what the upload refuses otherwise.
func checkSARIF(name string) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if !bytes.Contains(b, []byte(`"version": "2.1.0"`)) || !bytes.Contains(b, []byte(`"runs"`)) {
		return fmt.Errorf("%s is not a SARIF 2.1.0 log", name)
	}
	return nil
}

// runAction runs action.yml with the inputs given (the others take their
// defaults) and returns whether it succeeded and its outputs.
func (r *runner) runAction(with map[string]string, ref string) (bool, map[string]any) {
	src, err := os.ReadFile(filepath.Join(repoRoot, "action.yml"))
	if err != nil {
		r.t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(src, &a); err != nil {
		r.t.Fatalf("action.yml: %v", err)
	}
	if a.Runs.Using != "composite" {
		r.t.Fatalf("action.yml runs using %q, want composite", a.Runs.Using)
	}
	inputs := map[string]any{}
	for k, in := range a.Inputs {
		inputs[k] = in.Default
	}
	for k, v := range with {
		if _, ok := a.Inputs[k]; !ok {
			r.t.Fatalf("the action has no input %q", k)
		}
		inputs[k] = v
	}
	cx := &exprContext{values: map[string]any{"inputs": inputs, "github": r.github(ref), "steps": map[string]any{}, "env": map[string]any{}}}
	ok := r.runSteps(a.Runs.Steps, cx)
	outputs := map[string]any{}
	for k, o := range a.Outputs {
		v, err := interpolate(cx, o.Value)
		if err != nil {
			r.t.Fatalf("output %s: %v", k, err)
		}
		outputs[k] = v
	}
	return ok, outputs
}

// step returns the result of the step named name (the last, if several).
func (r *runner) step(name string) stepResult {
	r.t.Helper()
	for i := len(r.results) - 1; i >= 0; i-- {
		if r.results[i].Name == name {
			return r.results[i]
		}
	}
	r.t.Fatalf("no step %q ran", name)
	return stepResult{}
}

// outcomes lists each step as NAME=OUTCOME.
func (r *runner) outcomes() []string {
	var out []string
	for _, s := range r.results {
		name := s.Name
		if name == "" {
			name = s.ID
		}
		out = append(out, name+"="+s.Outcome)
	}
	return out
}
