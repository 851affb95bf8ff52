// Package compile turns a checked chock.zon model, with its org ceilings,
// into Rego v1 modules, data and a standard OPA bundle. It is
// the second stage of the one-way flow zon → compile → eval → runtime → cmd.
//
// The query contract every consumer uses (the embedded engine, the CLI,
// stock OPA) is data.chock.decision and data.chock.secrets; see the
// comment at the top of the generated package chock.
package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/open-policy-agent/opa/v1/ast"
)

// Input is what one compilation reads. Config is nil for an org-only
// bundle, which then holds exactly one org.
type Input struct {
	Config *config.Config
	Orgs   []*config.Org
	// LinkOrgs makes a project bundle that links its orgs by name instead
	// of holding them: it holds the project layer alone and records the
	// orgs' names in order (Meta.Orgs); each org's own bundle (an org-only
	// compile, root chock_orgs/NAME) is loaded beside it. The orgs are
	// still needed here, for their names and for lint.
	LinkOrgs bool
	// Only, when set, are the only actions the compiled policy will be
	// asked about (chock hook's, for one event): each layer's module holds
	// just the rules that match one of them, numbered as in the whole
	// policy, so their decisions are the whole policy's and OPA compiles a
	// handful of rules, not every one. The meta is the whole policy's; an
	// engine refuses to decide any other action (Output.Only). More than
	// MaxOnly actions compile the whole policy: matching each rule against
	// each action would cost more than the compile it saves.
	Only []string
}

// MaxOnly bounds Input.Only.
const MaxOnly = 256

// Output is a compiled policy: its modules (path → source), what it
// records of its sources (data.chock.meta) and its revision, a digest of
// both.
type Output struct {
	Modules  map[string]string
	Revision string
	// Kind is "project" or "org".
	Kind string
	// Parsed holds the modules as OPA's parser reads them.
	Parsed map[string]*ast.Module
	// Meta is data.chock.meta.
	Meta *Meta
	// Only are Input.Only: the actions its modules decide, when they hold
	// only the rules that match those (nil: every action).
	Only []string

	compiler *ast.Compiler
	data     func() map[string]any
}

// Module paths inside the bundle.
const (
	MainModule    = "chock/main.rego"
	SecretsModule = "chock/offer.rego"
)

// OrgModule is the path of an org bundle's one module.
func OrgModule(name string) string { return OrgsRoot + "/" + name + "/layer.rego" }

// LinkStride is the stride of a project bundle that links its orgs
// (Input.LinkOrgs): fixed, since the orgs' bundles are compiled apart from
// it. An org's own numbers (base 0) must lie below it.
const LinkStride int64 = 1_000_000_000_000

// ErrOrgName is wrapped by an org whose name cannot root a bundle of its
// own (action.ValidOrgName), given to an org-only or linking compile.
var ErrOrgName = errors.New("the org's name cannot name an org bundle")

// CodeOrgName is the diagnostic code of an org whose name cannot root an
// org bundle, reported by OrgNameDiags.
const CodeOrgName = "org-name-not-a-root"

// OrgNameDiags reports every org whose name cannot name an org bundle of
// its own (action.ValidOrgName), at its .name: what an org-only or
// linking compile checks first.
func OrgNameDiags(orgs []*config.Org) diag.List {
	var out diag.List
	for _, o := range orgs {
		if action.ValidOrgName(o.Name.Value) {
			continue
		}
		sp := o.Name.Span
		if !o.Name.Set {
			sp = diag.Span{File: o.File}
		}
		out = append(out, &diag.Diagnostic{Severity: diag.Error, Code: CodeOrgName, Span: sp,
			Message: fmt.Sprintf("org name %q cannot name an org bundle: the bundle's root is chock_orgs/NAME", o.Name.Value),
			Hint:    "an org bundle's name is " + action.OrgNameRule})
	}
	return out
}

// Data is the bundle's data document, {"chock": {"meta": ...}}, in plain
// maps, slices and numbers, as a bundle reader gives it back. It is worked
// out when first asked for: an engine compiled in process never needs it.
func (o *Output) Data() map[string]any { return o.data() }

// Compiler is the strict compilation of the modules, every query of the
// policy prepared on it (eval.FromOutput). It is shared: callers only read
// it.
func (o *Output) Compiler() *ast.Compiler { return o.compiler }

// layers orders the project layer first, then the orgs.
func layers(in Input) ([]*Layer, error) {
	var ls []*Layer
	if in.Config != nil {
		ls = append(ls, &Layer{Kind: "project", Name: "project", File: in.Config.File, Policy: config.WithBuiltins(&in.Config.Policy, "project"), pkg: "project"})
	} else if len(in.Orgs) != 1 {
		return nil, fmt.Errorf("an org-only bundle holds exactly one org, not %d", len(in.Orgs))
	}
	seen := map[string]bool{}
	for i, o := range in.Orgs {
		if seen[o.Name.Value] {
			return nil, fmt.Errorf("org %q is given twice", o.Name.Value)
		}
		seen[o.Name.Value] = true
		ls = append(ls, &Layer{Kind: "org", Name: o.Name.Value, Version: o.Version.Value, File: o.File, Policy: config.WithBuiltins(&o.Policy, "org"), pkg: fmt.Sprintf("org%d", i+1)})
	}
	for i, l := range ls {
		l.index = i
	}
	return ls, nil
}

// Compile generates and checks the Rego for a policy. The layer modules
// are built as OPA's parser would read their text (main and offer are
// parsed), and all of them are compiled once, in strict mode, with
// Capabilities; a failure there is a bug in chock and is reported as
// such. Every query of the policy is prepared on that one compilation.
//
// Without a config it compiles an org bundle (root chock_orgs/NAME): the
// org's layer, numbered from 0, as data.chock_orgs.NAME.core, and its
// meta as data.chock_orgs.NAME.meta. With LinkOrgs, the project bundle
// holds the project layer alone and composes the orgs' layers from their
// bundles, loaded beside it.
func Compile(in Input) (*Output, error) {
	ls, err := layers(in)
	if err != nil {
		return nil, err
	}
	if in.Config == nil {
		return compileOrg(ls[0])
	}
	if in.LinkOrgs {
		for _, o := range in.Orgs {
			if !action.ValidOrgName(o.Name.Value) {
				return nil, fmt.Errorf("%w: %q (%s)", ErrOrgName, o.Name.Value, action.OrgNameRule)
			}
		}
	}
	out := &Output{Modules: map[string]string{}, Parsed: map[string]*ast.Module{}, Kind: "project"}
	if in.Only != nil && len(in.Only) <= MaxOnly {
		out.Only = slices.Clone(in.Only)
		var acts []action.Action
		for _, a := range in.Only {
			if act, err := action.ParseAction(a); err == nil {
				acts = append(acts, act)
			}
		}
		kept := map[*config.Rule]bool{} // each rule matched against the actions once
		keep := func(r *config.Rule) bool {
			k, ok := kept[r]
			if !ok {
				k = slices.ContainsFunc(acts, func(a action.Action) bool { return r.Pattern.Matches(a) })
				kept[r] = k
			}
			return k
		}
		for _, l := range ls {
			l.keep = keep
		}
	}
	own := ls
	segments, st := policySegments(ls), stride(ls)
	if in.LinkOrgs {
		own = ls[:1]
		if st > LinkStride {
			return nil, fmt.Errorf("a layer has too many rules to link orgs by name (at most %d)", 1_000_000)
		}
		segments, st = policySegments(own), LinkStride
	}
	main, err := mainModule(ls, segments, st, in.LinkOrgs)
	if err != nil {
		return nil, fmt.Errorf("chock could not write its Rego (a bug in chock): %w", err)
	}
	offer, err := secretsModule(in.Config)
	if err != nil {
		return nil, fmt.Errorf("chock could not write its Rego (a bug in chock): %w", err)
	}
	out.Modules[SecretsModule] = offer
	out.Modules[MainModule] = main
	for path, src := range out.Modules {
		m, err := ast.ParseModuleWithOpts(path, src, ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			return nil, fmt.Errorf("chock generated Rego that does not parse (a bug in chock): %w", err)
		}
		out.Parsed[path] = m
	}
	for _, l := range own {
		path := "chock/layer/" + l.pkg + ".rego"
		src, m, err := layerModule(l, path, int64(l.index)*st, "chock", "data.chock.meta.layers["+strconv.Itoa(l.index)+"]")
		if err != nil {
			return nil, fmt.Errorf("chock generated Rego that does not parse (a bug in chock): %w", err)
		}
		out.Modules[path], out.Parsed[path] = src, m
	}
	m := meta(out.Kind, own, in.Config)
	m.Segments, m.Stride = segments, st
	if in.LinkOrgs {
		m.Orgs = []string{}
		for _, l := range ls[1:] {
			m.Orgs = append(m.Orgs, l.Name)
		}
	}
	out.Meta = &m
	out.data = sync.OnceValue(func() map[string]any {
		return map[string]any{"chock": map[string]any{"meta": metaData(out.Meta)}}
	})
	if err := out.check(); err != nil {
		return nil, err
	}
	if out.Only != nil {
		out.Revision = out.partDigest()
	} else {
		out.Revision = out.digest()
	}
	return out, nil
}

// partDigest is the revision of a compilation for some actions only
// (Input.Only): a digest of the whole policy's meta, its rules written
// compactly rather than as the JSON a whole bundle's revision reads (which
// costs more than the compile it names, for a large policy and one hook
// event). It is the same for every event under one policy, and is not the
// revision chock compile gives the whole policy's bundle.
func (o *Output) partDigest() string {
	h := sha256.New()
	rest := *o.Meta
	rest.Layers = nil
	if data, err := json.Marshal(rest); err == nil {
		h.Write(data) // secrets, servers, programs: small
	}
	var b []byte
	for _, l := range o.Meta.Layers {
		b = append(b[:0], l.Kind...)
		b = append(b, 0)
		b = append(b, l.Name...)
		b = append(b, 0)
		b = append(b, l.File...)
		b = append(append(b, 0), l.Version...)
		b = strconv.AppendInt(append(b, 0), int64(l.Default.Value), 10)
		h.Write(b)
		for _, r := range l.Rules {
			b = append(b[:0], r.Pattern...)
			b = append(b, 0)
			b = strconv.AppendInt(b, int64(r.Decision), 10)
			b = append(append(b, 0), r.Why...)
			b = append(append(b, 0), r.Args...)
			b = strconv.AppendInt(append(b, 0), int64(r.Span.Start.Offset), 10)
			b = strconv.AppendInt(append(b, 0), int64(r.Span.End.Offset), 10)
			b = append(append(b, 0), r.Span.File...)
			if r.Builtin {
				b = append(b, 'b')
			}
			h.Write(append(b, '\n'))
		}
	}
	return "part-" + hex.EncodeToString(h.Sum(nil))
}

// compileOrg compiles an org bundle: the org's layer in package
// chock_orgs.NAME, numbered from 0 with a stride of its own, and its meta
// at data.chock_orgs.NAME.meta.
func compileOrg(l *Layer) (*Output, error) {
	if !action.ValidOrgName(l.Name) {
		return nil, fmt.Errorf("%w: %q (%s)", ErrOrgName, l.Name, action.OrgNameRule)
	}
	out := &Output{Modules: map[string]string{}, Parsed: map[string]*ast.Module{}, Kind: "org"}
	ls := []*Layer{l}
	segments, st := policySegments(ls), stride(ls)
	path := OrgModule(l.Name)
	ref := orgRef(l.Name)
	src, mod, err := layerModule(l, path, 0, strings.TrimPrefix(ref, "data."), ref+".meta.layers[0]")
	if err != nil {
		return nil, fmt.Errorf("chock generated Rego that does not parse (a bug in chock): %w", err)
	}
	out.Modules[path], out.Parsed[path] = src, mod
	m := meta(out.Kind, ls, nil)
	m.Segments, m.Stride = segments, st
	out.Meta = &m
	out.data = sync.OnceValue(func() map[string]any {
		return map[string]any{OrgsRoot: map[string]any{l.Name: map[string]any{"meta": metaData(out.Meta)}}}
	})
	if err := out.check(); err != nil {
		return nil, err
	}
	out.Revision = out.digest()
	return out, nil
}

// orgRef is data.chock_orgs.NAME as Rego writes it: NAME as a key when it
// is not an identifier (data.chock_orgs["x-y"]).
func orgRef(name string) string {
	return ast.Ref{ast.DefaultRootDocument, ast.StringTerm(OrgsRoot), ast.StringTerm(name)}.String()
}

// Root is the bundle's one root: chock for a project bundle,
// chock_orgs/NAME for an org bundle.
func (o *Output) Root() string {
	if o.Kind == "org" && len(o.Meta.Layers) == 1 {
		return OrgsRoot + "/" + o.Meta.Layers[0].Name
	}
	return Root
}

// check compiles the modules in strict mode.
func (o *Output) check() error {
	c := ast.NewCompiler().WithStrict(true).WithCapabilities(Capabilities())
	c.Compile(o.Parsed)
	if c.Failed() {
		return fmt.Errorf("chock generated Rego that does not compile (a bug in chock): %w", c.Errors)
	}
	o.compiler = c
	return nil
}

// Capabilities are OPA's capabilities without a built-in function that
// reaches outside the evaluation or depends on more than its arguments
// (http.send, net.lookup_ip_addr, opa.runtime, time, randomness) or
// writes anywhere (print, trace). A decision is a function of the bundle
// and the input alone: that is what lets decisions be cached, and a
// bundle from elsewhere cannot make chock send a request or read its
// environment. Such a bundle does not compile ("undefined function").
// The value is shared: callers only read it.
var Capabilities = sync.OnceValue(func() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	keep := make([]*ast.Builtin, 0, len(c.Builtins))
	for _, b := range c.Builtins {
		if b.Nondeterministic || b.Name == "print" || b.Name == "internal.print" || b.Name == "trace" {
			continue
		}
		keep = append(keep, b)
	}
	c.Builtins = keep
	return c
})

// digest is a SHA-256 over the module paths and sources and the meta
// data, in a fixed order, so identical input gives an identical revision.
func (o *Output) digest() string {
	h := sha256.New()
	paths := make([]string, 0, len(o.Modules))
	for p := range o.Modules {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", p, len(o.Modules[p]), o.Modules[p])
	}
	data, _ := json.Marshal(o.Meta)
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// Meta is data.chock.meta: what a compiled bundle records of its sources,
// enough to rebuild an org layer from an org-only bundle and to explain a
// decision with positions.
type Meta struct {
	// Format is MetaFormat when this chock compiled the bundle.
	Format  int          `json:"format"`
	Kind    string       `json:"kind"` // "project" or "org"
	Layers  []LayerMeta  `json:"layers"`
	Secrets []SecretMeta `json:"secrets,omitempty"`
	Servers []ServerMeta `json:"servers,omitempty"`
	// Programs are the .programs entries: pinned files, declared calls.
	Programs []ProgramMeta `json:"programs,omitempty"`
	// Credentials is the credential store .credentials.store names (a
	// project bundle), so a session run from the bundle reads the same one.
	Credentials config.Store `json:"credentials"`
	MaxSegments int          `json:"max_segments"`
	// Segments says some rule is matched on input.segments, the action's
	// segments, which data.chock.core then needs beside input.action.
	Segments bool `json:"segments,omitempty"`
	// Stride is how far apart the layers' numbers in data.chock.core are:
	// layer i's are from i*Stride on, below (i+1)*Stride.
	Stride int64 `json:"stride"`
	// Orgs are the orgs a project bundle links by name (Input.LinkOrgs),
	// in order: layer i+1 is org Orgs[i], read from its own bundle at
	// data.chock_orgs.NAME.meta. Layers then holds the project layer only.
	Orgs []string `json:"orgs,omitempty"`
	// Expects are the org ceilings the project's .orgs names: a policy
	// without a ceiling of each name decides nothing.
	Expects []string `json:"expects,omitempty"`
}

// LayerMeta is one layer and its rules.
type LayerMeta struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	File    string `json:"file"`
	// Default is the layer's default, and whether and where it is written.
	Default config.Field[config.Decision] `json:"default"`
	Rules   []RuleMeta                    `json:"rules"`
}

// RuleMeta is one rule with its position.
type RuleMeta struct {
	Pattern  string          `json:"pattern"`
	Decision config.Decision `json:"decision"`
	Why      string          `json:"why"`
	Span     diag.Span       `json:"span"`
	// Builtin says the rule is one of chock's file defaults
	// (config.FileDefaults), not the layer file's.
	Builtin bool `json:"builtin,omitempty"`
	// Args are the rule's .args as chock.zon writes them, when written.
	Args string `json:"args,omitempty"`
}

// Text is the rule as outputs name it: its pattern, and its .args when
// written (exec.path.git .args = .{ "push" }).
func (r *RuleMeta) Text() string {
	if r.Args == "" {
		return r.Pattern
	}
	return r.Pattern + " .args = " + r.Args
}

// SecretMeta is one secrets entry.
type SecretMeta struct {
	Name string      `json:"name"`
	To   string      `json:"to"`
	Bind config.Bind `json:"bind"`
	As   string      `json:"as"`
	Span diag.Span   `json:"span"`
}

// ServerMeta is one MCP server entry.
type ServerMeta struct {
	Name    string   `json:"name"`
	URL     string   `json:"url,omitempty"`
	Command []string `json:"command,omitempty"`
}

// ProgramMeta is one .programs entry.
type ProgramMeta struct {
	Name  string   `json:"name"`
	Paths []string `json:"paths,omitempty"`
	Calls []string `json:"calls,omitempty"`
	// Connects are its declared net.connect patterns.
	Connects []string  `json:"connects,omitempty"`
	Span     diag.Span `json:"span"`
	// Pinned says .paths is written: the program runs only as those files.
	Pinned bool `json:"pinned,omitempty"`
}

// MetaOf reads data.chock.meta from a bundle's data.
func MetaOf(data map[string]any) (*Meta, error) {
	chock, _ := data["chock"].(map[string]any)
	return metaOf(chock["meta"])
}

// OrgMetaOf reads an org bundle's meta, data.chock_orgs.NAME.meta, given
// as v: of this format, of kind org, with the one layer of org name.
func OrgMetaOf(name string, v any) (*Meta, error) {
	m, err := metaOf(v)
	if err != nil {
		return nil, err
	}
	if m.Kind != "org" || len(m.Layers) != 1 || m.Layers[0].Kind != "org" || m.Layers[0].Name != name {
		return nil, fmt.Errorf("%w: data.chock_orgs[%q].meta is not org %q's", ErrNotOrgBundle, name, name)
	}
	return m, nil
}

// metaOf reads a meta document, checking its format first.
func metaOf(v any) (*Meta, error) {
	raw, ok := v.(map[string]any)
	if !ok {
		return nil, ErrNotChockBundle
	}
	var f int
	switch n := raw["format"].(type) {
	case json.Number:
		i, err := n.Int64()
		if err != nil {
			return nil, ErrNotChockBundle
		}
		f = int(i)
	case float64:
		if n != float64(int(n)) {
			return nil, ErrNotChockBundle
		}
		f = int(n)
	case int:
		f = n
	case nil:
	default:
		return nil, ErrNotChockBundle
	}
	if f != MetaFormat {
		return nil, &FormatError{Format: f}
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, ErrNotChockBundle
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: the meta document: %v", ErrNotChockBundle, err)
	}
	return &m, nil
}

// MetaFormat is the version of data.chock.meta this chock writes and
// reads; a bundle of another one is refused with a *FormatError, not read
// wrong.
const MetaFormat = 4

// ErrNotChockBundle means a bundle holds no chock policy.
var ErrNotChockBundle = errors.New("not a bundle compiled by chock")

// FormatError is a bundle compiled by another version of chock.
type FormatError struct{ Format int }

func (e *FormatError) Error() string {
	if e.Format == 0 {
		return fmt.Sprintf("compiled by an older chock (before bundle format %d); compile it again with this one", MetaFormat)
	}
	return fmt.Sprintf("compiled by another chock (bundle format %d; this one reads %d); compile it again with this one", e.Format, MetaFormat)
}

// meta is data.chock.meta: the compiled model in plain data.
func meta(kind string, ls []*Layer, c *config.Config) Meta {
	out := Meta{Format: MetaFormat, Kind: kind, MaxSegments: action.MaxSegments}
	for _, l := range ls {
		m := LayerMeta{Kind: l.Kind, Name: l.Name, Version: l.Version, File: l.File,
			Default: l.Policy.Default, Rules: []RuleMeta{}}
		for _, r := range l.Policy.Rules {
			rm := RuleMeta{Pattern: r.Pattern.String(), Decision: r.Decision, Why: r.Why.Value, Span: r.Span, Builtin: r.Builtin}
			if r.Args != nil {
				rm.Args = r.Args.String()
			}
			m.Rules = append(m.Rules, rm)
		}
		out.Layers = append(out.Layers, m)
	}
	if c != nil {
		out.Credentials = c.Credentials.Store.Value
		for _, o := range c.Orgs.Value {
			out.Expects = append(out.Expects, o.Value)
		}
		out.Secrets, out.Servers = []SecretMeta{}, []ServerMeta{}
		for _, s := range c.Secrets {
			out.Secrets = append(out.Secrets, SecretMeta{Name: s.Name.Value, To: s.To.Value, Bind: s.Bind.Value, As: s.Variable(), Span: s.Span})
		}
		for _, s := range c.Servers {
			m := ServerMeta{Name: s.Name.Value, URL: s.URL.Value}
			for _, a := range s.Command.Value {
				m.Command = append(m.Command, a.Value)
			}
			out.Servers = append(out.Servers, m)
		}
		for _, p := range c.Programs {
			m := ProgramMeta{Name: p.Name.Value, Span: p.Span, Pinned: p.Paths.Set}
			for _, t := range p.Paths.Value {
				m.Paths = append(m.Paths, t.Value)
			}
			for _, t := range p.Calls.Value {
				m.Calls = append(m.Calls, t.Value)
			}
			for _, t := range p.Connects.Value {
				m.Connects = append(m.Connects, t.Value)
			}
			out.Programs = append(out.Programs, m)
		}
	}
	return out
}

// metaData is data.chock.meta in plain data, as plain(m) gives it (a
// test holds the two to each other), the layers' rules, which are most of
// it, written out by hand rather than through JSON.
func metaData(m *Meta) map[string]any {
	rest := *m
	rest.Layers = nil
	out := plain(rest)
	layers := make([]any, len(m.Layers))
	for i, l := range m.Layers {
		rules := make([]any, len(l.Rules))
		for k, r := range l.Rules {
			rule := map[string]any{"pattern": r.Pattern, "decision": r.Decision.String(), "why": r.Why, "span": spanData(r.Span)}
			if r.Builtin {
				rule["builtin"] = true
			}
			if r.Args != "" {
				rule["args"] = r.Args
			}
			rules[k] = rule
		}
		lm := map[string]any{"kind": l.Kind, "name": l.Name, "file": l.File, "rules": rules,
			"default": map[string]any{"value": l.Default.Value.String(), "span": spanData(l.Default.Span), "set": l.Default.Set}}
		if l.Version != "" {
			lm["version"] = l.Version
		}
		layers[i] = lm
	}
	out["layers"] = layers
	return out
}

// spanData is a span in plain data.
func spanData(sp diag.Span) map[string]any {
	pos := func(p diag.Pos) map[string]any {
		return map[string]any{"line": float64(p.Line), "col": float64(p.Col), "offset": float64(p.Offset)}
	}
	out := map[string]any{"start": pos(sp.Start), "end": pos(sp.End)}
	if sp.File != "" {
		out["file"] = sp.File
	}
	return out
}

// plain round-trips v through JSON, so the data is plain maps, slices and
// numbers, as a bundle reader gives it back.
func plain(v any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}
