package reports

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// keepScreenshot copies a screenshot to $REPORTS_SCREENSHOT_DIR when set,
// so a person can look at it.
func keepScreenshot(t *testing.T, path string) {
	dir := os.Getenv("REPORTS_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(path)), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserReport opens a report in headless Chromium and checks what
// report.js draws and how it answers clicks.
func TestBrowserReport(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the headless Chromium test")
	}
	dir := t.TempDir()
	h := invalidHistory()
	writeRunDir(t, dir, h, invalidResults(h), invalidScenarioYAML)
	if err := WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.open("file://" + filepath.Join(dir, ReportFile))

	var scripted bool
	b.eval(`typeof window.jepsenLiteReport === "object"`, &scripted)
	if !scripted {
		t.Fatal("report.js did not run to its end")
	}

	checkReportBeforeClick(t, b)
	checkAnomalyClick(t, b)
	checkZoomButtons(t, b)
}

// checkReportBeforeClick checks the report as it opens: the anomaly listed,
// the faults shaded on the timeline and the plots, nothing highlighted.
func checkReportBeforeClick(t *testing.T, b *browser) {
	t.Helper()
	var anomalies []string
	b.eval(`Array.from(document.querySelectorAll("li.anomaly .msg")).map(e => e.textContent)`, &anomalies)
	if !slices.Equal(anomalies, []string{doubleHoldMessage}) {
		t.Errorf("listed anomalies = %q, want the double-hold", anomalies)
	}
	var shading struct {
		Rects   int      `json:"rects"`
		Classes []string `json:"classes"`
	}
	b.eval(`({rects: document.querySelectorAll("#timeline rect.nemesis").length,
		classes: Array.from(new Set(Array.from(document.querySelectorAll("#timeline rect.nemesis")).map(e => e.getAttribute("class").split(" ")[1]))).sort()})`, &shading)
	if shading.Rects != 3 || !slices.Equal(shading.Classes, []string{"nem-client-pause", "nem-clock", "nem-network"}) {
		t.Errorf("nemesis shading = %+v, want 3 rects: network, clock, client-pause", shading)
	}
	var plotShading int
	b.eval(`document.querySelectorAll("svg.plot rect.nemesis").length`, &plotShading)
	if plotShading == 0 {
		t.Error("the plots have no nemesis shading")
	}
	var before int
	b.eval(`document.querySelectorAll("#timeline .highlight").length`, &before)
	if before != 0 {
		t.Errorf("%d highlighted elements before any click", before)
	}
	if err := b.screenshot(filepath.Join(t.TempDir(), "report-before.png")); err != nil {
		t.Fatal(err)
	}
}

// checkAnomalyClick clicks the listed anomaly and checks that it
// highlights its ops and no op it does not name, is marked selected and
// zooms the timeline around its ops.
func checkAnomalyClick(t *testing.T, b *browser) {
	t.Helper()
	b.eval(`document.querySelector("li.anomaly").click()`, nil)
	var hl struct {
		Indexes  []string `json:"indexes"`
		Selected bool     `json:"selected"`
		T0       float64  `json:"t0"`
		T1       float64  `json:"t1"`
	}
	b.eval(`({indexes: Array.from(document.querySelectorAll("#timeline .highlight")).map(e => e.dataset.index).filter(Boolean),
		selected: document.querySelector("li.anomaly").classList.contains("selected"),
		t0: window.jepsenLiteReport.view.t0, t1: window.jepsenLiteReport.view.t1})`, &hl)
	covered := map[string]bool{}
	for _, di := range hl.Indexes {
		for _, f := range strings.Fields(di) {
			covered[f] = true
		}
	}
	if !covered["1"] || !covered["9"] {
		t.Errorf("highlighted elements cover ops %v, want 1 and 9 (the anomaly's ops)", hl.Indexes)
	}
	for f := range covered {
		if f != "0" && f != "1" && f != "9" && f != "8" && f != "12" && f != "19" {
			t.Errorf("op %s highlighted, but the anomaly does not name it (highlighted: %v)", f, hl.Indexes)
		}
	}
	if !hl.Selected {
		t.Error("the clicked anomaly is not marked selected")
	}
	if hl.T0 > 0.1e6 || hl.T1 < 5.2e6 || hl.T1-hl.T0 > 11e6 {
		t.Errorf("view after the click = %.0fµs..%.0fµs, want it zoomed around 0.1s..5.2s", hl.T0, hl.T1)
	}
	shot := filepath.Join(t.TempDir(), "report-anomaly.png")
	if err := b.screenshot(shot); err != nil {
		t.Fatal(err)
	}
	keepScreenshot(t, shot)
	if dir := os.Getenv("REPORTS_SCREENSHOT_DIR"); dir != "" {
		if err := b.screenshotElement(".timeline-section", filepath.Join(dir, "timeline.png")); err != nil {
			t.Fatal(err)
		}
	}
}

// checkZoomButtons checks that zoom and pan by the buttons change the view
// and keep drawing.
func checkZoomButtons(t *testing.T, b *browser) {
	t.Helper()
	var zoomed struct{ T0, T1 float64 }
	b.eval(`document.getElementById("zoom-fit").click(); document.getElementById("zoom-in").click();
		new Promise(r => requestAnimationFrame(() => r({T0: window.jepsenLiteReport.view.t0, T1: window.jepsenLiteReport.view.t1})))`, &zoomed)
	if w := zoomed.T1 - zoomed.T0; w > 6e6 || w < 5e6 {
		t.Errorf("fit then zoom-in shows %.0fµs, want half of the 11.1s run", w)
	}
}

func TestBrowserRunList(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the headless Chromium test")
	}
	store := copyStore(t, savedStore(t))
	h, err := NewStoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	b := startBrowser(t)
	b.open(srv.URL + "/")
	var rows []string
	b.eval(`Array.from(document.querySelectorAll("#runs tr.run")).map(r => r.dataset.dir)`, &rows)
	if !slices.Equal(rows, []string{savedValidRun, savedInvalidRun}) {
		t.Errorf("run list = %v, want the two saved runs newest first", rows)
	}
	shot := filepath.Join(t.TempDir(), "runs.png")
	if err := b.screenshot(shot); err != nil {
		t.Fatal(err)
	}
	keepScreenshot(t, shot)

	// Filtering by verdict through the form leaves the invalid run.
	b.eval(`const s = document.getElementById("filter-verdict"); s.value = "invalid"; s.dispatchEvent(new Event("change"))`, nil)
	b.waitFor(`location.search.includes("verdict=invalid") && document.readyState === "complete"`)
	b.eval(`Array.from(document.querySelectorAll("#runs tr.run")).map(r => r.dataset.dir)`, &rows)
	if !slices.Equal(rows, []string{savedInvalidRun}) {
		t.Errorf("filtered run list = %v, want only %s", rows, savedInvalidRun)
	}

	// Its report link opens a report generated on demand, with the anomaly.
	b.eval(`document.querySelector("#runs a.report-link").click()`, nil)
	b.waitFor(`location.pathname.endsWith("/report.html") && document.readyState === "complete" && !!document.querySelector("li.anomaly")`)
	var msg string
	b.eval(`document.querySelector("li.anomaly .msg").textContent`, &msg)
	if msg != doubleHoldMessage {
		t.Errorf("served report lists %q", msg)
	}
}

// waitFor polls a JavaScript condition for up to 20 s.
func (b *browser) waitFor(cond string) {
	b.t.Helper()
	for range 400 {
		var ok bool
		err := b.evalErr(`(() => { try { return !!(`+cond+`) } catch (e) { return false } })()`, &ok)
		if err == nil && ok {
			return
		}
		sleepBrief()
	}
	b.t.Fatalf("timed out waiting for %s", cond)
}

// TestBrowserReportBeliefs: a belief that nothing ends is drawn to the end
// of the timeline with an arrow, a guarded write's apply interval is its
// whole call and an unknown write's runs on without end; the header op
// draws no fault.
func TestBrowserReportBeliefs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the headless Chromium test")
	}
	dir := t.TempDir()
	h := beliefsHistory()
	writeRunDir(t, dir, h, Results{Scenario: "beliefs", Verdict: "valid", Stats: CountStats(h)}, "name: beliefs\n")
	if err := WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.open("file://" + filepath.Join(dir, ReportFile))
	var got struct {
		Scripted bool     `json:"scripted"`
		Open     int      `json:"open"`
		Windows  int      `json:"windows"`
		Unknown  int      `json:"unknown"`
		Faults   int      `json:"faults"`
		Tips     []string `json:"tips"`
	}
	b.eval(`(() => {
		const q = s => document.querySelectorAll("#timeline " + s);
		const tip = el => { const r = el.getBoundingClientRect();
			el.dispatchEvent(new PointerEvent("pointermove", {bubbles: true, clientX: r.left + r.width / 2, clientY: r.top + r.height / 2}));
			return document.getElementById("tooltip").textContent; };
		return {scripted: typeof window.jepsenLiteReport === "object", open: q("path.hold-open").length,
			windows: q("path.apply-window").length, unknown: q("path.apply-window.open").length,
			faults: q(".nemesis, .nemesis-point").length,
			tips: [tip(q("path.hold-open")[0]), ...Array.from(q("path.apply-window")).map(tip)]};
	})()`, &got)
	if !got.Scripted {
		t.Fatal("report.js did not run to its end")
	}
	if got.Open != 1 || got.Windows != 2 || got.Unknown != 1 || got.Faults != 0 {
		t.Errorf("drawn: %+v, want 1 open hold, 2 apply windows (1 without end), no fault", got)
	}
	for _, want := range []string{"held the lock (never ended)", "took effect between 0.200s and 0.600s", "may take effect any time from 1.200s on, or never"} {
		if !slices.ContainsFunc(got.Tips, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("tooltips %q lack %q", got.Tips, want)
		}
	}
	shot := filepath.Join(t.TempDir(), "report-beliefs.png")
	if err := b.screenshot(shot); err != nil {
		t.Fatal(err)
	}
	keepScreenshot(t, shot)
	if dir := os.Getenv("REPORTS_SCREENSHOT_DIR"); dir != "" {
		if err := b.screenshotElement(".timeline-section", filepath.Join(dir, "timeline-beliefs.png")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBrowserReportLiveness checks that the report shades the checker's
// liveness windows across the lanes, one band row per kind, and the nodes
// down by the availability records, each with a legend entry.
func TestBrowserReportLiveness(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the headless Chromium test")
	}
	h := livenessHistory()
	live := checker.Liveness(h, checker.LivenessOptions{})
	if !live.Has(checker.Stuck) || !live.Has(checker.Unavailable) {
		t.Fatalf("fixture liveness %+v, want stuck and unavailable", live)
	}
	dir := t.TempDir()
	writeRunDir(t, dir, h, Results{Scenario: "s", Verdict: checker.Valid, Liveness: &live, Stats: CountStats(h)}, "name: s\n")
	if err := WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.open("file://" + filepath.Join(dir, ReportFile))
	var got struct {
		Windows []string `json:"windows"`
		Bands   []string `json:"bands"`
		Avail   []string `json:"avail"`
		Legend  []string `json:"legend"`
	}
	b.eval(`({windows: Array.from(document.querySelectorAll("#timeline rect.live-window")).map(e => e.getAttribute("class")).sort(),
		bands: Array.from(document.querySelectorAll("#timeline rect.live-band")).map(e => e.getAttribute("y")).sort(),
		avail: Array.from(document.querySelectorAll("#timeline rect.avail-band")).map(e => e.getAttribute("class")),
		legend: Array.from(document.querySelectorAll(".band-legend")).map(e => e.textContent.split(":")[0])})`, &got)
	if !slices.Equal(got.Windows, []string{"live-window live-stuck", "live-window live-unavailable"}) {
		t.Errorf("liveness windows %q, want one stuck and one unavailable", got.Windows)
	}
	if len(got.Bands) != 2 || got.Bands[0] == got.Bands[1] {
		t.Errorf("liveness bands at y %q, want two rows", got.Bands)
	}
	if !slices.Equal(got.Avail, []string{"avail-band avail-maj"}) {
		t.Errorf("availability bands %q, want one with a majority up", got.Avail)
	}
	if !slices.Equal(got.Legend, []string{"stuck", "unavailable", "nodes down, a majority up (availability record)"}) {
		t.Errorf("band legend %q", got.Legend)
	}
	b.eval(`Array.from(document.querySelectorAll("li.anomaly")).find(li => li.textContent.includes("unavailable from")).click()`, nil)
	var hl int
	b.eval(`document.querySelectorAll("#timeline rect.live-band.highlight").length`, &hl)
	if hl != 1 {
		t.Errorf("%d liveness bands highlighted after clicking the unavailable anomaly, want 1", hl)
	}
	shot := filepath.Join(t.TempDir(), "report-liveness.png")
	if err := b.screenshot(shot); err != nil {
		t.Fatal(err)
	}
	keepScreenshot(t, shot)
}

// livenessHistory is a version 3 history in which n2 of 5 nodes is killed
// for a while, and the holder of a lock that never expires crashed: every
// later acquire is refused, so k is stuck and unavailable.
func livenessHistory() history.History {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	h := history.History{history.Header(),
		{Time: ms(0), Process: 0, Client: 0, Type: history.Invoke, F: history.FAcquire, Key: "k", TTL: time.Second},
		{Time: ms(5), Process: 0, Client: 0, Type: history.OK, F: history.FAcquire, Key: "k", Lease: history.NoLease},
		{Time: ms(10), Process: 0, Client: 0, Type: history.Invoke, F: history.FWrite, Key: "k", Value: history.IntValue(1)},
		{Time: ms(15), Process: 0, Client: 0, Type: history.Info, F: history.FWrite, Key: "k", Error: "timeout"},
	}
	nem := func(at int, f, v string) {
		h = append(h, history.Op{Time: ms(at), Process: history.NemesisProcess, Type: history.Info, F: f, Value: []byte(v)})
	}
	for at, p := 100, 1; at < 3000; at, p = at+100, p%3+1 {
		switch at {
		case 500:
			nem(500, history.FAvailability, `{"nodes":5,"down":["n2"]}`)
			nem(500, "kill", `{"nodes":["n2"]}`)
		case 1000:
			nem(1000, history.FAvailability, `{"nodes":5,"down":[]}`)
			nem(1000, "start", `{"nodes":["n2"]}`)
		}
		h = append(h,
			history.Op{Time: ms(at), Process: p, Client: p, Type: history.Invoke, F: history.FAcquire, Key: "k", TTL: time.Second},
			history.Op{Time: ms(at + 5), Process: p, Client: p, Type: history.Fail, F: history.FAcquire, Key: "k"})
	}
	for i := range h {
		h[i].Index = i
	}
	return h
}
