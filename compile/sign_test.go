package compile

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"github.com/chockhq/chock/internal/bundletest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// rsaKeys is a new RSA key pair in PEM (bundletest.RSAKeys).
func rsaKeys(t *testing.T) (priv, pub []byte) { return bundletest.RSAKeys(t) }

func orgBundle(t *testing.T, key *Key) []byte {
	t.Helper()
	o, ds := config.LoadOrg("org.zon", []byte(`.{ .name = "acme", .version = "1", .policy = .{ .default = .ask, .deny = .{"exec.path.curl"}, .rules = .{ .{ .action = "mcp.*", .decision = .allow, .why = "servers are fine" } } } }`))
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	out, err := Compile(Input{Orgs: []*config.Org{o}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := out.WriteBundle(&buf, key); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// edit rewrites one file of a .tar.gz bundle (bundletest.Edit).
func edit(t *testing.T, tgz []byte, name string, f func([]byte) []byte) []byte {
	t.Helper()
	return bundletest.Edit(t, tgz, name, f)
}

func TestOrgBundleRoundTrip(t *testing.T) {
	priv, pub := rsaKeys(t)
	signed := orgBundle(t, &Key{Material: priv})
	org, err := ReadOrgBundle("acme.tar.gz", bytes.NewReader(signed), ReadOptions{Verify: &Key{Material: pub}})
	if err != nil {
		t.Fatal(err)
	}
	if org.Name.Value != "acme" || org.Version.Value != "1" || org.Policy.Default.Value != config.Ask || !org.Policy.Default.Set || len(org.Policy.Rules) != 2 {
		t.Fatalf("org read back wrong: %+v", org)
	}
	r := org.Policy.Rules[1]
	if r.Pattern.String() != "mcp.*" || r.Decision != config.Allow || r.Why.Value != "servers are fine" || r.Span.File != "org.zon" || r.Span.Start.Line != 1 {
		t.Errorf("rule read back wrong: %+v", r)
	}
	// Without a verification key a signed bundle is refused, as opa run
	// refuses it, unless the check is skipped in so many words.
	if _, err := ReadOrgBundle("acme.tar.gz", bytes.NewReader(signed), ReadOptions{}); !errors.Is(err, ErrSignedNoKey) {
		t.Fatalf("a signed bundle read with no key: %v", err)
	}
	tampered := edit(t, signed, "chock_orgs/acme/layer.rego", func(b []byte) []byte { return append(b, []byte("\nextra := 1\n")...) })
	if _, err := ReadOrgBundle("acme.tar.gz", bytes.NewReader(tampered), ReadOptions{}); !errors.Is(err, ErrSignedNoKey) {
		t.Fatalf("a tampered signed bundle read with no key: %v", err)
	}
	if _, err := ReadOrgBundle("acme.tar.gz", bytes.NewReader(signed), ReadOptions{SkipVerify: true}); err != nil {
		t.Fatal(err)
	}
	// A project bundle is not an org bundle.
	c, _ := config.Load("chock.zon", []byte(".{}"))
	out, _ := Compile(Input{Config: c})
	var buf bytes.Buffer
	out.WriteBundle(&buf, nil)
	if _, err := ReadOrgBundle("p.tar.gz", &buf, ReadOptions{}); !errors.Is(err, ErrNotOrgBundle) {
		t.Errorf("project bundle as org: %v", err)
	}
}

// TestSignatureRefusals: each way a signature can fail refuses the bundle.
func TestSignatureRefusals(t *testing.T) {
	priv, pub := rsaKeys(t)
	_, otherPub := rsaKeys(t)
	signed := orgBundle(t, &Key{Material: priv})
	cases := []struct {
		name   string
		bundle []byte
		key    []byte
		want   string
	}{
		{"unsigned with a key required", orgBundle(t, nil), pub, "missing .signatures.json"},
		{"wrong key", signed, otherPub, "verification error"},
		{"edited data.json", edit(t, signed, "data.json", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"deny"`), []byte(`"allow"`), 1)
		}), pub, "digest mismatch"},
		{"edited module", edit(t, signed, "chock_orgs/acme/layer.rego", func(b []byte) []byte {
			return append(b, []byte("\nextra := 1\n")...)
		}), pub, "digest mismatch"},
		{"edited manifest", edit(t, signed, ".manifest", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"revision":"`), []byte(`"revision":"x`), 1)
		}), pub, "digest mismatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadOrgBundle("acme.tar.gz", bytes.NewReader(c.bundle), ReadOptions{Verify: &Key{Material: c.key}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error with %q, got %v", c.want, err)
			}
			if !strings.Contains(err.Error(), "signature check failed") {
				t.Errorf("error does not say it is a signature failure: %v", err)
			}
		})
	}
}

func TestHMACSigningIsDeterministic(t *testing.T) {
	key := &Key{Material: []byte("a shared secret of 32 bytes, ok."), Alg: "HS256"}
	a, b := orgBundle(t, key), orgBundle(t, key)
	if !bytes.Equal(a, b) {
		t.Fatal("two signed compilations differ")
	}
	if _, err := ReadOrgBundle("x", bytes.NewReader(a), ReadOptions{Verify: key}); err != nil {
		t.Fatal(err)
	}
}

// TestKeyCheck: an HMAC secret that is a PEM key, or shorter than its hash,
// is refused for signing and for verifying; so is a key pair algorithm
// given a secret that is not PEM. No message carries the key.
func TestKeyCheck(t *testing.T) {
	priv, pub := rsaKeys(t)
	good := orgBundle(t, &Key{Material: priv})
	for _, c := range []struct {
		name string
		key  Key
		want string
	}{
		{"public key as HS256 secret", Key{Material: pub, Alg: "HS256"}, "must not be a key (this one reads as a PEM key)"},
		{"private key as HS512 secret", Key{Material: priv, Alg: "HS512"}, "must not be a key (this one reads as a PEM key)"},
		{"DER public key as HS256 secret", Key{Material: derOf(t, pub), Alg: "HS256"}, "reads as a DER-encoded key"},
		{"base64 DER public key as HS256 secret", Key{Material: []byte(base64.StdEncoding.EncodeToString(derOf(t, pub))), Alg: "HS256"}, "reads as a base64-encoded DER key"},
		{"OpenSSH key line as HS256 secret", Key{Material: []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBEVp0Ukz7KP3mS0qnBK0tqqS5k0i6Yr1t3S3Nh8bXzz user@host"), Alg: "HS256"}, "reads as an OpenSSH public key"},
		{"JWK as HS256 secret", Key{Material: []byte(`{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W","e":"AQAB"}`), Alg: "HS256"}, "reads as a JSON Web Key"},
		{"short HS256 secret", Key{Material: []byte("s3kr1t-x"), Alg: "HS256"}, "at least 32 bytes"},
		{"short HS384 secret", Key{Material: bytes.Repeat([]byte("k"), 40), Alg: "HS384"}, "at least 48 bytes"},
		{"RS256 with a secret", Key{Material: bytes.Repeat([]byte("k"), 40), Alg: "RS256"}, "is a PEM file"},
		{"unknown algorithm", Key{Material: pub, Alg: "none"}, "unknown algorithm"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.key.Check()
			if !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if bytes.Contains([]byte(err.Error()), c.key.Material) {
				t.Error("the key is in the message")
			}
			if _, err := ReadOrgBundle("x", bytes.NewReader(good), ReadOptions{Verify: &c.key}); !errors.Is(err, ErrBadKey) {
				t.Errorf("verifying with it: %v", err)
			}
			c2, _ := config.Load("chock.zon", []byte(".{}"))
			out, _ := Compile(Input{Config: c2})
			if _, err := out.Bundle(&c.key); !errors.Is(err, ErrBadKey) {
				t.Errorf("signing with it: %v", err)
			}
		})
	}
}

// derOf is the DER inside a PEM block.
func derOf(t *testing.T, p []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("no PEM block")
	}
	return b.Bytes
}

// TestSigningKeyNeverShown: a key OPA's signer cannot use is reported
// without its bytes, and a secret is never taken for a file name.
func TestSigningKeyNeverShown(t *testing.T) {
	secret := []byte("TOPSECRET-hmac-key-material-0123456789\x00abc")
	c, _ := config.Load("chock.zon", []byte(".{}"))
	out, _ := Compile(Input{Config: c})
	if _, err := out.Bundle(&Key{Material: secret, Alg: "HS256"}); err != nil && bytes.Contains([]byte(err.Error()), []byte("TOPSECRET")) {
		t.Fatalf("the key is in the error: %v", err)
	}
	// A secret that names an existing file signs with the secret itself.
	dir := t.TempDir()
	name := filepath.Join(dir, "a-file-named-like-the-secret-0123456789")
	os.WriteFile(name, []byte("the file's contents, not the secret, 32+ bytes long"), 0o600)
	k := &Key{Material: []byte(name), Alg: "HS256"}
	b, err := out.Bundle(k)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	bundle.NewWriter(&buf).Write(*b)
	if _, err := ReadBundle(&buf, ReadOptions{Verify: k}); err != nil {
		t.Fatalf("the bundle was not signed with the secret: %v", err)
	}
	big := &Key{Material: bytes.Repeat([]byte("k"), 8192), Alg: "HS256"}
	if _, err := out.Bundle(big); err != nil {
		t.Fatalf("an 8 KiB secret: %v", err)
	}
}
