package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/gate"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/reports"
)

// TestHuntTablesMarkRuns: the console table and the Markdown mark the kinds
// whose runs had host trouble or steps off script, and explain the marks;
// a campaign without them has neither.
func TestHuntTablesMarkRuns(t *testing.T) {
	tables := func(rep *hunt.Report) string {
		var b bytes.Buffer
		printHunt(&b, rep)
		return b.String() + huntMarkdown(rep, "s")
	}
	marked := &hunt.Report{Scenario: "s", Runs: 4, Rows: []*hunt.Row{
		{Fault: hunt.NoFault, Runs: 2},
		{Fault: "kill", Runs: 2, Invalid: 1, Failing: []string{"store/x/1"}, HostTrouble: 1, OffScript: 2},
	}}
	all := tables(marked)
	if strings.Count(all, "2 [host 1/2, steps 2/2]") != 2 || strings.Count(all, gate.RunMarksLegend) != 2 {
		t.Errorf("tables do not mark the kill runs in both tables, with the legend:\n%s", all)
	}
	plain := &hunt.Report{Scenario: "s", Runs: 2, Rows: []*hunt.Row{{Fault: hunt.NoFault, Runs: 2}}}
	if all := tables(plain); strings.Contains(all, "[host") || strings.Contains(all, gate.RunMarksLegend) {
		t.Errorf("tables of runs without marks mark them:\n%s", all)
	}
}

// TestPrintHostEvents: the summary prints a HOST line for each host event,
// up to hostEventsPrinted, and counts the rest, those left out of
// results.json included; an anomaly's host note follows its sentence.
func TestPrintHostEvents(t *testing.T) {
	r := &reports.Results{}
	var events []history.HostEvent
	for i := range hostEventsPrinted + 2 {
		events = append(events, history.HostEvent{Kind: history.FStall, Time: time.Duration(i+1) * time.Second, Size: 200 * time.Millisecond, From: time.Duration(i+1)*time.Second - 200*time.Millisecond})
	}
	events[0] = history.HostEvent{Kind: history.FClockStep, Time: 4200 * time.Millisecond, Size: 17 * time.Second, From: 4150 * time.Millisecond}
	r.SetHostEvents(events)
	r.HostEventsLeftOut = 3
	var b bytes.Buffer
	printHostEvents(&b, r)
	out := b.String()
	if strings.Count(out, "  HOST ") != hostEventsPrinted+1 || !strings.Contains(out, "  HOST host clock stepped +17s at 4.200s\n") || !strings.Contains(out, "  HOST ... and 5 more (see results.json)\n") {
		t.Errorf("printed:\n%s", out)
	}
	b.Reset()
	printCheckers(&b, []checker.Result{{Name: "linearizability", Verdict: checker.Invalid, Anomalies: []checker.Anomaly{{Kind: "early-grant", Key: "k", Ops: []int{5, 2}, Message: "worker 1 was granted k", Host: "harness stalled 598ms at 3.002s inside this finding's window"}}}})
	if !strings.Contains(b.String(), "worker 1 was granted k\n      host: harness stalled 598ms at 3.002s inside this finding's window\n") {
		t.Errorf("printed:\n%s", b.String())
	}
}
