package zon

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chockhq/chock/diag"
)

// vector is one entry of testdata/zon/vectors.json (see its README).
type vector struct {
	Name         string          `json:"name"`
	Input        string          `json:"input"`
	InputHex     string          `json:"input_hex"`
	Valid        bool            `json:"valid"`
	ExpectTagged json.RawMessage `json:"expect_tagged"`
	Expect       json.RawMessage `json:"expect"`
	ZigError     *string         `json:"zig_error"`
}

func (v vector) bytes(t testing.TB) []byte {
	if v.InputHex != "" {
		b, err := hex.DecodeString(v.InputHex)
		if err != nil {
			t.Fatalf("%s: bad input_hex: %v", v.Name, err)
		}
		return b
	}
	return []byte(v.Input)
}

func loadVectors(t testing.TB) []vector {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "zon", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

func decodeJSON(t testing.TB, b []byte) any {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// positionMismatches lists the invalid vectors whose error position differs
// from Zig's; it must stay under 5% of the invalid vectors.
var positionMismatches = map[string]bool{}

func TestVectors(t *testing.T) {
	vs := loadVectors(t)
	invalid, samePos := 0, 0
	for _, vec := range vs {
		t.Run(vec.Name, func(t *testing.T) {
			src := vec.bytes(t)
			v, err := Parse("v.zon", src)
			if vec.Valid {
				if err != nil {
					t.Fatalf("valid input %q rejected: %v", src, err)
				}
				got := decodeJSON(t, TaggedJSON(v))
				want := decodeJSON(t, vec.ExpectTagged)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("input %q\n got %s\nwant %s", src, TaggedJSON(v), vec.ExpectTagged)
				}
				gotPlain := decodeJSON(t, JSON(v))
				wantPlain := decodeJSON(t, vec.Expect)
				if !reflect.DeepEqual(gotPlain, wantPlain) {
					t.Fatalf("input %q plain\n got %s\nwant %s", src, JSON(v), vec.Expect)
				}
				return
			}
			invalid++
			if err == nil {
				t.Fatalf("invalid input %q accepted: %s", src, JSON(v))
			}
			var d *diag.Diagnostic
			if !errors.As(err, &d) {
				t.Fatalf("error is not a diagnostic: %T %v", err, err)
			}
			if d.Span.Start.Offset < 0 || d.Span.Start.Offset > len(src) {
				t.Fatalf("error offset %d outside input of %d bytes", d.Span.Start.Offset, len(src))
			}
			if vec.ZigError == nil {
				samePos++
				return
			}
			want := strings.SplitN(*vec.ZigError, ":", 3)
			got := fmt.Sprintf("%d:%d", d.Span.Start.Line, d.Span.Start.Col)
			if got == want[0]+":"+want[1] {
				samePos++
				if positionMismatches[vec.Name] {
					t.Errorf("%s is listed as a position mismatch but now agrees with Zig", vec.Name)
				}
				return
			}
			if !positionMismatches[vec.Name] {
				t.Errorf("input %q: error at %s (%s), Zig says %s", src, got, d.Message, *vec.ZigError)
			}
		})
	}
	if invalid > 0 {
		t.Logf("invalid vectors: %d, Zig's line:col: %d (%.1f%%)", invalid, samePos, 100*float64(samePos)/float64(invalid))
		if float64(samePos) < 0.95*float64(invalid) {
			t.Errorf("only %d of %d invalid vectors report Zig's position", samePos, invalid)
		}
	}
}

func TestRealFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "zon", "real", "*.zon"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no real files: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Parse(f, src); err != nil {
				t.Fatalf("real file rejected: %v", err)
			}
		})
	}
}
