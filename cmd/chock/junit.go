package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/chockhq/chock/eval"
	"github.com/chockhq/chock/internal/safetext"
)

// The JUnit XML of chock test --format junit, as the Apache Ant schema
// has it (testdata/junit/junit.xsd, which a test validates it against):
// one <testsuite> for the config, whose <properties> carry the coverage,
// and a <testcase> for each expectation, named ACTION at PHASE, with a
// <failure> whose message says what differed and whose text is the
// explanation chock explain gives. Jenkins, GitLab and the GitHub test
// report actions read it.
type (
	junitSuite struct {
		XMLName    xml.Name        `xml:"testsuite"`
		Name       string          `xml:"name,attr"`
		Timestamp  string          `xml:"timestamp,attr"`
		Hostname   string          `xml:"hostname,attr"`
		Tests      int             `xml:"tests,attr"`
		Failures   int             `xml:"failures,attr"`
		Errors     int             `xml:"errors,attr"`
		Skipped    int             `xml:"skipped,attr"`
		Time       string          `xml:"time,attr"`
		Properties []junitProperty `xml:"properties>property"`
		Cases      []junitCase     `xml:"testcase"`
		SystemOut  string          `xml:"system-out"`
		SystemErr  string          `xml:"system-err"`
	}
	junitProperty struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	junitCase struct {
		Name      string        `xml:"name,attr"`
		Classname string        `xml:"classname,attr"`
		Time      string        `xml:"time,attr"`
		Failure   *junitProblem `xml:"failure"`
		Error     *junitProblem `xml:"error"`
	}
	junitProblem struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		// Text is escaped by xmlText, which keeps line breaks as they are
		// (encoding/xml writes each as &#xA;, which a person reading the
		// file cannot).
		Text string `xml:",innerxml"`
	}
)

// writeJUnit writes the run as JUnit XML. Every text from the policy
// (file names, patterns, .why) goes through the printer for untrusted
// text first, so the XML holds no control character, which XML 1.0
// cannot carry.
func (r *testReport) writeJUnit(std stdio) error {
	name := safetext.Line(r.policy.Config.File)
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	s := junitSuite{
		Name:      name,
		Timestamp: r.started.UTC().Format("2006-01-02T15:04:05"),
		Hostname:  host,
		Tests:     len(r.results),
		Time:      seconds(r.elapsed),
	}
	c := r.coverage
	s.Properties = append(s.Properties,
		junitProperty{"coverage", strconv.FormatFloat(round2(c.Percent()), 'f', -1, 64)},
		junitProperty{"rules", strconv.Itoa(c.Rules)},
		junitProperty{"rules.covered", strconv.Itoa(c.Covered)})
	for _, l := range c.Layers {
		s.Properties = append(s.Properties,
			junitProperty{"coverage." + safetext.Line(l.Layer), strconv.FormatFloat(round2(l.Percent()), 'f', -1, 64)})
	}
	// Each testcase gets the run's time shared out: a decision takes
	// microseconds, and timing each alone would measure the clock.
	each := time.Duration(0)
	if n := len(r.results); n > 0 {
		each = r.elapsed / time.Duration(n)
	}
	for _, res := range r.results {
		x := res.Expect
		tc := junitCase{Name: fmt.Sprintf("%s at %s", x.Action.Value, x.Phase.Value), Classname: name, Time: seconds(each)}
		if !res.Passed() {
			var b bytes.Buffer
			fmt.Fprintf(&b, "%s: %s\ndecided: %s\n\n", r.policy.Respell(x.Span), res.Failure, eval.Describe(res.Got))
			eval.Explain(res.Got, r.policy.Config).WriteText(&b, r.policy.Sources)
			p := &junitProblem{Message: safetext.Line(res.Failure), Type: "chock.expect", Text: xmlText(safetext.Text(b.String()))}
			if res.Got.Error != "" {
				p.Type = "chock.error"
				tc.Error = p
				s.Errors++
			} else {
				tc.Failure = p
				s.Failures++
			}
		}
		s.Cases = append(s.Cases, tc)
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(s); err != nil {
		return err
	}
	b.WriteString("\n")
	_, err = std.raw.Write(b.Bytes())
	return err
}

// seconds is a duration in seconds with millisecond precision.
func seconds(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// xmlText escapes s as XML character data: &, < and > as entities, the
// rest as it is. s holds no control character but line breaks and tabs
// (safetext.Text has shown the others as \xNN), which is all XML 1.0
// needs besides.
func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\r", "&#xD;").Replace(s)
}
