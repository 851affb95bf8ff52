package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// junitXSD is the Ant JUnit schema (testdata/junit/README.md).
const junitXSD = "../../testdata/junit/junit.xsd"

// xmllint finds xmllint, the validator of the JUnit check: it skips the
// test without one, and fails it under CI, where .ci/run installs it.
func xmllint(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("xmllint")
	if err != nil {
		msg := "xmllint is not on PATH (Debian: apt-get install libxml2-utils)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// validateJUnit checks doc against the JUnit schema.
func validateJUnit(t *testing.T, lint, doc string) error {
	t.Helper()
	f := filepath.Join(t.TempDir(), "junit.xml")
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(lint, "--noout", "--nonet", "--schema", junitXSD, f).CombinedOutput()
	if err != nil {
		return &schemaError{string(out)}
	}
	return nil
}

type schemaError struct{ out string }

func (e *schemaError) Error() string { return e.out }

// failingPolicy has a passing and a failing expectation, and untrusted
// text where the explanation shows it: an escape sequence in .why.
const failingPolicy = `.{
    .policy = .{
        .default = .deny,
        .allow = .{"exec.path.git"},
        .rules = .{
            .{ .action = "exec.path.gh", .decision = .deny, .why = "no \x1b[31mgh\x1b[0m & <no> \"quotes\"" },
        },
    },
    .expect = .{
        .{ .action = "exec.path.git", .decision = .allow },
        .{ .action = "exec.path.gh", .decision = .allow },
    },
}
`

// TestJUnitValidates: chock test --format junit writes XML that the Ant
// JUnit schema accepts, for the example (every expectation passing) and
// for a policy with a failure whose explanation holds control characters
// and XML's own special characters; one testcase per expectation, the
// failure carrying what differed and the explanation.
func TestJUnitValidates(t *testing.T) {
	lint := xmllint(t)
	code, out, errs := runBuffered(t, "test", "--format", "junit", "--org", "../../examples/org.zon", "../../examples/chock.zon")
	if code != exitOK || errs != "" {
		t.Fatalf("examples: exit %d, stderr %q", code, errs)
	}
	if err := validateJUnit(t, lint, out); err != nil {
		t.Fatalf("the examples' JUnit does not validate:\n%v\n%s", err, out)
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "my policy.zon")
	if err := os.WriteFile(cfg, []byte(failingPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runBuffered(t, "test", "--format", "junit", cfg)
	if code != exitFailed {
		t.Fatalf("a failing expectation: exit %d, want 1\n%s", code, out)
	}
	if err := validateJUnit(t, lint, out); err != nil {
		t.Fatalf("the failing run's JUnit does not validate:\n%v\n%s", err, out)
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("the XML holds a raw escape character:\n%q", out)
	}
	// Read back as any JUnit reader would, text unescaped.
	type problem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Text    string `xml:",chardata"`
	}
	var suite struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name    string   `xml:"name,attr"`
			Failure *problem `xml:"failure"`
		} `xml:"testcase"`
	}
	if err := xml.Unmarshal([]byte(out), &suite); err != nil {
		t.Fatal(err)
	}
	if suite.Tests != 2 || suite.Failures != 1 || len(suite.Cases) != 2 {
		t.Fatalf("tests=%d failures=%d cases=%d, want 2, 1, 2", suite.Tests, suite.Failures, len(suite.Cases))
	}
	ok, bad := suite.Cases[0], suite.Cases[1]
	if ok.Name != "exec.path.git at loop" || ok.Failure != nil {
		t.Errorf("first case %q failure %v", ok.Name, ok.Failure)
	}
	if bad.Name != "exec.path.gh at loop" || bad.Failure == nil {
		t.Fatalf("second case %q has no failure", bad.Name)
	}
	f := bad.Failure
	for _, want := range []string{
		"my policy.zon:11:9: want allow, got deny",
		"exec.path.gh at loop: DENY", // the explanation
		`no \x1b[31mgh\x1b[0m & <no> "quotes"`,
	} {
		if !strings.Contains(f.Text, want) {
			t.Errorf("the failure's text lacks %q:\n%s", want, f.Text)
		}
	}
	if f.Message != "want allow, got deny" || f.Type != "chock.expect" {
		t.Errorf("failure message %q type %q", f.Message, f.Type)
	}

	// A document the schema refuses fails the check, or it proves nothing.
	broken := strings.Replace(out, ` hostname="`, ` host="`, 1)
	if err := validateJUnit(t, lint, broken); err == nil {
		t.Fatalf("a testsuite without hostname validated")
	}
}

// TestTestJSON: --format json has each expectation with what it wanted,
// what decided and whether it passed, the counts and the coverage.
func TestTestJSON(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "chock.zon")
	if err := os.WriteFile(cfg, []byte(failingPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runBuffered(t, "test", "--format", "json", cfg)
	if code != exitFailed {
		t.Fatalf("exit %d, want 1", code)
	}
	var got struct {
		Expectations []struct {
			Action, Phase string
			Want          map[string]string
			Got           map[string]string
			Rule          *struct{ Pattern, Decision, Why string }
			Span          struct{ File string }
			Pass          bool
			Failure       string
		}
		Passed, Failed int
		Coverage       struct {
			Percent        float64
			Covered, Rules int
			Layers         []struct {
				Layer          string
				Covered, Rules int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Passed != 1 || got.Failed != 1 || len(got.Expectations) != 2 {
		t.Fatalf("passed %d failed %d, %d expectations", got.Passed, got.Failed, len(got.Expectations))
	}
	x := got.Expectations[1]
	if x.Action != "exec.path.gh" || x.Phase != "loop" || x.Pass || x.Want["decision"] != "allow" ||
		x.Got["decision"] != "deny" || x.Got["layer"] != "project" || x.Got["rule"] != "exec.path.gh" ||
		x.Rule == nil || x.Rule.Pattern != "exec.path.gh" || x.Span.File != cfg || x.Failure != "want allow, got deny" {
		t.Errorf("the failing expectation: %+v", x)
	}
	if c := got.Coverage; c.Percent != 100 || c.Covered != 2 || c.Rules != 2 || len(c.Layers) != 1 || c.Layers[0].Layer != "project" {
		t.Errorf("coverage %+v", c)
	}
}
