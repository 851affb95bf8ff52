// Package bundletest helps tests of signed bundles: an RSA key pair to
// sign with, and an edit of a bundle after signing, as an attacker or a
// broken server would make one.
package bundletest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"strings"
	"testing"
)

// Edit rewrites the file name (its path in the bundle, without the
// leading slash) of a .tar.gz bundle through f. The test fails when the
// bundle has no such file or f changes nothing.
func Edit(tb testing.TB, tgz []byte, name string, f func([]byte) []byte) []byte {
	tb.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		tb.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			tb.Fatal(err)
		}
		if strings.TrimPrefix(h.Name, "/") == name {
			edited := f(data)
			if bytes.Equal(edited, data) {
				tb.Fatalf("the edit of %s changed nothing", name)
			}
			data, found = edited, true
		}
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			tb.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	if !found {
		tb.Fatalf("no %s in the bundle", name)
	}
	return out.Bytes()
}

// RSAKeys is a new 2048-bit RSA key pair in PEM: the private key
// (PKCS #1) and the public key (PKIX).
func RSAKeys(tb testing.TB) (priv, pub []byte) {
	tb.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}
