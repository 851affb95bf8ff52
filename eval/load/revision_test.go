package load

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestRevisionIsTheContents: a policy's revision depends on its files'
// bytes and their names in the project, not on how a path was spelled nor
// on where the project is: chock.zon, its absolute path and dir/chock.zon,
// and a copy of the project in another folder, give one revision.
func TestRevisionIsTheContents(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"chock.zon":     `.{ .policy = .{ .allow = .{ "exec.path.gh" }, .deny = .{ "exec.path.curl" } } }`,
		"orgs/acme.zon": `.{ .name = "acme", .policy = .{ .deny = .{ "exec.path.nc" } } }`,
	}
	for _, dir := range []string{"a/proj", "b/elsewhere/proj"} {
		for name, text := range files {
			p := filepath.Join(root, dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	revision := func(config, org string) string {
		t.Helper()
		read := func(name string) Source {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			return Source{Name: name, Data: b}
		}
		p, ds, err := FromSources(context.Background(), Input{Configs: []Source{read(config)}, Orgs: []Source{read(org)}})
		if err != nil {
			t.Fatalf("%s: %v %v", config, err, ds)
		}
		return p.Engine.Revision()
	}
	t.Chdir(filepath.Join(root, "a/proj"))
	want := revision("chock.zon", "orgs/acme.zon")
	abs := filepath.Join(root, "a/proj")
	for _, c := range [][2]string{
		{filepath.Join(abs, "chock.zon"), filepath.Join(abs, "orgs/acme.zon")},
		{"../proj/chock.zon", "./orgs/../orgs/acme.zon"},
		{filepath.Join(root, "b/elsewhere/proj/chock.zon"), filepath.Join(root, "b/elsewhere/proj/orgs/acme.zon")},
	} {
		if got := revision(c[0], c[1]); got != want {
			t.Errorf("%s with %s: revision %s, want %s", c[0], c[1], got, want)
		}
	}
	t.Chdir(root)
	if got := revision("a/proj/chock.zon", "a/proj/orgs/acme.zon"); got != want {
		t.Errorf("a/proj/chock.zon: revision %s, want %s", got, want)
	}
	// A change of content is a change of revision.
	os.WriteFile(filepath.Join(root, "a/proj/chock.zon"), []byte(`.{ .policy = .{ .allow = .{ "exec.path.gh" } } }`), 0o644)
	if got := revision("a/proj/chock.zon", "a/proj/orgs/acme.zon"); got == want {
		t.Error("an edited policy kept its revision")
	}
}
