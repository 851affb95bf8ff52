package zon

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chockhq/chock/diag"
)

func addCorpusSeeds(f *testing.F) {
	for _, v := range loadVectors(f) {
		f.Add(v.bytes(f))
	}
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "zon", "real", "*.zon"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err == nil && len(b) < 16<<10 {
			f.Add(b)
		}
	}
}

// FuzzParse: no panic; an error is a diagnostic inside the input, the same
// one the participle reference gives; a value renders as valid JSON, the
// fast path agrees with participle, the tree's nodes with the values made
// from them, and fmt keeps the value and comments and is idempotent.
func FuzzParse(f *testing.F) {
	addCorpusSeeds(f)
	f.Fuzz(func(t *testing.T, src []byte) {
		doc, err := ParseDocument("f.zon", src)
		if len(src) <= 4096 {
			checkMatchesSlow(t, src)
		}
		if err != nil {
			var d *diag.Diagnostic
			if !errors.As(err, &d) {
				t.Fatalf("error is not a diagnostic: %T %v", err, err)
			}
			if strings.HasPrefix(d.Message, "internal error") {
				t.Fatalf("parser panicked on %q: %s", src, d.Message)
			}
			if d.Span.Start.Offset < 0 || d.Span.Start.Offset > len(src) || d.Span.Start.Line < 1 || d.Span.Start.Col < 1 {
				t.Fatalf("error span %+v outside input of %d bytes", d.Span, len(src))
			}
			return
		}
		for _, js := range [][]byte{JSON(doc.Value), TaggedJSON(doc.Value)} {
			if !json.Valid(js) {
				t.Fatalf("invalid JSON for %q: %s", src, js)
			}
		}
		checkFastMatchesSlow(t, src)
		checkTreeMatchesValues(t, src)
		checkFormatRoundTrip(t, src)
	})
}
