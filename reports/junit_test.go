package reports

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
)

// TestWriteJUnit requires one testcase per scenario and seed, a failure for
// an expectation not met, an error for a run that could not be carried out,
// and XML that a CI system can parse.
func TestWriteJUnit(t *testing.T) {
	cases := []Case{
		{Scenario: "redlock-clock-jump", Seed: 1, Expected: checker.Expectation{Verdict: checker.Invalid, Anomalies: []string{checker.DoubleHold}}, Verdict: checker.Invalid, Anomalies: []string{checker.DoubleHold}, Met: true, Elapsed: 12 * time.Second},
		{Scenario: "redlock-clock-jump", Seed: 2, Expected: checker.Expectation{Verdict: checker.Invalid, Anomalies: []string{checker.DoubleHold}}, Verdict: checker.Valid, Met: false, Elapsed: 11 * time.Second},
		{Scenario: "zk-gc-pause", Seed: 1, Expected: checker.Expectation{Verdict: checker.Invalid}, Verdict: checker.Unknown, Err: "runner: setup failed: zookeeper would not start"},
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, "jepsen-lite", cases); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Errors   int    `xml:"errors,attr"`
			Cases    []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, buf.String())
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites\n%s", len(doc.Suites), buf.String())
	}
	s := doc.Suites[0]
	if s.Tests != 3 || s.Failures != 1 || s.Errors != 1 || len(s.Cases) != 3 {
		t.Errorf("suite %+v", s)
	}
	for i, want := range []struct {
		seed           string
		failure, error bool
	}{{"seed=1", false, false}, {"seed=2", true, false}, {"seed=1", false, true}} {
		c := s.Cases[i]
		if !strings.Contains(c.Name, want.seed) || (c.Failure != nil) != want.failure || (c.Error != nil) != want.error {
			t.Errorf("case %d = %+v, want %+v", i, c, want)
		}
	}
	if !strings.Contains(buf.String(), "zookeeper would not start") {
		t.Error("the error's message is not in the XML")
	}
}
