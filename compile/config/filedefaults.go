package config

import (
	"sync"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/diag"
)

// FileDefault is one of the rules chock adds to a project's policy for
// files: what holds when the policy says nothing of a path.
type FileDefault struct {
	Pattern  string
	Decision Decision
	Why      string
}

// Why texts the defaults share.
const (
	whyCredential = "credentials on disk stay out of every call's reach"
	whyRunsLater  = "a file that runs code later, outside chock, is not written from inside a call"
)

// FileDefaults is the one table of them: the sandbox enforces them,
// reach prints them as grants and refusals, docs/chock-zon.md lists them.
// A project rule as specific or more (fs.read.~/.aws/config) overrides
// one; an org rule denies for good. A relative path is under the
// project's folder, and under every other writable folder too.
var FileDefaults = []FileDefault{
	{"fs.read.~/.ssh/**", Deny, whyCredential},
	{"fs.read.~/.aws/**", Deny, whyCredential},
	{"fs.read.~/.azure/**", Deny, whyCredential},
	{"fs.read.~/.config/gcloud/**", Deny, whyCredential},
	{"fs.read.~/.kube/**", Deny, whyCredential},
	{"fs.read.~/.docker/config.json", Deny, whyCredential},
	{"fs.read.~/.netrc", Deny, whyCredential},
	{"fs.read.~/.git-credentials", Deny, whyCredential},
	{"fs.read.~/.config/gh/**", Deny, whyCredential},
	{"fs.read.~/.npmrc", Deny, whyCredential},
	{"fs.read.~/.pypirc", Deny, whyCredential},
	{"fs.read.~/.gnupg/**", Deny, whyCredential},
	{"fs.read.~/.password-store/**", Deny, whyCredential},
	{"fs.read.~/.config/chock/**", Deny, "chock's own credentials and configuration"},
	{"fs.read.~/.local/state/chock/**", Deny, "chock's session logs and state"},
	{"fs.read.**/.env", Deny, whyCredential},
	{"fs.read.**/.env.*", Deny, whyCredential},
	{"fs.write..git", Deny, "a .git renamed or replaced would take its protected files with it"},
	{"fs.write..git/config", Deny, whyRunsLater},
	{"fs.write..git/config.worktree", Deny, whyRunsLater},
	{"fs.write..git/commondir", Deny, "a commondir would point git at a config and hooks elsewhere"},
	{"fs.write..git/hooks/**", Deny, whyRunsLater},
	{"fs.write..git/info/**", Deny, whyRunsLater},
	{"fs.write..git/modules/**", Deny, "submodules' configs and hooks run code later"},
	{"fs.write..gitmodules", Deny, whyRunsLater},
	{"fs.write..envrc", Deny, whyRunsLater},
	{"fs.write..vscode/**", Deny, whyRunsLater},
	{"fs.write..idea/**", Deny, whyRunsLater},
	{"fs.write..claude/**", Deny, whyRunsLater},
	{"fs.write..mcp.json", Deny, whyRunsLater},
	{"fs.write..codex/**", Deny, whyRunsLater},
	{"fs.write..gemini/**", Deny, whyRunsLater},
	{"fs.write..cursor/**", Deny, whyRunsLater},
	{"fs.write..pre-commit-config.yaml", Deny, whyRunsLater},
	{"fs.write..bashrc", Deny, whyRunsLater},
	{"fs.write..zshrc", Deny, whyRunsLater},
	{"fs.write..profile", Deny, whyRunsLater},
	{"fs.write..bash_profile", Deny, whyRunsLater},
	{"fs.write..gitconfig", Deny, whyRunsLater},
	{"fs.write.chock.zon", Deny, "the policy is not changed from inside a call"},
}

// fsCatchAll are the rules that keep a path no rule names as the uid and
// the writable folders have it, in every layer: a layer's .default does
// not decide files. Each is a fallback: it decides only where no other
// rule of the layer matches, however broad (fs.*, *.*).
var fsCatchAll = []FileDefault{
	{"fs.read.*", Allow, "a path no rule names is readable as the uid may read it"},
	{"fs.write.*", Allow, "a path no rule names is writable where a writable folder holds it, and nowhere else"},
}

// DefaultsSpan is where a builtin rule is said to be written.
var DefaultsSpan = diag.Span{File: "chock's defaults"}

var builtinRules = sync.OnceValues(func() (project, catchAll []*Rule) {
	mk := func(ds []FileDefault) []*Rule {
		var out []*Rule
		for _, d := range ds {
			out = append(out, &Rule{Pattern: action.MustPattern(d.Pattern), Decision: d.Decision, Why: Text{Value: d.Why, Set: true},
				Span: DefaultsSpan, DecisionSpan: DefaultsSpan, From: "defaults", Builtin: true})
		}
		return out
	}
	catch := mk(fsCatchAll)
	for _, r := range catch {
		r.Fallback = true
	}
	return mk(FileDefaults), catch
})

// WithBuiltins is policy p of a layer (kind "project" or "org") with
// chock's own rules after its own: for a project the file defaults; for
// every layer the catch-all allow of each fs namespace, as a fallback. p
// is not changed.
func WithBuiltins(p *Policy, kind string) *Policy {
	project, catchAll := builtinRules()
	out := *p
	out.Rules = append([]*Rule(nil), p.Rules...)
	if kind == "project" {
		out.Rules = append(out.Rules, project...)
	}
	out.Rules = append(out.Rules, catchAll...)
	return &out
}
