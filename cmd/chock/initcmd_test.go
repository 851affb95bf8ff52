package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestInitTemplates: every template, alone and under the org.zon of
// --org, is lint-clean (no finding at all, not even a note), formatted,
// and its .expect passes and exercises every rule of both files.
func TestInitTemplates(t *testing.T) {
	for _, name := range templateNames {
		for _, withOrg := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "+org"}[withOrg], func(t *testing.T) {
				dir := t.TempDir()
				args := []string{"init", "--template", name, dir}
				if withOrg {
					args = []string{"init", "--template", name, "--org", dir}
				}
				if code, out, errs := runBuffered(t, args...); code != exitOK || errs != "" {
					t.Fatalf("init: exit %d\n%s%s", code, out, errs)
				}
				project := filepath.Join(dir, "chock.zon")
				var orgs []string
				files := []string{project}
				if withOrg {
					org := filepath.Join(dir, "org.zon")
					orgs = []string{"--org", org}
					files = append(files, org)
				}
				lint := append(append([]string{"lint", "--strict", "--format", "json"}, orgs...), project)
				if code, out, errs := runBuffered(t, lint...); code != exitOK || strings.Join(strings.Fields(out), "") != `{"diagnostics":[]}` || errs != "" {
					t.Errorf("lint: exit %d\n%s%s", code, out, errs)
				}
				if code, out, errs := runBuffered(t, append([]string{"fmt", "--check", "-d"}, files...)...); code != exitOK || out != "" || errs != "" {
					t.Errorf("fmt --check: exit %d\n%s%s", code, out, errs)
				}
				test := append(append([]string{"test", "--threshold", "100"}, orgs...), project)
				if code, out, errs := runBuffered(t, test...); code != exitOK || !strings.HasSuffix(out, " 0 failed\n") || errs != "" {
					t.Errorf("test --threshold 100: exit %d\n%s%s", code, out, errs)
				}
			})
		}
	}
}
