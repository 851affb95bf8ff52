package compile

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/chockhq/chock/compile/action"
	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/internal/safefile"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// Root is the bundle root of a project bundle.
const Root = "chock"

// OrgsRoot is under what an org bundle is rooted: chock_orgs/NAME, its
// package chock_orgs.NAME, its meta data.chock_orgs.NAME.meta. Org
// bundles of several orgs and a project bundle load side by side.
const OrgsRoot = "chock_orgs"

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

// ErrBadKey is wrapped by a key that cannot be used as given.
var ErrBadKey = errors.New("bad key")

// hmacSize is the smallest secret RFC 7518 §3.2 allows an HMAC algorithm:
// as long as its hash's output.
func hmacSize(alg string) (int, bool) {
	switch alg {
	case "HS256":
		return 32, true
	case "HS384":
		return 48, true
	case "HS512":
		return 64, true
	}
	return 0, false
}

// asymmetric says whether alg is one of the key-pair algorithms OPA signs
// and verifies bundles with.
func asymmetric(alg string) bool {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512":
		return true
	}
	return false
}

// Check refuses a key that is not what its algorithm needs. Above all, an
// HMAC secret that is a PEM key is refused: a verifier given a public key
// as HS256 secret accepts any bundle signed by whoever has that public key.
// The key's material never appears in the error.
func (k *Key) Check() error {
	alg := k.alg()
	if n, ok := hmacSize(alg); ok {
		if what := keyLike(k.Material); what != "" {
			return fmt.Errorf("%w: an %s secret must not be a key (this one reads as %s): anybody who has a public key could sign with it; use RS256, PS256 or ES256 for a key pair", ErrBadKey, alg, what)
		}
		if len(k.Material) < n {
			return fmt.Errorf("%w: an %s secret must be at least %d bytes (RFC 7518), this one is %d", ErrBadKey, alg, n, len(k.Material))
		}
		return nil
	}
	if !asymmetric(alg) {
		return fmt.Errorf("%w: unknown algorithm %q (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, HS256, HS384, HS512)", ErrBadKey, alg)
	}
	if !bytes.Contains(k.Material, []byte("-----BEGIN")) {
		return fmt.Errorf("%w: a %s key is a PEM file (-----BEGIN ...)", ErrBadKey, alg)
	}
	return nil
}

// keyLike says what key b reads as, or "": a PEM block, DER of a public
// or private key or certificate, the same base64-encoded, an OpenSSH
// public key line, a JWK. An HMAC secret must be none of these.
func keyLike(b []byte) string {
	t := bytes.TrimSpace(b)
	switch {
	case bytes.Contains(t, []byte("-----BEGIN")):
		return "a PEM key"
	case bytes.HasPrefix(t, []byte("ssh-")), bytes.HasPrefix(t, []byte("ecdsa-sha2-")), bytes.HasPrefix(t, []byte("sk-")):
		return "an OpenSSH public key"
	case len(t) > 0 && t[0] == '{' && bytes.Contains(t, []byte(`"kty"`)):
		return "a JSON Web Key"
	}
	if derKey(t) {
		return "a DER-encoded key"
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if d, err := enc.DecodeString(string(bytes.Join(bytes.Fields(t), nil))); err == nil && derKey(d) {
			return "a base64-encoded DER key"
		}
	}
	return ""
}

func derKey(d []byte) bool {
	if _, err := x509.ParsePKIXPublicKey(d); err == nil {
		return true
	}
	if _, err := x509.ParsePKCS1PublicKey(d); err == nil {
		return true
	}
	if _, err := x509.ParsePKCS8PrivateKey(d); err == nil {
		return true
	}
	if _, err := x509.ParsePKCS1PrivateKey(d); err == nil {
		return true
	}
	if _, err := x509.ParseECPrivateKey(d); err == nil {
		return true
	}
	_, err := x509.ParseCertificate(d)
	return err == nil
}

// sign signs b with k. OPA's signer takes a key as text or as a file
// name, and tries the text as a file name first (echoing it in a stat
// error); it is given a private temporary file instead, so the key is
// never taken for a name nor shown.
func (k *Key) sign(b *bundle.Bundle) error {
	f, err := os.CreateTemp("", "chock-key-*")
	if err != nil {
		return fmt.Errorf("signing the bundle: %w", err)
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("signing the bundle: %w", err)
	}
	_, err = f.Write(k.Material)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("signing the bundle: %w", err)
	}
	sc := bundle.NewSigningConfig(f.Name(), k.alg(), "")
	if err := b.GenerateSignature(sc, k.id(), false); err != nil {
		return fmt.Errorf("signing the bundle: %w", err)
	}
	return nil
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
			Roots:       &[]string{o.Root()},
			RegoVersion: &v1,
			Metadata:    map[string]any{"chock": map[string]any{"kind": o.Kind}},
		},
		Data:    o.Data(),
		Modules: mods,
	}
	if key != nil {
		if err := key.Check(); err != nil {
			return nil, err
		}
		if err := key.sign(b); err != nil {
			return nil, err
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

// ErrSignedNoKey means a signed bundle was read with no key to check its
// signature: as opa run, chock refuses it unless told to skip the check.
var ErrSignedNoKey = errors.New("the bundle is signed, and no verification key was given to check it; give --verification-key, or --skip-verify to use it unchecked")

// MaxBundleSize bounds a bundle as read, and each file in it.
const MaxBundleSize = 256 << 20

// ReadOptions say how a bundle's signature is treated.
type ReadOptions struct {
	// Verify is the key the bundle must be signed with: a missing, wrong
	// or tampered signature is then an error.
	Verify *Key
	// SkipVerify reads a signed bundle without checking its signature
	// (opa run --skip-verify). Without it and without Verify, a signed
	// bundle is refused with ErrSignedNoKey.
	SkipVerify bool
	// Annotations has the modules' METADATA read into their annotations,
	// as opa inspect -a reads them. Deciding needs none, and reading the
	// annotation of every rule of a large policy is most of its load, so
	// without it the METADATA comments stay comments.
	Annotations bool
}

// ReadBundle reads a .tar.gz bundle under o: the one reader for project
// bundles and org bundles alike.
func ReadBundle(r io.Reader, o ReadOptions) (*bundle.Bundle, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxBundleSize+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > MaxBundleSize {
		return nil, fmt.Errorf("the bundle is larger than %d MiB", MaxBundleSize>>20)
	}
	rd := bundle.NewReader(bytes.NewReader(raw)).WithRegoVersion(ast.RegoV1).WithProcessAnnotations(o.Annotations).WithSizeLimitBytes(MaxBundleSize)
	if k := o.Verify; k != nil {
		if err := k.Check(); err != nil {
			return nil, err
		}
		kc := &bundle.KeyConfig{Key: string(k.Material), Algorithm: k.alg()}
		rd = rd.WithBundleVerificationConfig(bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{k.id(): kc}, k.id(), "", nil))
		b, err := rd.Read()
		if err != nil {
			return nil, fmt.Errorf("signature check failed: %w", err)
		}
		return &b, nil
	}
	if !o.SkipVerify {
		signed, err := hasSignatures(raw)
		if err != nil {
			return nil, err
		}
		if signed {
			return nil, ErrSignedNoKey
		}
	}
	b, err := rd.WithSkipBundleVerification(true).Read()
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// hasSignatures says whether a .tar.gz bundle holds a .signatures.json.
func hasSignatures(raw []byte) (bool, error) {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return false, fmt.Errorf("not a .tar.gz bundle: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading the bundle: %w", err)
		}
		if bundle.IsSignaturesFile(h.Name) {
			return true, nil
		}
	}
}

// IsChockBundle says whether r holds a bundle chock compiled, signed or
// not, of any format: a .tar.gz whose manifest says so (chock's metadata,
// which every chock has written). It reads no module and no data, so it
// costs the same at 10 rules as at 100,000.
func IsChockBundle(r io.Reader) bool {
	zr, err := gzip.NewReader(io.LimitReader(r, MaxBundleSize))
	if err != nil {
		return false
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return false
		}
		if strings.TrimPrefix(h.Name, "/") != bundle.ManifestExt {
			continue
		}
		var m struct {
			Metadata struct {
				Chock *struct {
					Kind string `json:"kind"`
				} `json:"chock"`
			} `json:"metadata"`
		}
		return json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m) == nil && m.Metadata.Chock != nil
	}
}

// ReadOrgBundle reads an org-only bundle back into the org it was compiled
// from, its signature treated as o says.
func ReadOrgBundle(name string, r io.Reader, o ReadOptions) (*config.Org, error) {
	b, err := ReadBundle(r, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return orgFromData(name, b.Data)
}

// orgFromData rebuilds an org from data.chock_orgs.NAME.meta of an org
// bundle. A bundle of an older chock (its meta at data.chock.meta) is
// refused with its *FormatError.
func orgFromData(name string, data map[string]any) (*config.Org, error) {
	if _, old := data["chock"]; old {
		_, err := MetaOf(data)
		var fe *FormatError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return nil, fmt.Errorf("%s: %w", name, ErrNotOrgBundle)
	}
	orgs, _ := data[OrgsRoot].(map[string]any)
	if len(orgs) != 1 || len(data) != 1 {
		return nil, fmt.Errorf("%s: %w", name, ErrNotOrgBundle)
	}
	var m *Meta
	for org, v := range orgs {
		doc, _ := v.(map[string]any)
		var err error
		if m, err = OrgMetaOf(org, doc["meta"]); err != nil {
			var fe *FormatError
			if errors.As(err, &fe) {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			return nil, fmt.Errorf("%s: %w", name, ErrNotOrgBundle)
		}
	}
	l := m.Layers[0]
	if l.Name == "" {
		return nil, fmt.Errorf("%s: %w: bad layer record", name, ErrNotOrgBundle)
	}
	org := &config.Org{File: l.File, Name: config.Text{Value: l.Name, Set: true}, Version: config.Text{Value: l.Version, Set: l.Version != ""}}
	org.Policy.Default = l.Default
	for _, rm := range l.Rules {
		if rm.Builtin {
			continue // chock's own (config.WithBuiltins adds them again)
		}
		p, err := action.ParsePattern(rm.Pattern)
		if err != nil {
			return nil, fmt.Errorf("%s: rule %q: %w", name, rm.Pattern, err)
		}
		org.Policy.Rules = append(org.Policy.Rules, &config.Rule{Pattern: p, Decision: rm.Decision, Why: config.Text{Value: rm.Why},
			Span: rm.Span, From: "bundle"})
	}
	return org, nil
}
