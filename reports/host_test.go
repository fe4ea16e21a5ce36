package reports

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// hostHistory is a version 7 history in which worker 1 is granted k while
// worker 0 still holds it, with a stall of the harness inside that window
// and a step of the host's clock after it.
func hostHistory() history.History {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	at := func(t time.Duration, op history.Op) history.Op { op.Time = t; return op }
	h := history.History{history.Header(),
		{Time: ms(1000), Process: 0, Client: 0, Type: history.Invoke, F: history.FAcquire, Key: "k", TTL: 5 * time.Second},
		{Time: ms(1010), Process: 0, Client: 0, Type: history.OK, F: history.FAcquire, Key: "k", Token: 1, Lease: 5 * time.Second, Until: ms(5950)},
		{Time: ms(3400), Process: 1, Client: 1, Type: history.Invoke, F: history.FAcquire, Key: "k", TTL: 5 * time.Second},
		at(ms(3600), history.StallOp(ms(598))),
		{Time: ms(3610), Process: 1, Client: 1, Type: history.OK, F: history.FAcquire, Key: "k", Token: 2, Lease: 5 * time.Second, Until: ms(8450)},
		at(ms(6000), history.ClockStepOp(17*time.Second, ms(5950))),
		{Time: ms(7000), Process: 0, Client: 0, Type: history.Invoke, F: history.FRelease, Key: "k", Token: 1},
		{Time: ms(7010), Process: 0, Client: 0, Type: history.Fail, F: history.FRelease, Key: "k", Token: 1, Error: checker.NotHeldError},
		at(ms(7100), history.EndOp()),
	}
	for i := range h {
		h[i].Index = i
	}
	return h
}

// TestReportHostMarkers: the report's timeline carries a marker for each
// host record, apart from the faults, its legend names both kinds, and the
// anomaly inside the stall shows its host note.
func TestReportHostMarkers(t *testing.T) {
	h := hostHistory()
	if err := history.Validate(h); err != nil {
		t.Fatal(err)
	}
	res := checkedResults(h)
	if res.Verdict != checker.Invalid {
		t.Fatalf("verdict %s, want invalid", res.Verdict)
	}
	var b bytes.Buffer
	if err := RenderHTML(&b, ReportInput{Results: res, History: h}); err != nil {
		t.Fatal(err)
	}
	page, d := b.String(), embeddedData(t, b.String())
	want := []hostJSON{
		{Kind: history.FStall, Start: 3002000, End: 3600000, Text: "harness stalled 598ms at 3.002s"},
		{Kind: history.FClockStep, Start: 5950000, End: 6000000, Text: "host clock stepped +17s at 6.000s"},
	}
	if !slices.Equal(d.Timeline.Host, want) {
		t.Errorf("host markers %+v, want %+v", d.Timeline.Host, want)
	}
	if len(d.Timeline.Nemesis) != 0 {
		t.Errorf("host records drawn as faults: %+v", d.Timeline.Nemesis)
	}
	for _, label := range []string{"the host&#39;s wall clock stepped (host record)", "the harness stalled (host record)"} {
		if !strings.Contains(page, label) {
			t.Errorf("the legend does not say %q", label)
		}
	}
	noted := 0
	for _, a := range d.Anomalies {
		if strings.Contains(a.Host, "harness stalled 598ms at 3.002s") {
			noted++
		}
		if strings.Contains(a.Host, "clock stepped") {
			t.Errorf("%s noted with the clock step after its window: %q", a.Kind, a.Host)
		}
	}
	if noted == 0 || !strings.Contains(page, `<span class="host-note">host: harness stalled 598ms`) {
		t.Errorf("no anomaly lists its host note (%d noted): %+v", noted, d.Anomalies)
	}
}

// TestLongReportHostMarkers: a long history, drawn in summary, draws its
// host records too.
func TestLongReportHostMarkers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	h, _ := longRun(t, dir, 5, "")
	last := h[len(h)-1].Time
	h = append(h, history.StallOp(time.Second), history.ClockStepOp(-2*time.Second, last))
	for i := len(h) - 2; i < len(h); i++ {
		h[i].Index, h[i].Time = i, last+2*time.Second
	}
	r := checkedResults(h)
	r.Scenario = "long"
	writeRunDir(t, dir, h, r, "name: long\n")
	if err := WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	_, d := reportDataOf(t, dir)
	if d.Timeline.Summary == nil {
		t.Fatal("the long history is not drawn in summary")
	}
	var kinds []string
	for _, m := range d.Timeline.Host {
		kinds = append(kinds, m.Kind)
	}
	if !slices.Equal(kinds, []string{history.FStall, history.FClockStep}) {
		t.Errorf("host markers of the summary %+v, want a stall and a clock step", d.Timeline.Host)
	}
}

// TestBrowserReportHost: report.js draws a clock step as a line and a stall
// as a stretch, each with its sentence, apart from the faults.
func TestBrowserReportHost(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the headless Chromium test")
	}
	h := hostHistory()
	dir := t.TempDir()
	writeRunDir(t, dir, h, checkedResults(h), "name: s\n")
	if err := WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.open("file://" + filepath.Join(dir, ReportFile))
	var got struct {
		Steps, Stalls, Faults []string
		Legend                []string
	}
	b.eval(`({steps: Array.from(document.querySelectorAll("#timeline line.host-step")).map(e => e.textContent),
		stalls: Array.from(document.querySelectorAll("#timeline rect.host-stall")).map(e => e.textContent),
		faults: Array.from(document.querySelectorAll("#timeline .nemesis, #timeline .nemesis-point")).map(e => e.textContent),
		legend: Array.from(document.querySelectorAll(".band-legend")).map(e => e.textContent)})`, &got)
	if !slices.Equal(got.Steps, []string{"host clock stepped +17s at 6.000s"}) {
		t.Errorf("clock step markers %q", got.Steps)
	}
	if !slices.Equal(got.Stalls, []string{"harness stalled 598ms at 3.002s"}) {
		t.Errorf("stall markers %q", got.Stalls)
	}
	if len(got.Faults) != 0 {
		t.Errorf("host records drawn as faults: %q", got.Faults)
	}
	if !slices.Contains(got.Legend, "the host's wall clock stepped (host record)") || !slices.Contains(got.Legend, "the harness stalled (host record)") {
		t.Errorf("band legend %q", got.Legend)
	}
	shot := filepath.Join(t.TempDir(), "report-host.png")
	if err := b.screenshot(shot); err != nil {
		t.Fatal(err)
	}
	keepScreenshot(t, shot)
}

// TestSetHostEvents: results.json lists at most MaxHostEvents host events
// and counts the others.
func TestSetHostEvents(t *testing.T) {
	tests := []struct {
		name           string
		n, listed, out int
	}{
		{"none", 0, 0, 0},
		{"a few", 3, 3, 0},
		{"at the bound", MaxHostEvents, MaxHostEvents, 0},
		{"past it", MaxHostEvents + 7, MaxHostEvents, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := make([]history.HostEvent, tt.n)
			var r Results
			r.SetHostEvents(events)
			if len(r.HostEvents) != tt.listed || r.HostEventsLeftOut != tt.out {
				t.Errorf("listed %d, left out %d; want %d, %d", len(r.HostEvents), r.HostEventsLeftOut, tt.listed, tt.out)
			}
		})
	}
}
