package fleet

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"

	"github.com/open-policy-agent/opa/v1/bundle"
)

// retar rewrites each file of a gzip'd tar through edit.
func retar(t *testing.T, b []byte, edit func(name string, body []byte) []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		body = edit(h.Name, body)
		h.Size = int64(len(body))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write(body)
	}
	tw.Close()
	zw.Close()
	return out.Bytes()
}

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
