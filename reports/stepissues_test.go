package reports

import (
	"bytes"
	"fmt"
	"html"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestJudgeStepIssues judges valid runs by the steps that did not run as
// written: one that its step did not allow makes the outcome unknown and
// the expectation unmet, with a note that names the first few; one that
// its step allowed (expect-failure) leaves the run as it was; a checker's
// proof of a violation still stands.
func TestJudgeStepIssues(t *testing.T) {
	notRun := func(step string, expected bool) StepIssue {
		return StepIssue{Step: step, Issue: StepNotRun, Expected: expected}
	}
	late := func(step string, ns int64, heal bool) StepIssue {
		return StepIssue{Step: step, Issue: StepLate, LateNS: ns, Heal: heal}
	}
	var many []StepIssue
	for i := range 5 {
		many = append(many, notRun(fmt.Sprintf("at %ds kill n1", i+1), false))
	}
	tests := []struct {
		name     string
		verdict  checker.Verdict
		issues   []StepIssue
		want     checker.Verdict
		notes    []string // what the nemesis result's note says; none for no result
		failsRun bool
	}{
		{"none", checker.Valid, nil, checker.Valid, nil, false},
		{"one not run", checker.Valid, []StepIssue{notRun("at 7.5s kill n1", false)}, checker.Unknown,
			[]string{"so its outcome is unknown: 1 step did not run (the run ended before its time): at 7.5s kill n1"}, true},
		{"late, and a heal late", checker.Valid, []StepIssue{late("at 2s pause n1", 400e6, false), late("at 1s kill n1 for 1ms", 3e9, true)}, checker.Unknown,
			[]string{"2 steps were late: at 2s pause n1 by 400ms; the heal of at 1s kill n1 for 1ms by 3s"}, true},
		{"many not run are counted, a few named", checker.Valid, many, checker.Unknown,
			[]string{"5 steps did not run", "at 1s kill n1; at 2s kill n1; at 3s kill n1; and 2 more (see results.json)"}, true},
		{"allowed by expect-failure", checker.Valid, []StepIssue{notRun("at 7.5s clock-bump n1 by +1s (expected to fail)", true)}, checker.Valid, nil, false},
		{"a violation stands", checker.Invalid, []StepIssue{notRun("at 7.5s kill n1", false)}, checker.Invalid,
			[]string{"1 step did not run"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Results{Verdict: tt.verdict, ExpectationMet: true, Checkers: []checker.Result{{Name: "double-hold", Verdict: tt.verdict}}, StepIssues: tt.issues}
			r.JudgeFailedFaults(nil)
			if r.Verdict != tt.want {
				t.Errorf("verdict %s, want %s", r.Verdict, tt.want)
			}
			if r.FaultsFailed() != tt.failsRun {
				t.Errorf("FaultsFailed = %v, want %v", r.FaultsFailed(), tt.failsRun)
			}
			last := r.Checkers[len(r.Checkers)-1]
			if tt.notes == nil {
				if last.Name == "nemesis" || !r.ExpectationMet {
					t.Fatalf("judged by issues its steps allowed: %+v, met %v", last, r.ExpectationMet)
				}
				return
			}
			if last.Name != "nemesis" || last.Verdict != checker.Unknown || r.ExpectationMet {
				t.Fatalf("last result %+v, met %v: want the nemesis's, unknown, and the expectation unmet", last, r.ExpectationMet)
			}
			for _, n := range tt.notes {
				if !strings.Contains(last.Note, n) {
					t.Errorf("the note %q does not say %q", last.Note, n)
				}
			}
		})
	}
}

// TestTimelineDrawsStepsNotAsWritten draws the saved version 7 history of a
// run whose partition and its heal took effect late and whose last kill and
// heal-all were never reached: each step not run is a failed point at its
// due time marked not run (the heal-all's of class other), the late
// partition is in force from when it took effect and carries how late it
// and its heal were, and the report's legend explains both marks.
func TestTimelineDrawsStepsNotAsWritten(t *testing.T) {
	h, _, err := history.ReadFile("../checker/testdata/steps-late-and-not-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got := buildNemesis(h, sec(3.1))
	want := []nemesisInterval{
		{Fault: "partition", Class: "network", Start: sec(1.4), End: sec(2.2), Late: sec(0.9), HealLate: sec(1.2)},
		{Fault: "kill", Class: "kill", Start: sec(2.8), End: sec(2.8), Point: true, Failed: true, NotRun: true},
		{Fault: "heal-all", Class: "other", Start: sec(2.9), End: sec(2.9), Point: true, Failed: true, NotRun: true},
	}
	if len(got) != len(want) {
		t.Fatalf("drew %d faults %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Fault != w.Fault || g.Class != w.Class || g.Start != w.Start || g.End != w.End || g.Point != w.Point || g.Failed != w.Failed ||
			g.NotRun != w.NotRun || g.Late != w.Late || g.HealLate != w.HealLate || g.Open {
			t.Errorf("fault %d drawn as %+v, want %+v", i, g, w)
		}
		if w.NotRun && !strings.Contains(g.Value, "not run: the run ended before its time") {
			t.Errorf("fault %d's text %q does not say it was not run", i, g.Value)
		}
	}
	var b bytes.Buffer
	in := ReportInput{Results: Results{Scenario: "steps", Verdict: checker.Valid}, History: h}
	if err := RenderHTML(&b, in); err != nil {
		t.Fatal(err)
	}
	d := embeddedData(t, b.String())
	nj := d.Timeline.Nemesis
	if len(nj) != 3 || nj[0].Late != us(sec(0.9)) || nj[0].HealLate != us(sec(1.2)) || !nj[1].NotRun || !nj[2].NotRun {
		t.Errorf("the report's data draws the faults %+v, want the partition late and the kill and heal-all not run", nj)
	}
	text := html.UnescapeString(b.String())
	for _, c := range []string{"step-not-run", "step-late"} {
		if !strings.Contains(text, `class="sw `+c+`"`) {
			t.Errorf("the legend has no %s entry", c)
		}
	}
}

// TestBrowserReportStepsNotAsWritten opens in Chromium the report of the
// saved history of TestTimelineDrawsStepsNotAsWritten: report.js runs to its
// end, draws each step not run as a dotted line labelled "not run", and
// hatches the lateness of the partition and of its heal on the band row.
func TestBrowserReportStepsNotAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the headless Chromium test")
	}
	h, _, err := history.ReadFile("../checker/testdata/steps-late-and-not-run.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeRunDir(t, dir, h, Results{Scenario: "steps", Verdict: checker.Valid, Stats: CountStats(h)}, "name: steps\n")
	if err := WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.open("file://" + filepath.Join(dir, ReportFile))
	var got struct {
		Scripted bool     `json:"scripted"`
		NotRun   int      `json:"notRun"`
		Late     []string `json:"late"`
		Labels   []string `json:"labels"`
	}
	b.eval(`(() => {
		const q = s => Array.from(document.querySelectorAll("#timeline " + s));
		return {scripted: typeof window.jepsenLiteReport === "object", notRun: q("line.nemesis-point.not-run").length,
			late: q("rect.nem-late").map(e => e.textContent), labels: q("text.nem-label").map(e => e.textContent)};
	})()`, &got)
	if !got.Scripted {
		t.Fatal("report.js did not run to its end")
	}
	if got.NotRun != 2 || !slices.Contains(got.Labels, "kill (not run)") || !slices.Contains(got.Labels, "heal-all (not run)") {
		t.Errorf("drew %d steps not run, labels %q: want the kill and the heal-all, labelled not run", got.NotRun, got.Labels)
	}
	if len(got.Late) != 2 || !strings.Contains(got.Late[0], "partition took effect 900.0ms after its time") || !strings.Contains(got.Late[1], "heal of partition took effect 1.200s after its time") {
		t.Errorf("hatched the lateness %q, want the partition's and its heal's", got.Late)
	}
	shot := filepath.Join(t.TempDir(), "report-steps.png")
	if err := b.screenshot(shot); err != nil {
		t.Fatal(err)
	}
	keepScreenshot(t, shot)
}
