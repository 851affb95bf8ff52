package compile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/internal/safefile"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// Root is the bundle root every chock policy lives under.
const Root = "chock"

// DefaultKeyID is the key id chock signs with unless told otherwise; it is
// the one `opa build --signing-key` uses.
const DefaultKeyID = "default"

// Key is a signing or verification key: PEM text (RSA or ECDSA) or an HMAC
// secret, with its algorithm and key id.
type Key struct {
	Material []byte
	Alg      string // RS256 (default), PS256, ES256, HS256, ... as OPA names them
	ID       string // default "default"
}

func (k *Key) alg() string {
	if k.Alg == "" {
		return "RS256"
	}
	return k.Alg
}

func (k *Key) id() string {
	if k.ID == "" {
		return DefaultKeyID
	}
	return k.ID
}

// formatted returns the modules sorted by path. The generator writes them
// as opa fmt does (a test holds it to that), so no formatting pass runs.
func (o *Output) formatted() ([]bundle.ModuleFile, error) {
	paths := make([]string, 0, len(o.Modules))
	for p := range o.Modules {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var mods []bundle.ModuleFile
	for _, p := range paths {
		mods = append(mods, bundle.ModuleFile{URL: "/" + p, Path: "/" + p, Raw: []byte(o.Modules[p]), Parsed: o.Parsed[p]})
	}
	return mods, nil
}

// Bundle builds the OPA bundle: a manifest with the root, Rego version 1
// and the content digest as revision, the modules and data.json; signed
// when key is not nil.
func (o *Output) Bundle(key *Key) (*bundle.Bundle, error) {
	mods, err := o.formatted()
	if err != nil {
		return nil, err
	}
	v1 := 1
	b := &bundle.Bundle{
		Manifest: bundle.Manifest{
			Revision:    o.Revision,
			Roots:       &[]string{Root},
			RegoVersion: &v1,
			Metadata:    map[string]any{"chock": map[string]any{"kind": o.Kind}},
		},
		Data:    o.Data,
		Modules: mods,
	}
	if key != nil {
		sc := bundle.NewSigningConfig(string(key.Material), key.alg(), "")
		if err := b.GenerateSignature(sc, key.id(), false); err != nil {
			return nil, fmt.Errorf("signing the bundle: %w", err)
		}
	}
	return b, nil
}

// WriteBundle writes the bundle as a .tar.gz. The same input writes the
// same bytes (with RSA or HMAC signatures, which are deterministic).
func (o *Output) WriteBundle(w io.Writer, key *Key) error {
	b, err := o.Bundle(key)
	if err != nil {
		return err
	}
	return bundle.NewWriter(w).DisableFormat(true).Write(*b)
}

// WriteRego writes the modules, data.json and .manifest under dir, for
// review. dir may be new, empty, or one WriteRego wrote before and nobody
// changed since (safefile.WriteDir); anything else in it is refused with
// a *safefile.ForeignError and nothing is written.
func (o *Output) WriteRego(dir string) error {
	b, err := o.Bundle(nil)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	for _, m := range b.Modules {
		files[strings.TrimPrefix(m.Path, "/")] = m.Raw
	}
	data, _ := json.MarshalIndent(b.Data, "", "  ")
	files["data.json"] = append(data, '\n')
	man, _ := json.MarshalIndent(b.Manifest, "", "  ")
	files[".manifest"] = append(man, '\n')
	return safefile.WriteDir(dir, files)
}

// ErrNotOrgBundle means a bundle given as an org ceiling is not an org-only
// chock bundle.
var ErrNotOrgBundle = errors.New("not an org bundle compiled by chock compile --org-only")

// ReadOrgBundle reads an org-only bundle back into the org it was compiled
// from. With verify set, the bundle must carry a valid signature by that
// key: a missing, wrong or tampered signature is an error.
func ReadOrgBundle(name string, r io.Reader, verify *Key) (*config.Org, error) {
	rd := bundle.NewReader(r).WithRegoVersion(ast.RegoV1).WithBundleName(name).WithSizeLimitBytes(64 << 20)
	if verify != nil {
		kc := &bundle.KeyConfig{Key: string(verify.Material), Algorithm: verify.alg()}
		rd = rd.WithBundleVerificationConfig(bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{verify.id(): kc}, verify.id(), "", nil))
	} else {
		rd = rd.WithSkipBundleVerification(true)
	}
	b, err := rd.Read()
	if err != nil {
		if verify != nil {
			return nil, fmt.Errorf("%s: signature check failed: %w", name, err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return orgFromData(name, b.Data)
}

// orgFromData rebuilds an org from data.chock.meta of an org-only bundle.
func orgFromData(name string, data map[string]any) (*config.Org, error) {
	m, ok := MetaOf(data)
	if !ok || m.Kind != "org" || len(m.Layers) != 1 {
		return nil, fmt.Errorf("%s: %w", name, ErrNotOrgBundle)
	}
	l := m.Layers[0]
	org := &config.Org{File: l.File, Name: config.Text{Value: l.Name}, Version: config.Text{Value: l.Version}}
	def, ok := config.ParseDecision(l.Default)
	if !ok || l.Name == "" {
		return nil, fmt.Errorf("%s: %w: bad layer record", name, ErrNotOrgBundle)
	}
	org.Policy.Default, org.Policy.DefaultSet = def, l.DefaultSet
	if len(l.DefaultPos) == 2 {
		org.Policy.DefaultSpan = pointSpan(l.File, l.DefaultPos[0], l.DefaultPos[1])
	}
	for _, rm := range l.Rules {
		p, err := action.ParsePattern(rm.Pattern)
		if err != nil {
			return nil, fmt.Errorf("%s: rule %q: %w", name, rm.Pattern, err)
		}
		d, ok := config.ParseDecision(rm.Decision)
		if !ok {
			return nil, fmt.Errorf("%s: rule %q: unknown decision %q", name, rm.Pattern, rm.Decision)
		}
		org.Policy.Rules = append(org.Policy.Rules, &config.Rule{Pattern: p, Decision: d, Why: config.Text{Value: rm.Why},
			Span: pointSpan(rm.File, rm.Line, rm.Col), From: "bundle"})
	}
	return org, nil
}

func pointSpan(file string, line, col int) diag.Span {
	p := diag.Pos{Line: line, Col: col}
	return diag.Span{File: file, Start: p, End: p}
}
