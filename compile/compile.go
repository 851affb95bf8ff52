// Package compile turns a checked chock.zon model, with its org ceilings,
// into Rego v1 modules, data and a standard OPA bundle (SPEC §5–7). It is
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
	"sort"

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
}

// Output is a compiled policy: its modules (path → source), its data
// document and its revision, a digest of both.
type Output struct {
	Modules  map[string]string
	Data     map[string]any
	Revision string
	// Kind is "project" or "org".
	Kind string
	// Parsed holds the modules parsed, ready for OPA.
	Parsed map[string]*ast.Module
}

// Module paths inside the bundle.
const (
	MainModule    = "chock/main.rego"
	SecretsModule = "chock/offer.rego"
)

// layers orders the project layer first, then the orgs.
func layers(in Input) ([]*Layer, error) {
	var ls []*Layer
	if in.Config != nil {
		ls = append(ls, &Layer{Kind: "project", Name: "project", File: in.Config.File, Policy: &in.Config.Policy, pkg: "project"})
	} else if len(in.Orgs) != 1 {
		return nil, fmt.Errorf("an org-only bundle holds exactly one org, not %d", len(in.Orgs))
	}
	seen := map[string]bool{}
	for i, o := range in.Orgs {
		if seen[o.Name.Value] {
			return nil, fmt.Errorf("org %q is given twice", o.Name.Value)
		}
		seen[o.Name.Value] = true
		ls = append(ls, &Layer{Kind: "org", Name: o.Name.Value, Version: o.Version.Value, File: o.File, Policy: &o.Policy, pkg: fmt.Sprintf("org%d", i+1)})
	}
	return ls, nil
}

// Compile generates and checks the Rego for a policy. The modules are
// parsed and compiled in strict mode; a failure there is a bug in chock and
// is reported as such.
func Compile(in Input) (*Output, error) {
	ls, err := layers(in)
	if err != nil {
		return nil, err
	}
	out := &Output{Modules: map[string]string{}, Kind: "project"}
	if in.Config == nil {
		out.Kind = "org"
	}
	main := mainModule(ls)
	if in.Config != nil {
		main += secretsEntry
		out.Modules[SecretsModule] = secretsModule(in.Config)
	} else {
		main += "\nsecrets := []\n"
	}
	out.Modules[MainModule] = main
	for _, l := range ls {
		out.Modules["chock/layer/"+l.pkg+".rego"] = layerModule(l)
	}
	results := map[string]any{}
	for _, l := range ls {
		results[l.pkg] = layerResults(l)
	}
	out.Data = plain(map[string]any{"chock": map[string]any{"meta": meta(out.Kind, ls, in.Config), "results": results}})
	if err := out.check(); err != nil {
		return nil, err
	}
	out.Revision = out.digest()
	return out, nil
}

// check parses and compiles the modules in strict mode.
func (o *Output) check() error {
	o.Parsed = map[string]*ast.Module{}
	for path, src := range o.Modules {
		m, err := ast.ParseModuleWithOpts(path, src, ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			return fmt.Errorf("chock generated Rego that does not parse (a bug in chock): %w", err)
		}
		o.Parsed[path] = m
	}
	c := ast.NewCompiler().WithStrict(true)
	c.Compile(o.Parsed)
	if c.Failed() {
		return fmt.Errorf("chock generated Rego that does not compile (a bug in chock): %w", c.Errors)
	}
	return nil
}

// digest is a SHA-256 over the module paths, sources and data, in a fixed
// order, so identical input gives an identical revision.
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
	data, _ := json.Marshal(o.Data)
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
	Name  string    `json:"name"`
	Paths []string  `json:"paths,omitempty"`
	Calls []string  `json:"calls,omitempty"`
	Span  diag.Span `json:"span"`
	// Pinned says .paths is written: the program runs only as those files.
	Pinned bool `json:"pinned,omitempty"`
}

// MetaOf reads data.chock.meta from a bundle's data.
func MetaOf(data map[string]any) (*Meta, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, ErrNotChockBundle
	}
	var head struct {
		Chock struct {
			Meta *struct {
				Format int `json:"format"`
			} `json:"meta"`
		} `json:"chock"`
	}
	if err := json.Unmarshal(raw, &head); err != nil || head.Chock.Meta == nil {
		return nil, ErrNotChockBundle
	}
	if f := head.Chock.Meta.Format; f != MetaFormat {
		return nil, &FormatError{Format: f}
	}
	var doc struct {
		Chock struct {
			Meta *Meta `json:"meta"`
		} `json:"chock"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%w: data.chock.meta: %v", ErrNotChockBundle, err)
	}
	return doc.Chock.Meta, nil
}

// MetaFormat is the version of data.chock.meta this chock writes and
// reads; a bundle of another one is refused with a *FormatError, not read
// wrong.
const MetaFormat = 2

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
			m.Rules = append(m.Rules, RuleMeta{Pattern: r.Pattern.String(), Decision: r.Decision, Why: r.Why.Value, Span: r.Span})
		}
		out.Layers = append(out.Layers, m)
	}
	if c != nil {
		out.Credentials = c.Credentials.Store.Value
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
			out.Programs = append(out.Programs, m)
		}
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
