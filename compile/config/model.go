// Package config is the typed model of chock.zon and of an org bundle
// source (org.zon), decoded from a ZON document with every field keeping
// its span. Decoding collects every problem it meets as a diagnostic rather
// than stopping at the first.
package config

import (
	"fmt"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/diag"
)

// The enumerated values of chock.zon each have a String, a
// Parse, and MarshalText/UnmarshalText, so they read and write as their
// names in JSON and in bundle data alike.

// names is the one lookup behind each enum's Parse and UnmarshalText.
func parseName[T ~int](names []string, s string) (T, bool) {
	for i, n := range names {
		if n == s {
			return T(i), true
		}
	}
	return 0, false
}

func unmarshalName[T ~int](names []string, kind string, b []byte, dst *T) error {
	v, ok := parseName[T](names, string(b))
	if !ok {
		return fmt.Errorf("unknown %s %q (want %s)", kind, b, strings.Join(names, ", "))
	}
	*dst = v
	return nil
}

func nameOf[T ~int](names []string, kind string, v T) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, int(v))
}

// Decision is allow, ask or deny, ordered most restrictive first, so the
// effective decision of several layers is their minimum.
type Decision int

// Decisions, most restrictive first.
const (
	Deny Decision = iota
	Ask
	Allow
)

func decisionNames() []string { return []string{"deny", "ask", "allow"} }

// String returns "deny", "ask" or "allow".
func (d Decision) String() string { return nameOf(decisionNames(), "Decision", d) }

// ParseDecision reads a decision name.
func ParseDecision(s string) (Decision, bool) { return parseName[Decision](decisionNames(), s) }

// MarshalText writes the decision's name.
func (d Decision) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads a decision's name.
func (d *Decision) UnmarshalText(b []byte) error {
	return unmarshalName(decisionNames(), "decision", b, d)
}

// Phase says when an action is asked: in the loop or at session start.
type Phase int

// Phases.
const (
	Loop Phase = iota
	Start
)

func phaseNames() []string { return []string{"loop", "start"} }

// String returns "loop" or "start".
func (p Phase) String() string { return nameOf(phaseNames(), "Phase", p) }

// ParsePhase reads a phase name.
func ParsePhase(s string) (Phase, bool) { return parseName[Phase](phaseNames(), s) }

// MarshalText writes the phase's name.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a phase's name.
func (p *Phase) UnmarshalText(b []byte) error { return unmarshalName(phaseNames(), "phase", b, p) }

// Bind is how a secret reaches its target.
type Bind int

// Binds.
const (
	BindEnv Bind = iota
	BindFile
	BindHeader
)

func bindNames() []string { return []string{"env", "file", "header"} }

// String returns "env", "file" or "header".
func (b Bind) String() string { return nameOf(bindNames(), "Bind", b) }

// ParseBind reads a bind's name.
func ParseBind(s string) (Bind, bool) { return parseName[Bind](bindNames(), s) }

// MarshalText writes the bind's name.
func (b Bind) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText reads a bind's name.
func (b *Bind) UnmarshalText(t []byte) error { return unmarshalName(bindNames(), "bind", t, b) }

// Store is where credential values live.
type Store int

// Credential stores.
const (
	StoreFile Store = iota
	StoreEnv
	StoreKeyring
	StoreSecretSpec
)

func storeNames() []string { return []string{"file", "env", "keyring", "secretspec"} }

// String returns the store's name.
func (s Store) String() string { return nameOf(storeNames(), "Store", s) }

// ParseStore reads a store's name.
func ParseStore(s string) (Store, bool) { return parseName[Store](storeNames(), s) }

// MarshalText writes the store's name.
func (s Store) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a store's name.
func (s *Store) UnmarshalText(b []byte) error {
	return unmarshalName(storeNames(), "credential store", b, s)
}

// LayerSpelling is a layer's one spelling in every output and in
// .expect's .layer: "project", or "org:NAME".
func LayerSpelling(kind, name string) string {
	if kind == "org" {
		return "org:" + name
	}
	return "project"
}

// ParseLayer reads an .expect .layer: "project" or "org:NAME", as written
// everywhere; also, from before, "org" (any org layer: name is "") and a
// bare org name. canonical is false for those two, which lint points at.
func ParseLayer(s string) (kind, name string, canonical bool) {
	switch {
	case s == "project":
		return "project", "project", true
	case strings.EqualFold(s, "project"):
		return "project", "project", false
	case strings.HasPrefix(s, "org:") && len(s) > 4:
		return "org", s[4:], true
	case s == "org" || s == "org:":
		return "org", "", false
	}
	return "org", s, false
}

// Field is a value of chock.zon with where it was written: Set says
// whether the file wrote it (Value is then what it says, else the
// default), Span where. One type for every "was it there" question. Two
// fields say a little more, and their docs say so: Secret.Bind is Set when
// the file wrote a bind at all (an unknown one too, which is reported), and
// Secret.ToPattern only when .to parses as a pattern.
type Field[T any] struct {
	Value T         `json:"value"`
	Span  diag.Span `json:"span"`
	Set   bool      `json:"set"`
}

// Text is a string value with the span it was read from.
type Text = Field[string]

// Config is a decoded chock.zon.
type Config struct {
	File        string
	Span        diag.Span
	Policy      Policy
	Secrets     []*Secret
	Servers     []*Server
	Programs    []*Program
	Credentials Credentials
	Expect      []*Expectation
	// Orgs are the org ceilings the project expects: a command that
	// would decide without a ceiling of each name refuses.
	Orgs Field[[]Text]
}

// Org is a decoded org bundle source.
type Org struct {
	File    string
	Span    diag.Span
	Name    Text
	Version Text
	Policy  Policy
}

// Policy is one layer's rules and default.
type Policy struct {
	Span diag.Span
	// Default is the decision with no matching rule, and whether and
	// where the file set it.
	Default Field[Decision]
	// Rules holds every rule in source order: the .allow, .ask and .deny
	// lists and the .rules entries.
	Rules []*Rule
	// Written says whether the file has a .policy block (Span is then
	// its value); Allow whether it has an .allow list, and where its value
	// is. Hints edit there.
	Written bool
	Allow   Field[struct{}]
}

// Rule is one pattern with its decision.
type Rule struct {
	Pattern  action.Pattern
	Decision Decision
	// DecisionSpan is the .decision value's span, or the list's field name
	// for a rule written in .allow, .ask or .deny.
	DecisionSpan diag.Span
	Why          Text
	// Span is the pattern string's span; From names the list it came from
	// ("allow", "ask", "deny" or "rules").
	Span diag.Span
	From string
	// Builtin says the rule is one of chock's own (FileDefaults), not the
	// file's: it loses a tie to a rule of the layer's file, and lint says
	// nothing of it.
	Builtin bool
	// Fallback says the rule decides only where no other rule of the
	// layer matches (the catch-all allow of each fs namespace).
	Fallback bool
	// Args are the rule's .args (nil: none written); ArgsSpan where.
	Args     action.Args
	ArgsSpan diag.Span
}

// ArgsMatch reports whether the call's arguments match the rule's .args:
// by prefix for an allow, in order anywhere for a deny or an ask
// (action.Args). A rule without .args matches whatever the arguments.
func (r *Rule) ArgsMatch(args []string) bool {
	return r.Args == nil || r.Args.Matches(r.Decision == Allow, args)
}

// Key is what makes two rules the same rule: the pattern, and the .args
// when written.
func (r *Rule) Key() string {
	if r.Args == nil {
		return r.Pattern.String()
	}
	return r.Pattern.String() + " .args = " + r.Args.String()
}

// Secret is one entry of .secrets.
type Secret struct {
	Span diag.Span
	Name Text
	To   Text
	// ToPattern is To parsed; Set only when it parses.
	ToPattern Field[action.Pattern]
	// Bind is Set when .bind is written, as a string or an enum literal,
	// even one chock does not know (decoding reports it).
	Bind Field[Bind]
	// As is the variable (env, file) or header (header); empty means the default.
	As Text
}

// Variable is the environment variable or header the secret arrives under.
func (s *Secret) Variable() string {
	if s.As.Value != "" {
		return s.As.Value
	}
	if d := s.Bind.Value.Rule().Default; d != "" {
		return d
	}
	return s.Name.Value
}

// OfferedToCall says whether the secret is offered to a call of action a:
// its .to is a pattern under exec.* that matches a. Whether it is then
// given is secret.use.NAME's decision.
func (s *Secret) OfferedToCall(a action.Action) bool {
	return s.ToPattern.Set && s.ToPattern.Value.Segments()[0] == "exec" && s.ToPattern.Value.Matches(a)
}

// OfferedToServer says whether the secret is offered to the server named
// server: its .to is under mcp.* and covers the server's whole
// namespace (mcp.S.*, mcp.*.* or mcp.*).
func (s *Secret) OfferedToServer(server string) bool {
	if !s.ToPattern.Set || s.ToPattern.Value.Segments()[0] != "mcp" {
		return false
	}
	ns, err := action.ParsePattern("mcp." + server + ".*")
	return err == nil && action.Covers(s.ToPattern.Value, ns)
}

// Server is one entry of .mcp_servers.
type Server struct {
	Span    diag.Span
	Name    Text
	Command Field[[]Text]
	URL     Text
}

// Program is one .programs entry: a program pinned to the files it may
// run as (Codex's host_executable), and the programs it runs itself.
type Program struct {
	Span diag.Span
	Name Text
	// Paths are the absolute files the program runs as; when set, no
	// other file runs under its name.
	Paths Field[[]Text]
	// Calls are the exec.path.<name> actions it runs inside its own calls
	// (its declared calls): allowed there as a project rule would
	// allow them, org ceilings still capping them.
	Calls Field[[]Text]
	// Connects are net.connect patterns its calls may reach (its declared
	// connections): allowed for that program's calls only, as a project
	// rule would allow them, org ceilings still capping them.
	Connects Field[[]Text]
}

// LayerVerdict is what one layer decides of an action: its decision and
// the pattern of the rule that decided it ("" for the layer's default).
type LayerVerdict struct {
	Decision Decision
	Rule     string
}

// DeclaredCallRuns is the one rule for a call a .programs entry declares
// (lint, reach and the run time all ask it): it runs inside that
// program's calls as a project rule naming it would let it, so the
// project layer stops it only by a rule naming the call itself that does
// not allow it, and every org layer (layers[1:]) must allow it. blocker is
// the index of the layer that stops it, or -1.
func DeclaredCallRuns(call string, layers []LayerVerdict) (blocker int) {
	for i, l := range layers {
		if i == 0 && l.Rule == call && l.Decision != Allow || i > 0 && l.Decision != Allow {
			return i
		}
	}
	return -1
}

// DeclaredConnectRuns is the one rule for a connection a .programs
// entry's .connects pattern declares (lint, reach and the run time all
// ask it), as DeclaredCallRuns is for a declared call: the connection is
// allowed for that program's calls as a project rule would allow it, so
// the project layer stops it only by a rule that does not allow it and is
// as narrow as the declaration or narrower (one the declared pattern
// covers: a deny of the very host), and every org layer must allow it.
// blocker is the index of the layer that stops it, or -1.
func DeclaredConnectRuns(declared string, layers []LayerVerdict) (blocker int) {
	d, err := action.ParsePattern(declared)
	if err != nil {
		return 0
	}
	for i, l := range layers {
		if i > 0 && l.Decision != Allow {
			return i
		}
		if i == 0 && l.Rule != "" && l.Decision != Allow {
			if r, err := action.ParsePattern(l.Rule); err != nil || action.Covers(d, r) {
				return i
			}
		}
	}
	return -1
}

// Credentials is the .credentials block.
type Credentials struct {
	Span  diag.Span
	Store Field[Store]
}

// Expectation is one entry of .expect, a policy test.
type Expectation struct {
	Span     diag.Span
	Action   Text
	Phase    Field[Phase]
	Decision Field[Decision]
	// Layer and Rule, when set, also pin which layer decided and the
	// deciding pattern.
	Layer Text
	Rule  Text
	// Argv, when set, is the whole command line of an exec.path action's
	// call, its program first: the rules with .args decide its arguments.
	Argv Field[[]Text]
}

// Args are the arguments the expectation's call has: Argv after its
// program, or nil when Argv is not written.
func (x *Expectation) Args() []string {
	if !x.Argv.Set {
		return nil
	}
	out := []string{}
	for i, t := range x.Argv.Value {
		if i > 0 {
			out = append(out, t.Value)
		}
	}
	return out
}
