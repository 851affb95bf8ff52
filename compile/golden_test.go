package compile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chockhq/chock/compile/config"
)

// TestGoldenRego holds the generated Rego and data of the examples (and
// the spec's policy) to testdata/compile/NAME/, so a change to the
// generator shows in review as a Rego diff. UPDATE_GOLDEN=1 rewrites them.
func TestGoldenRego(t *testing.T) {
	update := os.Getenv("UPDATE_GOLDEN") == "1"
	for _, p := range testPolicies(t) {
		if p.name != "examples" && p.name != "spec" {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			in := load(t, p)
			if p.name == "examples" {
				// As the example is compiled: under its own file names.
				c, _ := config.Load("examples/chock.zon", []byte(p.project))
				o, _ := config.LoadOrg("examples/org.zon", []byte(p.orgs[0]))
				in = Input{Config: c, Orgs: []*config.Org{o}}
			}
			out, err := Compile(in)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{}
			for path, src := range out.Modules {
				files[path] = []byte(src)
			}
			data, _ := json.MarshalIndent(out.Data(), "", "  ")
			files["data.json"] = append(data, '\n')
			dir := filepath.Join("..", "testdata", "compile", p.name)
			if update {
				os.RemoveAll(dir)
			}
			for path, got := range files {
				golden := filepath.Join(dir, filepath.FromSlash(path))
				if update {
					os.MkdirAll(filepath.Dir(golden), 0o755)
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (UPDATE_GOLDEN=1 go test ./compile -run TestGoldenRego writes it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from its golden file %s (UPDATE_GOLDEN=1 rewrites it):\n%s", path, golden, firstDiff(string(want), string(got)))
				}
			}
			// A golden file for a module the generator no longer writes.
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(dir, p)
				if _, ok := files[filepath.ToSlash(rel)]; !ok {
					t.Errorf("%s is a golden file for nothing the compiler writes", p)
				}
				return nil
			})
		})
	}
}

// firstDiff shows the first line where two texts differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n- %s\n+ %s", i+1, a, b)
		}
	}
	return ""
}

// TestMetaFormat: a bundle of another meta format (an older chock's has
// none) is refused saying so, not read wrong nor called "not chock's".
func TestMetaFormat(t *testing.T) {
	c, _ := config.Load("chock.zon", []byte(`.{ .policy = .{ .allow = .{"exec.path.gh"} } }`))
	out, err := Compile(Input{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	data := out.Data()
	if _, err := MetaOf(data); err != nil {
		t.Fatalf("this chock's own: %v", err)
	}
	meta := data["chock"].(map[string]any)["meta"].(map[string]any)
	for _, f := range []any{nil, 1, 2, 3, 5} {
		if f == nil {
			delete(meta, "format")
		} else {
			meta["format"] = f
		}
		var fe *FormatError
		if _, err := MetaOf(data); !errors.As(err, &fe) || !strings.Contains(err.Error(), "compile it again") {
			t.Errorf("format %v: %v", f, err)
		}
	}
	if _, err := MetaOf(map[string]any{"other": 1}); !errors.Is(err, ErrNotChockBundle) {
		t.Errorf("no meta: %v", err)
	}
}

// TestMetaData: data.chock.meta written out by hand is what a JSON round
// trip of Meta gives.
func TestMetaData(t *testing.T) {
	for _, p := range testPolicies(t) {
		in := load(t, p)
		out, err := Compile(in)
		if err != nil {
			t.Fatal(err)
		}
		want := plain(map[string]any{"chock": map[string]any{"meta": out.Meta}})
		if got := out.Data(); !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Fatalf("%s:\n by hand %s\n JSON    %s", p.name, g, w)
		}
	}
}
