package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
)

// JUnitFile is the conventional name of the JUnit report of a gate.
const JUnitFile = "junit.xml"

// Case is the outcome of one scenario run with one seed, as one JUnit
// testcase.
type Case struct {
	Scenario  string
	Seed      uint64
	Expected  checker.Expectation
	Verdict   checker.Verdict
	Anomalies []string // the anomaly kinds found
	Met       bool     // whether the run ended as Expected
	Elapsed   time.Duration
	RunDir    string // the run's store directory, if any
	Err       string // why the run itself failed (not the lock), if it did
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func junitSeconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// expectationText says what a case expected, e.g. "invalid with stale-write".
func expectationText(e checker.Expectation) string {
	v := e.Verdict
	if v == "" {
		v = checker.Valid
	}
	if len(e.Anomalies) == 0 {
		return string(v)
	}
	return string(v) + " with " + strings.Join(e.Anomalies, ", ")
}

// WriteJUnit writes cases as a JUnit XML report with one testsuite named
// suite and one testcase per scenario and seed (named "<scenario> seed=<n>",
// classname the suite). A case that did not end as expected has a failure
// element; a case whose run failed (Err set) has an error element instead.
func WriteJUnit(w io.Writer, suite string, cases []Case) error {
	s := junitSuite{Name: suite, Tests: len(cases)}
	var total time.Duration
	for _, c := range cases {
		total += c.Elapsed
		jc := junitCase{
			Name:      fmt.Sprintf("%s seed=%d", c.Scenario, c.Seed),
			Classname: suite,
			Time:      junitSeconds(c.Elapsed),
		}
		var out strings.Builder
		fmt.Fprintf(&out, "scenario: %s\nseed: %d\nexpected: %s\nverdict: %s\n", c.Scenario, c.Seed, expectationText(c.Expected), c.Verdict)
		if len(c.Anomalies) > 0 {
			fmt.Fprintf(&out, "anomalies: %s\n", strings.Join(c.Anomalies, ", "))
		}
		if c.RunDir != "" {
			fmt.Fprintf(&out, "run: %s\n", c.RunDir)
		}
		switch {
		case c.Err != "":
			s.Errors++
			jc.Error = &junitProblem{Message: c.Err, Type: "run-error", Text: out.String()}
		case !c.Met:
			s.Failures++
			msg := fmt.Sprintf("expected %s, got %s", expectationText(c.Expected), c.Verdict)
			if len(c.Anomalies) > 0 {
				msg += " with " + strings.Join(c.Anomalies, ", ")
			}
			jc.Failure = &junitProblem{Message: msg, Type: "expectation-not-met", Text: out.String()}
		default:
			jc.SystemOut = out.String()
		}
		s.Cases = append(s.Cases, jc)
	}
	s.Time = junitSeconds(total)
	doc := junitSuites{Name: suite, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("reports: writing junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("reports: writing junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("reports: writing junit: %w", err)
	}
	return nil
}
