package lint

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
	"github.com/chockhq/chock/diag"
	"github.com/chockhq/chock/zon"
)

// TestReferenceDocs keeps docs/chock-zon.md in step with
// config.Reference; UPDATE_GOLDEN=1 rewrites it.
func TestReferenceDocs(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "chock-zon.md")
	want := ReferenceMarkdown()
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("docs/chock-zon.md is out of date; run UPDATE_GOLDEN=1 go test ./compile/lint -run TestReference")
	}
}

// probe is a field name no block has or is near, so the decoder's
// unknown-field hint lists every field it knows there.
const probe = "zzqqxxjjvv"

// knownFields asks the decoder which fields it reads in the block at
// path, by writing the block with an unknown field and reading the hint
// that lists the known ones ("known fields: .a, .b"). ok is false when
// the decoder reported no unknown field there: it reads no such block.
func knownFields(t *testing.T, file, path string) (fields []string, ok bool) {
	t.Helper()
	doc := ".{ ." + probe + " = 1 }"
	segs := strings.Split(path, ".")
	if path == "" {
		segs = nil
	}
	for i := len(segs) - 1; i >= 0; i-- {
		name, list := strings.CutSuffix(segs[i], "[]")
		if list {
			doc = ".{ ." + name + " = .{ " + doc + " } }"
		} else {
			doc = ".{ ." + name + " = " + doc + " }"
		}
	}
	var ds diag.List
	if file == "org.zon" {
		if path != "" {
			doc = strings.Replace(doc, ".{", `.{ .name = "acme",`, 1)
		}
		_, ds = config.LoadOrg(file, []byte(doc))
	} else {
		_, ds = config.Load(file, []byte(doc))
	}
	for _, d := range ds {
		if d.Code != config.CodeUnknownField || !strings.Contains(d.Message, "."+probe) {
			continue
		}
		list, found := strings.CutPrefix(d.Hint, "known fields: .")
		if !found {
			t.Fatalf("%s %s: the unknown-field hint is %q; TestReferenceKnowsEveryField reads the known fields from it", file, path, d.Hint)
		}
		return strings.Split(list, ", ."), true
	}
	return nil, false
}

// TestReferenceKnowsEveryField: every block the reference lists has
// exactly the fields the decoder reads there, in the decoder's order, and
// every block of chock.zon the decoder reads (config.Blocks) is listed
// with its own table when it is a struct or a list of structs.
func TestReferenceKnowsEveryField(t *testing.T) {
	blocks := map[string]config.RefBlock{}
	for _, b := range config.Reference {
		key := b.File + " ." + b.Path
		if _, dup := blocks[key]; dup {
			t.Errorf("the reference lists %s twice", key)
		}
		blocks[key] = b
		var names []string
		for _, f := range b.Fields {
			names = append(names, f.Name)
		}
		want, ok := []string(nil), false
		if b.File == "chock.zon" && b.Path == "" {
			// The top level reports no unknown field (the rest of Chock
			// reads the others): the decoder's list is config.Blocks.
			want, ok = config.Blocks, true
		} else {
			want, ok = knownFields(t, b.File, b.Path)
		}
		if !ok {
			t.Errorf("%s .%s: the decoder reads no such block", b.File, b.Path)
			continue
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s .%s: the reference has fields %v; the decoder reads %v (add each to its block's table in compile/config/blocks.go)", b.File, b.Path, names, want)
		}
	}
	// Every field of chock.zon whose value is a struct, or a list of them,
	// has a block of its own.
	for _, b := range config.Reference {
		for _, f := range b.Fields {
			path := strings.TrimPrefix(b.Path+"."+f.Name, ".")
			_, isStruct := knownFields(t, b.File, path)
			_, isList := knownFields(t, b.File, path+"[]")
			switch {
			case isStruct && blocks[b.File+" ."+path].File == "":
				t.Errorf("%s .%s is a struct the decoder reads; the reference has no block for it", b.File, path)
			case isList && blocks[b.File+" ."+path+"[]"].File == "":
				t.Errorf("%s .%s is a list of structs the decoder reads; the reference has no block for its entries", b.File, path)
			}
		}
	}
}

// TestReferenceCodes: every code the reference names is in the catalog,
// and every code of the catalog guards some block or field.
func TestReferenceCodes(t *testing.T) {
	named := map[string]bool{}
	for _, b := range config.Reference {
		all := slices.Clone(b.Codes)
		for _, f := range b.Fields {
			all = append(all, f.Codes...)
		}
		for _, c := range all {
			named[c] = true
			if _, ok := CheckFor(c); !ok {
				t.Errorf("%s .%s names %q, which is not in the catalog", b.File, b.Path, c)
			}
		}
	}
	for _, c := range Catalog {
		if !named[c.Code] {
			t.Errorf("no block or field of the reference names %q", c.Code)
		}
	}
}

// TestReferenceExamples: each block's example is a document that decodes
// without an error, lints without one, and writes every field of the
// block; each field's example is a ZON value.
func TestReferenceExamples(t *testing.T) {
	for _, b := range config.Reference {
		var ds diag.List
		if b.File == "org.zon" {
			org, dd := config.LoadOrg(b.File, []byte(b.Example))
			ds = dd
			if org != nil {
				ds = append(ds, Run(Input{Orgs: []*config.Org{org}})...)
			}
		} else {
			c, dd := config.Load(b.File, []byte(b.Example))
			ds = dd
			if c != nil {
				ds = append(ds, Run(Input{Config: c})...)
			}
		}
		for _, d := range ds {
			if d.Severity == diag.Error {
				t.Errorf("%s .%s: the example has an error: %s: %s", b.File, b.Path, d.Code, d.Message)
			}
		}
		for _, f := range b.Fields {
			if !strings.Contains(b.Example, "."+f.Name+" = ") {
				t.Errorf("%s .%s: the example does not write .%s", b.File, b.Path, f.Name)
			}
			if _, err := zon.ParseDocument("example", []byte(fmt.Sprintf(".{ .%s = %s }", f.Name, f.Example))); err != nil {
				t.Errorf("%s .%s.%s: the example %s is not ZON: %v", b.File, b.Path, f.Name, f.Example, err)
			}
			if f.Type == "" || f.Default == "" || f.Summary == "" {
				t.Errorf("%s .%s.%s: type, default and summary are all needed", b.File, b.Path, f.Name)
			}
		}
	}
}
