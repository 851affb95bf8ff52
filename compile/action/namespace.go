package action

import (
	"fmt"
	"path"
	"strings"
)

// Namespace is one family of actions chock decides. Namespaces, below, is
// the one table of them: the name each action is built under, the pattern
// that covers the family, the phase it is decided at, how reach and diff
// group it and its line in the docs. Lint's unknown-namespace check, its
// ask-at-start check, reach, diff, the constructors the run time calls and
// docs/chock-zon.md all read it, so a namespace is added as one row.
type Namespace struct {
	// Form is the namespace as the docs write it: literal segments, and
	// placeholders in angle brackets (exec.path.<program>). A placeholder
	// inside the form stands for one segment; one at its end for one or
	// more. Each placeholder's name says what fills it (see parts).
	Form string
	// Start says its actions are decided when a session starts, when
	// nobody can be asked (so an ask reads as deny).
	Start bool
	// Programs says each action names a program a call runs: reach and
	// diff tell the regions of every program apart and compare the
	// secrets offered to each.
	Programs bool
	// Args says a rule of it may carry .args, matched against the
	// arguments of the call (Args).
	Args bool
	// Doc is what the namespace decides, one sentence for the docs.
	Doc string

	pattern Pattern
	holes   []string // the placeholders' names, in order
}

// The namespaces. Each is a row of Namespaces too.
var (
	ExecPath   = &Namespace{Form: "exec.path.<program>", Programs: true, Args: true, Doc: "A program a call runs, by the name it has on the session's PATH; a dot in the name separates segments (exec.path.python3.12)."}
	MCPHostNS  = &Namespace{Form: "mcp.<server>.host.<host>", Start: true, Doc: "The host of a remote MCP server's URL, decided when the session starts."}
	MCPToolNS  = &Namespace{Form: "mcp.<server>.tool.<tool>", Doc: "A tool an MCP server declares: offered when not denied, decided at each call."}
	MCPNetwork = &Namespace{Form: "mcp.<server>.network", Start: true, Doc: "A local MCP server's reach to the network from inside its sandbox, decided when the session starts."}
	SecretUse  = &Namespace{Form: "secret.use.<NAME>", Doc: "Giving secret NAME to the call or server its .to offers it to: at each call for a program, at start for a server."}
	NetFetch   = &Namespace{Form: "net.fetch.<host>", Doc: "A URL chock's fetch_url tool reaches, by its host."}
	NetConnect = &Namespace{Form: "net.connect.<host>", Doc: "A connection a call's program makes through chock's egress proxy (the only route out of a call), by its host as every namespace writes one: a name last label first (net.connect.org.pypi), an IPv4 literal in its own order (net.connect.10.0.0.7), an IPv6 literal as one segment in brackets; any port of an allowed host (the port is logged, not decided). Decided at each connection; a .programs entry's .connects lets only that program's calls reach more. An address this machine, link-local or metadata is refused whatever the rule."}
	NixBuild   = &Namespace{Form: "nix.build", Start: true, Doc: "A Nix build of the session's environment, decided when the session starts."}
	ModelPick  = &Namespace{Form: "model.select", Start: true, Doc: "The agent's choice of model, decided when the session starts."}
	Plugin     = &Namespace{Form: "plugin.<name>", Doc: "A plugin of the harness; a plugin is given no secrets."}
	ClientTool = &Namespace{Form: "client.<client>.tool.<tool>", Doc: "A tool of an agent client's own that chock hook has no other meaning for (claude-code, codex or gemini): a rule naming it decides it, and otherwise it is asked."}
	FSRead     = &Namespace{Form: "fs.read.<PATH>", Doc: "Reading a file or folder from inside a call or a local MCP server's sandbox; PATH is one segment that keeps its dots and slashes (fs.read.~/.aws/config, fs.read..env), with '*' and '**' as gitignore uses them; the defaults keep credentials unreadable, and a path no rule names is readable as the uid may."}
	FSWrite    = &Namespace{Form: "fs.write.<PATH>", Doc: "Writing, creating, renaming or removing a file or folder from inside a call or a local MCP server's sandbox (fs.write..git/hooks/**); the defaults keep files that run code later unwritable, and nothing outside the writable folders is writable whatever a rule says."}
)

// Namespaces is every namespace chock knows, in the order the docs list
// them.
var Namespaces = prepared(ExecPath, MCPHostNS, MCPToolNS, MCPNetwork, SecretUse, NetFetch, NetConnect, NixBuild, ModelPick, Plugin, ClientTool, FSRead, FSWrite)

// parts are what may fill a placeholder: the noun an error names it by
// and how a value is written as segments (nil: as it is).
var parts = map[string]struct {
	noun  string
	write func(string) (string, error)
}{
	"program": {"program name", programName},
	"host":    {"host", HostSegments},
	"server":  {"server name", nil},
	"tool":    {"tool name", nil},
	"NAME":    {"secret name", nil},
	"name":    {"name", nil},
	"client":  {"client name", nil},
	// PATH is the one placeholder of its kind: the last, one segment that
	// keeps its dots (path.go owns its grammar).
	"PATH": {"path", nil},
}

// prepared parses each namespace's form into its pattern and placeholders.
func prepared(ns ...*Namespace) []*Namespace {
	for _, n := range ns {
		if strings.HasSuffix(n.Form, ".<PATH>") {
			pathRows = append(pathRows, n)
		}
	}
	for _, n := range ns {
		segs := strings.Split(n.Form, ".")
		for i, s := range segs {
			if strings.HasPrefix(s, "<") && strings.HasSuffix(s, ">") {
				hole := s[1 : len(s)-1]
				if _, ok := parts[hole]; !ok {
					panic("action: namespace " + n.Form + " has a placeholder no part fills: " + s)
				}
				n.holes = append(n.holes, hole)
				segs[i] = "*"
			}
		}
		n.pattern = MustPattern(strings.Join(segs, "."))
	}
	return ns
}

// Pattern is the pattern that matches every action of the namespace
// (exec.path.*).
func (n *Namespace) Pattern() Pattern { return n.pattern }

// Prefix is the namespace's literal segments before its first
// placeholder ("exec.path." for exec.path.<program>), or the whole name.
func (n *Namespace) Prefix() string {
	if i := strings.IndexByte(n.Form, '<'); i >= 0 {
		return n.Form[:i]
	}
	return n.Form
}

// Fixed is the namespace's literal segments before its first placeholder
// (exec, path for exec.path.<program>).
func (n *Namespace) Fixed() []string {
	return strings.Split(strings.TrimSuffix(n.Prefix(), "."), ".")
}

// Has says whether action a is of the namespace.
func (n *Namespace) Has(a Action) bool { return n.pattern.Matches(a) }

// Build writes the action of the namespace whose placeholders hold
// values, in order: a program by its base name, a host last label first
// (HostSegments), anything else as it is. The result must parse as an
// action.
func (n *Namespace) Build(values ...string) (string, error) {
	if len(values) != len(n.holes) {
		return "", fmt.Errorf("%s takes %d values, not %d", n.Form, len(n.holes), len(values))
	}
	// The form's segments, each placeholder filled in turn: a value never
	// fills another's placeholder, and one inside the form is one segment.
	segs := strings.Split(n.Form, ".")
	k := 0
	for i, sg := range segs {
		if !strings.HasPrefix(sg, "<") {
			continue
		}
		hole, v := n.holes[k], values[k]
		k++
		if w := parts[hole].write; w != nil {
			var err error
			if v, err = w(v); err != nil {
				return "", err
			}
		}
		if hole == "PATH" {
			segs[i] = v // checked with the whole action below
			continue
		}
		if i < len(segs)-1 && strings.Contains(v, ".") {
			return "", fmt.Errorf("%s %q cannot form an action: it is one segment, with no '.'", parts[hole].noun, v)
		}
		if _, err := ParseAction("x." + v); err != nil {
			return "", fmt.Errorf("%s %q cannot form an action: %v", parts[hole].noun, v, err)
		}
		segs[i] = v
	}
	out := strings.Join(segs, ".")
	if _, err := ParseAction(out); err != nil {
		return "", fmt.Errorf("%s cannot form an action: %v", out, err)
	}
	return out, nil
}

// programName is a program's name from argv[0]: its base name.
func programName(argv0 string) (string, error) {
	base := path.Base(strings.ReplaceAll(argv0, "\\", "/"))
	if base == "" || base == "." || base == "/" || base == ".." {
		return "", fmt.Errorf("no program name in %q", argv0)
	}
	return base, nil
}

// KnownNamespace reports whether pattern p can match an action of a
// namespace chock knows.
func KnownNamespace(p Pattern) bool {
	if len(p.segs) == 0 || p.segs[0] == "*" {
		return false
	}
	for _, n := range Namespaces {
		if Overlaps(p, n.pattern) {
			return true
		}
	}
	return false
}

// TakesArgs reports whether a rule of pattern p may carry .args: every
// namespace p can match takes arguments.
func TakesArgs(p Pattern) bool {
	some := false
	for _, n := range Namespaces {
		if Overlaps(p, n.pattern) {
			if !n.Args {
				return false
			}
			some = true
		}
	}
	return some
}

// NamespaceForms lists the forms of the namespaces keep keeps (nil: all),
// for a hint or a docs line.
func NamespaceForms(keep func(*Namespace) bool) string {
	var forms []string
	for _, n := range Namespaces {
		if keep == nil || keep(n) {
			forms = append(forms, n.Form)
		}
	}
	return strings.Join(forms, ", ")
}

// AtStart keeps the namespaces decided when a session starts.
func AtStart(n *Namespace) bool { return n.Start }

// NamespaceOf returns the namespace of action a, or nil.
func NamespaceOf(a Action) *Namespace {
	for _, n := range Namespaces {
		if n.Has(a) {
			return n
		}
	}
	return nil
}

// programShape is the shape of the namespaces whose actions are programs.
var programShape = func() Shape {
	t := &Trie[struct{}]{}
	for _, n := range Namespaces {
		if n.Programs {
			t.Insert(n.pattern, struct{}{})
		}
	}
	return t.Shape()
}()

// ProgramShape is the shape of every namespace whose actions are programs
// (exec.path.*): walked with a policy's rules, so that the regions of
// programs are told apart from the rest of their family.
func ProgramShape() Shape { return programShape }

// NamespaceNear is pattern p with its first segments spelt as the fixed
// segments of the one namespace they are nearest (within edit distance 2,
// exec.paht.git → exec.path.git), or "" when none is near or p is in a
// namespace already.
func NamespaceNear(p Pattern) string {
	if KnownNamespace(p) {
		return ""
	}
	best, bestD := "", 3
	for _, n := range Namespaces {
		fixed := n.Fixed()
		if len(p.segs) < len(fixed) {
			continue
		}
		head := strings.Join(p.segs[:len(fixed)], ".")
		if d := editDistance(head, strings.Join(fixed, ".")); d < bestD {
			rest := append(append([]string(nil), fixed...), p.segs[len(fixed):]...)
			if q, err := ParsePattern(strings.Join(rest, ".")); err == nil && KnownNamespace(q) {
				best, bestD = q.String(), d
			}
		}
	}
	return best
}
