package fleet

import (
	"bytes"
	"testing"

	"github.com/open-policy-agent/opa/v1/bundle"
)

// regoBundle is a bundle of one module that is not chock's.
func regoBundle(t *testing.T, src string) []byte {
	t.Helper()
	b := bundle.Bundle{
		Manifest: bundle.Manifest{Revision: "other", Roots: &[]string{"other"}},
		Data:     map[string]any{},
		Modules:  []bundle.ModuleFile{{URL: "/other.rego", Path: "/other.rego", Raw: []byte(src)}},
	}
	var out bytes.Buffer
	if err := bundle.NewWriter(&out).Write(b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
