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
	// Watched says a placeholder cannot stand for the path when it is
	// missing (git reads an empty .git/commondir as an error): one a call
	// makes is moved aside when the call ends, instead.
	Watched bool
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
	{"fs.read.~/.ssh/**", Deny, whyCredential, false},
	{"fs.read.~/.aws/**", Deny, whyCredential, false},
	{"fs.read.~/.azure/**", Deny, whyCredential, false},
	{"fs.read.~/.config/gcloud/**", Deny, whyCredential, false},
	{"fs.read.~/.kube/**", Deny, whyCredential, false},
	{"fs.read.~/.docker/config.json", Deny, whyCredential, false},
	{"fs.read.~/.netrc", Deny, whyCredential, false},
	{"fs.read.~/.git-credentials", Deny, whyCredential, false},
	{"fs.read.~/.config/gh/**", Deny, whyCredential, false},
	{"fs.read.~/.npmrc", Deny, whyCredential, false},
	{"fs.read.~/.pypirc", Deny, whyCredential, false},
	{"fs.read.~/.gnupg/**", Deny, whyCredential, false},
	{"fs.read.~/.password-store/**", Deny, whyCredential, false},
	{"fs.read.~/.config/chock/**", Deny, "chock's own credentials and configuration", false},
	{"fs.read.~/.local/state/chock/**", Deny, "chock's session logs and state", false},
	{"fs.read.**/.env", Deny, whyCredential, false},
	{"fs.read.**/.env.*", Deny, whyCredential, false},
	{"fs.write..git", Deny, "a .git renamed or replaced would take its protected files with it", false},
	{"fs.write..git/config", Deny, whyRunsLater, false},
	{"fs.write..git/config.worktree", Deny, whyRunsLater, false},
	{"fs.write..git/commondir", Deny, "a commondir would point git at a config and hooks elsewhere", true},
	{"fs.write..git/hooks/**", Deny, whyRunsLater, false},
	{"fs.write..git/info/**", Deny, whyRunsLater, false},
	{"fs.write..git/modules/**", Deny, "submodules' configs and hooks run code later", false},
	{"fs.write..git/worktrees/**", Deny, "a linked worktree's commondir and gitdir point git at a config and hooks elsewhere", false},
	{"fs.write..gitmodules", Deny, whyRunsLater, false},
	{"fs.write..envrc", Deny, whyRunsLater, false},
	{"fs.write..vscode/**", Deny, whyRunsLater, false},
	{"fs.write..idea/**", Deny, whyRunsLater, false},
	{"fs.write..claude/**", Deny, whyRunsLater, false},
	{"fs.write..mcp.json", Deny, whyRunsLater, false},
	{"fs.write..codex/**", Deny, whyRunsLater, false},
	{"fs.write..gemini/**", Deny, whyRunsLater, false},
	{"fs.write..cursor/**", Deny, whyRunsLater, false},
	{"fs.write..pre-commit-config.yaml", Deny, whyRunsLater, false},
	{"fs.write..husky/**", Deny, "husky's hooks run at the next git commit", false},
	{"fs.write..devcontainer/**", Deny, "a dev container's commands run when the project is opened in one", false},
	{"fs.write..bashrc", Deny, whyRunsLater, false},
	{"fs.write..zshrc", Deny, whyRunsLater, false},
	{"fs.write..profile", Deny, whyRunsLater, false},
	{"fs.write..bash_profile", Deny, whyRunsLater, false},
	{"fs.write..gitconfig", Deny, whyRunsLater, false},
	{"fs.write.chock.zon", Deny, "the policy is not changed from inside a call", false},
}

// fsCatchAll are the rules that keep a path no rule names as the uid and
// the writable folders have it, in every layer: a layer's .default does
// not decide files. Each is a fallback: it decides only where no other
// rule of the layer matches, however broad (fs.*, *.*).
var fsCatchAll = []FileDefault{
	{"fs.read.*", Allow, "a path no rule names is readable as the uid may read it", false},
	{"fs.write.*", Allow, "a path no rule names is writable where a writable folder holds it, and nowhere else", false},
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

// Watched says whether the default of pattern p is Watched.
func Watched(p string) bool {
	for _, d := range FileDefaults {
		if d.Pattern == p {
			return d.Watched
		}
	}
	return false
}
