package diag

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	// Imported for its module: it ships the SARIF 2.1.0 schema this test reads.
	_ "github.com/owenrumney/go-sarif/v3/pkg/report/v210/sarif"
	"github.com/xeipuuv/gojsonschema"
)

func sample() (List, Sources) {
	src := Sources{"a.zon": []byte(".{\n\t.x = \"bad\",\n}\n")}
	l := List{
		{Span: Span{File: "a.zon", Start: Pos{Line: 2, Col: 7, Offset: 9}, End: Pos{Line: 2, Col: 12, Offset: 14}},
			Severity: Error, Code: "wrong-type", Message: "x is a string, want a list", Hint: "write .{\"bad\"}"},
		{Span: Span{File: "dir/b c.zon", Start: Pos{Line: 1, Col: 1}}, Severity: Warning, Code: "unknown-namespace", Message: "a: b, c\nd"},
		{Span: Span{File: "a.zon", Start: Pos{Line: 3, Col: 1}}, Severity: Info, Code: "server-no-tool-rule", Message: "note"},
	}
	return l, src
}

func TestWriteText(t *testing.T) {
	l, src := sample()
	var b bytes.Buffer
	if err := WriteText(&b, l[:1], src); err != nil {
		t.Fatal(err)
	}
	want := "a.zon:2:7: error: x is a string, want a list [wrong-type]\n" +
		"    hint: write .{\"bad\"}\n" +
		"  2 | \t.x = \"bad\",\n" +
		"    | \t     ^~~~~\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWriteJSON(t *testing.T) {
	l, _ := sample()
	var b bytes.Buffer
	if err := WriteJSON(&b, l); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Diagnostics []map[string]any `json:"diagnostics"`
	}
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Diagnostics) != 3 || out.Diagnostics[0]["code"] != "wrong-type" || out.Diagnostics[0]["line"] != 2.0 {
		t.Errorf("unexpected JSON: %s", b.String())
	}
	b.Reset()
	WriteJSON(&b, nil)
	if !strings.Contains(b.String(), `"diagnostics": []`) {
		t.Errorf("empty list must be [], got %s", b.String())
	}
}

// sarifSchema returns the OASIS SARIF 2.1.0 JSON schema (errata 01), as
// the go-sarif module ships it in its source (a test-only dependency).
func sarifSchema(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/owenrumney/go-sarif/v3").Output()
	if err != nil {
		t.Fatalf("locating go-sarif: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	src, err := os.ReadFile(filepath.Join(dir, "pkg", "report", "v210", "sarif", "schema.go"))
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.IndexByte(src, '`'), bytes.LastIndexByte(src, '`')
	if i < 0 || j <= i {
		t.Fatal("no schema literal in go-sarif's schema.go")
	}
	schema := string(src[i+1 : j])
	if !strings.Contains(schema, "SARIF) Version 2.1.0 JSON Schema") {
		t.Fatal("that is not the SARIF 2.1.0 schema")
	}
	return schema
}

// TestSARIFValidates checks the SARIF log against the SARIF 2.1.0 JSON schema.
func TestSARIFValidates(t *testing.T) {
	schema := gojsonschema.NewStringLoader(sarifSchema(t))
	l, _ := sample()
	for _, list := range []List{l, nil} {
		var b bytes.Buffer
		rules := []Rule{{Code: "wrong-type", Severity: Error, Summary: "A value of the wrong type."}}
		if err := WriteSARIF(&b, list, Tool{Name: "chock", InformationURI: "https://example.invalid/docs"}, rules); err != nil {
			t.Fatal(err)
		}
		res, err := gojsonschema.Validate(schema, gojsonschema.NewBytesLoader(b.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Valid() {
			t.Fatalf("SARIF does not validate: %v\n%s", res.Errors(), b.String())
		}
		var log struct {
			Runs []struct {
				Results []struct {
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation struct{ URI string }
						}
					}
				}
			}
		}
		json.Unmarshal(b.Bytes(), &log)
		if len(list) > 0 && (len(log.Runs) != 1 || len(log.Runs[0].Results) != 3) {
			t.Fatalf("want 1 run with 3 results: %s", b.String())
		}
		if len(list) > 0 && log.Runs[0].Results[1].Locations[0].PhysicalLocation.ArtifactLocation.URI != "dir/b%20c.zon" {
			t.Errorf("URI not escaped: %s", b.String())
		}
	}
	// A log that breaks the schema must fail, or this test proves nothing.
	bad := `{"version":"2.1.0","runs":[{"tool":{"driver":{}},"results":[{"level":"fatal","message":{}}]}]}`
	res, err := gojsonschema.Validate(schema, gojsonschema.NewStringLoader(bad))
	if err != nil || res.Valid() {
		t.Fatalf("a broken log validated (err %v)", err)
	}
}

func TestWriteGitHub(t *testing.T) {
	l, _ := sample()
	var b bytes.Buffer
	if err := WriteGitHub(&b, l); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"::error file=a.zon,line=2,col=7,endLine=2,endColumn=12,title=wrong-type::x is a string, want a list%0Ahint: write .{\"bad\"}",
		"::warning file=dir/b c.zon,line=1,col=1,title=unknown-namespace::a: b, c%0Ad",
		"::notice file=a.zon,line=3,col=1,title=server-no-tool-rule::note",
	}
	if len(lines) != 3 {
		t.Fatalf("got %d lines: %s", len(lines), b.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, lines[i], want[i])
		}
	}
}

// TestExcerptUntrusted: control bytes in the source line are shown as
// \xNN, the caret stays under the character it points at, and a very long
// line is cut around it.
func TestExcerptUntrusted(t *testing.T) {
	var b strings.Builder
	text := "a\x1b[31mb\x00 X"
	col := strings.IndexByte(text, 'X') + 1
	Excerpt(&b, text, Span{File: "f", Start: Pos{Line: 1, Col: col}, End: Pos{Line: 1, Col: col + 1}})
	shownLine := `a\x1b[31mb\x00 X`
	want := "  1 | " + shownLine + "\n    | " + strings.Repeat(" ", strings.IndexByte(shownLine, 'X')) + "^\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	long := strings.Repeat("\x01", 500) + "X" + strings.Repeat("y", 500)
	Excerpt(&b, long, Span{File: "f", Start: Pos{Line: 1, Col: 501}, End: Pos{Line: 1, Col: 502}})
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	shown, under := []rune(lines[0]), []rune(lines[1])
	caret := strings.IndexRune(lines[1], '^')
	if len(shown) > excerptWidth+20 || caret < 0 || shown[len([]rune(lines[1][:caret]))] != 'X' || len(under) > len(shown) {
		t.Errorf("long line:\n%s", b.String())
	}
}

// TestExcerptAtLineEnd: a span at the end of its line (a file cut short)
// or past it (a bundle's column for a changed file) puts the caret after
// the last character, and never panics.
func TestExcerptAtLineEnd(t *testing.T) {
	for _, col := range []int{11, 12, 50} {
		var b strings.Builder
		Excerpt(&b, ".{ .x = 1,", Span{File: "f", Start: Pos{Line: 1, Col: col}, End: Pos{Line: 1, Col: col + 3}})
		if want := "  1 | .{ .x = 1,\n    |           ^\n"; b.String() != want {
			t.Errorf("col %d:\n%s", col, b.String())
		}
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 errors", 1: "1 error", 2: "2 errors"} {
		if got := Plural(n, "error"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}
