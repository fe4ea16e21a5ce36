package reports

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
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

	// Zoom and pan by the buttons change the view and keep drawing.
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
