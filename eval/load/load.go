// Package load is the library entry point for "load a policy": sources
// (chock.zon and org ceilings, as org.zon sources or org bundles) or a
// compiled bundle in; the decoded configuration, every diagnostic and a
// ready engine out. The CLI and the tests build policies with it, so no
// caller repeats the steps (decode, lint, compile, prepare). It does no
// I/O of its own: callers hand it bytes.
package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/chockhq/chock/compile"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/compile/lint"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/eval"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// Source is one input file: the name it is shown under, and its bytes.
type Source struct {
	Name string
	Data []byte
}

// Input is what to load.
type Input struct {
	// Configs are project chock.zon files (lint takes several; a policy is
	// built from the first).
	Configs []Source
	// Orgs are org ceilings: org.zon sources, or org bundles compiled by
	// chock compile --org-only (told apart by the gzip magic number).
	Orgs []Source
	// Read says how org bundles' signatures are treated; with a
	// verification key, an org source (which carries none) is refused.
	Read compile.ReadOptions
	// Unlinted compiles a policy even with lint errors, as a bundle built
	// elsewhere may be: for tests of what the run time does with one (a
	// ninth server, say). Decoding errors still refuse it.
	Unlinted bool
	// ProjectNames decodes each file under its name in the project (see
	// projectNamed), as what is compiled from it records it; diagnostics
	// keep the names the caller gave.
	ProjectNames bool
	// Only compiles just the rules that can match these actions, the only
	// ones the policy is then asked about (compile.Input.Only), and lints
	// for errors only (lint.Input.ErrorsOnly): chock hook's load for one
	// event, at a cost that does not grow with the policy's other rules.
	Only []string
}

// Loaded is what reading the sources produced: the configs and orgs that
// decoded, every diagnostic met, and the source text for excerpts.
type Loaded struct {
	Configs []*config.Config
	Orgs    []*config.Org
	Diags   diag.List
	Sources diag.Sources
	// SharedFiles, set before Lint, are the files the machine has under
	// several program names (lint.Input.SharedFiles).
	SharedFiles []lint.SharedFile
	// spelled maps names in the project back to the caller's.
	spelled map[string]string
}

// ErrUnsignedOrg means an org source was given where a verification key
// requires signed org bundles.
var ErrUnsignedOrg = errors.New("a verification key requires signed org bundles (chock compile --org-only)")

// IsBundle says whether b is a .tar.gz bundle (the gzip magic number).
func IsBundle(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// Read decodes the sources. err is an org bundle refused (a signature, or
// not an org bundle) or an org source refused under a verification key;
// problems in the sources themselves are diagnostics.
func Read(in Input) (*Loaded, error) {
	l := &Loaded{Sources: diag.Sources{}}
	if in.ProjectNames {
		in, l.spelled = projectNamed(in)
		defer func() {
			l.Diags = respell(l.Diags, l.spelled)
			for name, sp := range l.spelled {
				if b, ok := l.Sources[name]; ok {
					l.Sources[sp] = b
				}
			}
		}()
	}
	for _, s := range in.Orgs {
		if IsBundle(s.Data) {
			o, err := compile.ReadOrgBundle(s.Name, bytes.NewReader(s.Data), in.Read)
			if err != nil {
				return nil, err
			}
			l.Orgs = append(l.Orgs, o)
			continue
		}
		if in.Read.Verify != nil {
			return nil, fmt.Errorf("%s is an org source, which carries no signature; %w", s.Name, ErrUnsignedOrg)
		}
		l.Sources[s.Name] = s.Data
		o, ds := config.LoadOrg(s.Name, s.Data)
		l.Diags = append(l.Diags, ds...)
		if o != nil {
			l.Orgs = append(l.Orgs, o)
		}
	}
	for _, s := range in.Configs {
		l.Sources[s.Name] = s.Data
		c, ds := config.Load(s.Name, s.Data)
		l.Diags = append(l.Diags, ds...)
		if c != nil {
			l.Configs = append(l.Configs, c)
		}
	}
	return l, nil
}

// Lint runs the checks on every config under the orgs (or on the orgs
// alone), with the decoding diagnostics, each reported once, in order.
func (l *Loaded) Lint() diag.List { return l.lint(false) }

// lint is Lint; errorsOnly leaves out the checks that only warn.
func (l *Loaded) lint(errorsOnly bool) diag.List {
	all := append(diag.List(nil), l.Diags...)
	if len(l.Configs) == 0 && len(l.Orgs) > 0 {
		all = append(all, lint.Run(lint.Input{Orgs: l.Orgs, ErrorsOnly: errorsOnly})...)
	}
	for _, c := range l.Configs {
		all = append(all, lint.Run(lint.Input{Config: c, Orgs: l.Orgs, ErrorsOnly: errorsOnly, SharedFiles: l.SharedFiles})...)
	}
	all = dedupe(all)
	all = respell(all, l.spelled)
	all.Sort()
	return all
}

// dedupe drops diagnostics reported twice (an org source linted with
// every project file).
func dedupe(l diag.List) diag.List {
	type key struct {
		file          string
		offset        int
		code, message string
	}
	seen := make(map[key]bool, len(l))
	out := l[:0:0]
	for _, d := range l {
		k := key{d.Span.File, d.Span.Start.Offset, d.Code, d.Message}
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}

// Why a policy is not built from sources; the diagnostics come with the
// first two.
var (
	// ErrInvalid: a source does not decode (not ZON, or not chock.zon's
	// shape).
	ErrInvalid = errors.New("the policy does not decode")
	// ErrLint: it decodes, and lint found errors.
	ErrLint = errors.New("the policy has lint errors")
	// ErrOneConfig: FromSources builds one project; it was given none or
	// several.
	ErrOneConfig = errors.New("a policy is built from exactly one chock.zon")
)

// ErrOrgBundle means a bundle given as a policy is an org bundle: a
// ceiling, which is given as an org.
var ErrOrgBundle = errors.New("an org bundle is a ceiling, not a policy to decide with")

// Policy is a loaded policy: its engine, and, when it was built from
// sources, the config, the orgs and the source text (for positions,
// excerpts and concrete hints).
type Policy struct {
	Engine  *eval.Engine
	Config  *config.Config
	Orgs    []*config.Org
	Sources diag.Sources
	// Output is the compilation, when it was built from sources.
	Output *compile.Output
	// spelled maps the names the policy's files have in the project (its
	// spans') to the names the caller gave them.
	spelled map[string]string
}

// Respell is sp under the file name the caller gave (a path as typed, for
// an editor or a CI annotation), where the policy names the file as it is
// in the project.
func (p *Policy) Respell(sp diag.Span) diag.Span {
	if name, ok := p.spelled[sp.File]; ok {
		sp.File = name
	}
	return sp
}

// Errors are the error diagnostics of a lint result.
func Errors(ds diag.List) diag.List {
	var errs diag.List
	for _, d := range ds {
		if d.Severity == diag.Error {
			errs = append(errs, d)
		}
	}
	return errs
}

// FromSources builds a policy from one project chock.zon (in.Configs holds
// exactly one) and its orgs: decoded (a decoding error refuses it with
// ErrInvalid), linted (an error refuses it with ErrLint), compiled and
// prepared. ds holds every diagnostic met, warnings included.
func FromSources(ctx context.Context, in Input) (p *Policy, ds diag.List, err error) {
	if len(in.Configs) != 1 {
		return nil, nil, fmt.Errorf("%w: given %d", ErrOneConfig, len(in.Configs))
	}
	// The policy is compiled from its files under the names they have in
	// the project, so its revision is its content's.
	in.ProjectNames = true
	l, err := Read(in)
	if err != nil {
		return nil, nil, err
	}
	if l.Diags.HasErrors() || len(l.Configs) == 0 {
		return nil, l.Diags, fmt.Errorf("%w: %s", ErrInvalid, diag.Plural(len(Errors(l.Diags)), "error"))
	}
	ds = l.Diags
	if !in.Unlinted {
		ds = l.lint(in.Only != nil)
	}
	if ds.HasErrors() {
		return nil, ds, fmt.Errorf("%w: %s", ErrLint, diag.Plural(len(Errors(ds)), "error"))
	}
	out, err := compile.Compile(compile.Input{Config: l.Configs[0], Orgs: l.Orgs, Only: in.Only})
	if err != nil {
		return nil, ds, err
	}
	e, err := eval.FromOutput(ctx, out)
	if err != nil {
		return nil, ds, err
	}
	return &Policy{Engine: e, Config: l.Configs[0], Orgs: l.Orgs, Sources: l.Sources, Output: out, spelled: l.spelled}, ds, nil
}

// FromBundle prepares a policy from a compiled project bundle, its
// signature treated as ro says. An org bundle is refused: it is a ceiling,
// given as an org to FromSources.
func FromBundle(ctx context.Context, name string, data []byte, ro compile.ReadOptions) (*Policy, error) {
	return FromBundles(ctx, []Source{{Name: name, Data: data}}, ro)
}

// FromBundles prepares a policy from compiled bundles loaded side by side,
// as opa run -b A -b B loads them (eval.NewBundles): a project bundle and
// the org bundles it links by name. Each one's signature is treated as ro
// says. Org bundles alone are refused with ErrOrgBundle; a linked org
// whose bundle is not given, with an error wrapping eval.ErrUnavailable.
func FromBundles(ctx context.Context, srcs []Source, ro compile.ReadOptions) (*Policy, error) {
	if len(srcs) == 0 {
		return nil, errors.New("no bundle given")
	}
	bs := make([]*bundle.Bundle, len(srcs))
	project := false
	for i, s := range srcs {
		b, err := compile.ReadBundle(bytes.NewReader(s.Data), ro)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		bs[i] = b
		if eval.BundleName(b) == compile.Root {
			project = true
		}
	}
	names := sourceNames(srcs)
	if !project {
		if len(srcs) == 1 && isOrgBundle(bs[0]) {
			return nil, fmt.Errorf("%s: %w", names, ErrOrgBundle)
		}
		if len(srcs) > 1 {
			return nil, fmt.Errorf("%s: %w; give the project's bundle with them", names, ErrOrgBundle)
		}
	}
	e, err := eval.NewBundles(ctx, bs...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", names, err)
	}
	if e.Meta().Kind != "project" {
		return nil, fmt.Errorf("%s: %w", names, ErrOrgBundle)
	}
	return &Policy{Engine: e, Sources: diag.Sources{}}, nil
}

// isOrgBundle says whether b is rooted as an org bundle (chock_orgs/NAME).
func isOrgBundle(b *bundle.Bundle) bool {
	return strings.HasPrefix(eval.BundleName(b), compile.OrgsRoot+"/")
}

// sourceNames are the sources' names, joined for a message.
func sourceNames(srcs []Source) string {
	names := make([]string, len(srcs))
	for i, s := range srcs {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// projectNamed is in with each source named as it is in the project: by
// its path relative to the project's folder (the folder of the config, or
// of the first org where there is none),
// or by its base name when it is outside that folder. A policy's revision
// then depends on the bytes of its files and these names, never on how a
// path was spelled or on where the project is on the machine. spelled
// maps each new name back to the caller's, where that is one name.
func projectNamed(in Input) (Input, map[string]string) {
	spelled := map[string]string{}
	first := append(append([]Source(nil), in.Configs...), in.Orgs...)
	if len(first) == 0 || !isPath(first[0].Name) {
		return in, spelled
	}
	firstAbs, err := filepath.Abs(first[0].Name)
	if err != nil {
		return in, spelled
	}
	project := filepath.Dir(firstAbs)
	taken := map[string]int{}
	rename := func(srcs []Source) []Source {
		out := make([]Source, len(srcs))
		for i, s := range srcs {
			out[i] = s
			if !isPath(s.Name) {
				continue
			}
			abs, err := filepath.Abs(s.Name)
			if err != nil {
				continue
			}
			name := filepath.Base(abs)
			if rel, err := filepath.Rel(project, abs); err == nil && filepath.IsLocal(rel) {
				name = filepath.ToSlash(rel)
			}
			out[i].Name = name
			taken[name]++
			spelled[name] = s.Name
		}
		return out
	}
	in.Configs, in.Orgs = rename(in.Configs), rename(in.Orgs)
	for name, n := range taken {
		if n > 1 {
			delete(spelled, name) // two files, one name: not given back
		}
	}
	return in, spelled
}

// isPath says whether a source's name is a file's path (not <stdin>).
func isPath(name string) bool { return name != "" && !strings.HasPrefix(name, "<") }

// respell gives each diagnostic back the file name the caller spelled.
func respell(ds diag.List, spelled map[string]string) diag.List {
	if len(spelled) == 0 {
		return ds
	}
	for _, d := range ds {
		if sp, ok := spelled[d.Span.File]; ok {
			d.Span.File = sp
		}
	}
	return ds
}
