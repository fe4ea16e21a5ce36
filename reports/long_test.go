package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// longOptions are synthetic histories a little longer than
// LongHistoryOps, with faults, crashes and fencing tokens.
var longOptions = synth.Options{Workers: 8, Keys: 3, Ops: LongHistoryOps + 5000, TTL: 200 * time.Millisecond, InfoRate: 0.02, Tokens: true, NemesisEvery: 700}

// longRun writes a run directory of a long synthetic history with one
// anomaly of kind planted ("" for none) and its checked results.
func longRun(t testing.TB, dir string, seed uint64, kind string) (history.History, Results) {
	t.Helper()
	h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), longOptions)
	if kind != "" {
		bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, kind)
		if err != nil {
			t.Fatalf("planting %s: %v", kind, err)
		}
		h = bad
	}
	r := checkedResults(h)
	r.Scenario, r.Margins = "long", checker.Margins(h, checker.DefaultDrift)
	writeRunDir(t, dir, h, r, "name: long\n")
	return h, r
}

// reportData reads the data embedded in dir's report.html.
func reportDataOf(t *testing.T, dir string) (string, reportData) {
	t.Helper()
	page := string(readReport(t, dir))
	return page, embeddedData(t, page)
}

// TestLongReportListsEveryAnomaly: the report of a long history, drawn in
// summary, lists every anomaly of every kind, and draws every op each
// anomaly and each safety margin names in full detail, never folded, with
// its window.
func TestLongReportListsEveryAnomaly(t *testing.T) {
	for i, kind := range synth.Kinds {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			h, r := longRun(t, dir, uint64(10+i), kind)
			if err := WriteHTML(dir); err != nil {
				t.Fatal(err)
			}
			page, d := reportDataOf(t, dir)
			if d.Timeline.Summary == nil {
				t.Fatalf("a history of %d ops is not drawn in summary", len(h))
			}
			all := reportCheckers(r)
			n := 0
			for _, c := range all {
				n += len(c.Anomalies)
			}
			if n == 0 || len(d.Anomalies) != n || strings.Count(page, `<li class="anomaly"`) != n {
				t.Fatalf("%d anomalies in the data, %d listed, the checkers found %d", len(d.Anomalies), strings.Count(page, `<li class="anomaly"`), n)
			}
			drawn := namedSpanOps(d.Timeline)
			if len(d.Margins) == 0 {
				t.Error("no margin in the report")
			}
			for _, a := range append(slices.Clip(d.Anomalies), d.Margins...) {
				if a.From < 0 || a.To < a.From {
					t.Errorf("%s %v: no window (%d..%d)", a.Kind, a.Ops, a.From, a.To)
				}
				for _, op := range a.Ops {
					if h[op].IsNemesis() {
						continue
					}
					if !drawn[op] {
						t.Errorf("%s: op %d is not drawn in full detail", a.Kind, op)
					}
				}
			}
		})
	}
}

// namedSpanOps decodes the spans an anomaly names (never folded) of a
// timeline's data and returns the ops they draw.
func namedSpanOps(tl timelineJSON) map[int]bool {
	is, js := make([]int, len(tl.I)), make([]int, len(tl.I))
	at := 0
	for k := range tl.I {
		at += tl.I[k]
		is[k], js[k] = at, -1
		if tl.J[k] != 0 {
			js[k] = at + tl.J[k]
		}
	}
	out := map[int]bool{}
	for _, k := range tl.Named {
		out[is[k]] = true
		out[js[k]] = true
	}
	return out
}

// TestLongReportBounds: the report of a 1,000,000-op synthetic history
// with a thousand anomalies draws at most summaryBuckets bars and counts
// per lane, at most maxDetailOps ops in full detail (with what runs into
// their windows), and stays a few MB.
func TestLongReportBounds(t *testing.T) {
	h := synth.Generate(rand.New(rand.NewPCG(1, 2)), synth.Options{Workers: 16, Keys: 4, Ops: 1_000_000, TTL: time.Second, InfoRate: 0.01, Tokens: true, NemesisEvery: 1000})
	rng := rand.New(rand.NewPCG(3, 4))
	var anomalies []checker.Anomaly
	for range 1000 {
		i := rng.IntN(len(h) - 1)
		anomalies = append(anomalies, checker.Anomaly{Kind: "double-hold", Ops: []int{i, i + 1}, Message: "planted"})
	}
	r := Results{Scenario: "bounds", Verdict: checker.Invalid, Checkers: []checker.Result{{Name: "double-hold", Verdict: checker.Invalid, Anomalies: anomalies}}, Stats: CountStats(h)}
	s := newSummary(detailRanges(reportCheckers(r)))
	for i := range h {
		op := h[i]
		s.add(&op)
	}
	h = nil // the summary keeps no op
	var b bytes.Buffer
	if err := RenderHTML(&b, ReportInput{Results: r, Summary: s}); err != nil {
		t.Fatal(err)
	}
	d := embeddedData(t, b.String())
	sum := d.Timeline.Summary
	if len(sum.Lanes) != 4 || len(d.Anomalies) != len(anomalies) {
		t.Fatalf("%d lanes, %d anomalies; want 4 lanes, %d anomalies", len(sum.Lanes), len(d.Anomalies), len(anomalies))
	}
	for _, l := range sum.Lanes {
		if len(l.Holds.B) > summaryBuckets || len(l.Maybe.B) > summaryBuckets || len(l.CB) > summaryBuckets || len(l.Holds.B) < summaryBuckets/4 {
			t.Errorf("key %s: %d bars of holds, %d of maybe-held spans, %d counts; want at most %d each", l.Key, len(l.Holds.B), len(l.Maybe.B), len(l.CB), summaryBuckets)
		}
	}
	if n := len(s.detail.ops); n > maxDetailOps+maxDetailOps/2 || n < 2000 {
		t.Errorf("%d ops drawn in full detail, want at most about %d", n, maxDetailOps)
	}
	if b.Len() > 10_000_000 {
		t.Errorf("report.html of 1M ops is %.1f MB", float64(b.Len())/1e6)
	}
	t.Logf("1M ops: report %.2f MB, %d spans in full detail, buckets of %v", float64(b.Len())/1e6, len(d.Timeline.S), s.width)
}

// TestServeDetail: the detail endpoint returns every op of a window of a
// stored long run, and what the in-memory timeline draws across it.
func TestServeDetail(t *testing.T) {
	store := t.TempDir()
	dir := filepath.Join(store, "long", "20261127T000000.000Z")
	h, _ := longRun(t, dir, 3, checker.DoubleHold)
	handler, err := NewStoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	full := buildTimeline(h)
	from, to := h[len(h)/2].Time, h[len(h)/2+60].Time
	url := fmt.Sprintf("%s/runs/long/20261127T000000.000Z/%s?from=%d&to=%d", srv.URL, DetailEndpoint, us(from), us(to))
	code, body := get(t, url)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	var w windowJSON
	if err := json.Unmarshal([]byte(body), &w); err != nil {
		t.Fatal(err)
	}
	drawn := map[int]bool{}
	spans := decodeSpans(w.timelineJSON)
	for _, s := range spans {
		drawn[s.I], drawn[s.J] = true, true
	}
	for _, op := range h {
		if !op.IsNemesis() && op.Time >= from.Truncate(time.Microsecond) && op.Time <= to && !drawn[op.Index] {
			t.Errorf("op %d at %v, inside the window, is not drawn", op.Index, op.Time)
		}
	}
	key := func(s span) string { return fmt.Sprint(s.I, s.J, us(s.Start), us(s.End)) }
	served := map[string]bool{}
	for _, s := range spans {
		served[key(s)] = true
	}
	for _, s := range full.Spans {
		if s.Start < to && s.End > from && !served[key(s)] {
			t.Errorf("the timeline draws %s across the window; the endpoint does not", describeSpan(s))
		}
	}
	if w.More {
		t.Errorf("a window of 60 ops is cut at %d ops", maxServedOps)
	}
	for _, tc := range []struct {
		name, query string
		code        int
	}{
		{"reversed window", "long/20261127T000000.000Z/" + DetailEndpoint + "?from=5&to=1", 400},
		{"no window", "long/20261127T000000.000Z/" + DetailEndpoint, 400},
		{"no such run", "long/nope/" + DetailEndpoint + "?from=1&to=5", 404},
		{"outside the store", "..%2F..%2Fetc/x/" + DetailEndpoint + "?from=1&to=5", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := get(t, srv.URL+"/runs/"+tc.query); code != tc.code {
				t.Errorf("GET %s: %d %s, want %d", tc.query, code, body, tc.code)
			}
		})
	}
}

// decodeSpans decodes the spans of a timeline's data: each one's opening
// and closing op.
func decodeSpans(tl timelineJSON) []span {
	out := make([]span, len(tl.I))
	at := 0
	var t int64
	for k := range tl.I {
		at += tl.I[k]
		t += tl.S[k]
		out[k] = span{I: at, J: -1, Start: time.Duration(t) * time.Microsecond, End: time.Duration(t+tl.D[k]) * time.Microsecond}
		if tl.J[k] != 0 {
			out[k].J = at + tl.J[k]
		}
	}
	return out
}

// TestLongHistoryIsSummarized: the offline report reads a history longer
// than LongHistoryOps in summary, and a shorter one whole, also when its
// results count no ops.
func TestLongHistoryIsSummarized(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ops     int
		noStats bool
		long    bool
	}{
		{"short", LongHistoryOps, false, false},
		{"long", LongHistoryOps + 2, false, true},
		{"long, its results count no ops", LongHistoryOps + 2, true, true},
		{"short, its results count no ops", 500, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := longOptions
			opts.Ops = tc.ops
			h := synth.Generate(rand.New(rand.NewPCG(9, 9)), opts)[:tc.ops]
			r := Results{Scenario: "n", Verdict: checker.Valid, Stats: CountStats(h)}
			if tc.noStats {
				r.Stats = Stats{}
			}
			writeRunDir(t, dir, h, r, "name: n\n")
			in, err := LoadReportInput(dir)
			if err != nil {
				t.Fatal(err)
			}
			if (in.Summary != nil) != tc.long || (in.History == nil) != tc.long {
				t.Errorf("%d ops: summary %v, history of %d ops", len(h), in.Summary != nil, len(in.History))
			}
			if err := os.Remove(filepath.Join(dir, HistoryFile)); err != nil {
				t.Fatal(err)
			}
			if _, err := LoadReportInput(dir); err != nil {
				t.Errorf("a run without history: %v", err)
			}
		})
	}
}

// TestBrowserLongReport: a long run's report opened as a file draws its key
// lanes with at most summaryBuckets bars each and highlights an anomaly's
// ops in full detail; served, it loads the full detail of a narrow window
// from the stored history when the view is zoomed into it.
func TestBrowserLongReport(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the headless Chromium test")
	}
	store := t.TempDir()
	run := "long/20261127T000000.000Z"
	dir := filepath.Join(store, filepath.FromSlash(run))
	h, _ := longRun(t, dir, 3, checker.DoubleHold)
	if err := WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	_, d := reportDataOf(t, dir)
	b := startBrowser(t)
	b.open("file://" + filepath.Join(dir, ReportFile))
	var lanes struct{ Lanes, Bars, Counts int }
	b.eval(`({lanes: document.querySelectorAll("#timeline rect.sum-lane").length, bars: document.querySelectorAll("#timeline [data-bar]").length,
		counts: document.querySelectorAll("#timeline path.sum-count").length})`, &lanes)
	if lanes.Lanes != longOptions.Keys || lanes.Bars == 0 || lanes.Bars > 2*summaryBuckets*longOptions.Keys || lanes.Counts == 0 {
		t.Errorf("drawn: %+v; want %d key lanes with bars and counts, at most %d bars each", lanes, longOptions.Keys, 2*summaryBuckets)
	}
	b.eval(`document.querySelector("li.anomaly").click()`, nil)
	var indexes []string
	b.eval(`Array.from(document.querySelectorAll("#timeline .highlight")).map(e => e.dataset.index).filter(Boolean)`, &indexes)
	covered := map[string]bool{}
	for _, di := range indexes {
		for _, f := range strings.Fields(di) {
			covered[f] = true
		}
	}
	for _, op := range d.Anomalies[0].Ops {
		if !covered[fmt.Sprint(op)] {
			t.Errorf("op %d of the anomaly is not highlighted (highlighted: %v)", op, indexes)
		}
	}
	shot := filepath.Join(t.TempDir(), "long-report.png")
	if err := b.screenshot(shot); err != nil {
		t.Fatal(err)
	}
	keepScreenshot(t, shot)

	handler, err := NewStoreHandler(store)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	b.open(srv.URL + "/runs/" + run + "/" + ReportFile)
	at := len(h) / 4
	b.eval(fmt.Sprintf(`window.jepsenLiteReport.setView(%d, %d)`, us(h[at].Time), us(h[at+40].Time)), nil)
	b.waitFor(`(d => d && d.shown)(window.jepsenLiteReport.detail())`)
	b.eval(`Array.from(document.querySelectorAll("#timeline [data-span]")).map(e => e.dataset.index)`, &indexes)
	if !strings.Contains(" "+strings.Join(indexes, " ")+" ", fmt.Sprintf(" %d ", h[at+20].Index)) {
		t.Errorf("the served detail of ops %d..%d does not draw op %d", at, at+40, h[at+20].Index)
	}
	shot = filepath.Join(t.TempDir(), "long-report-served.png")
	if err := b.screenshot(shot); err != nil {
		t.Fatal(err)
	}
	keepScreenshot(t, shot)
}

// TestLongQueueReport: a long queue run's report keeps its task view, and
// its keys past maxSummaryLanes share the last lane.
func TestLongQueueReport(t *testing.T) {
	dir := t.TempDir()
	h := queueHistory(5100, "t7")
	r := checkedResults(h)
	writeRunDir(t, dir, h, r, "name: queue\n")
	if err := WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	page, d := reportDataOf(t, dir)
	sum := d.Timeline.Summary
	if sum == nil {
		t.Fatalf("a history of %d ops is not drawn in summary", len(h))
	}
	if !strings.Contains(page, `id="tasks"`) || anomalyIndex(d, "double-capture", "t7") < 0 {
		t.Errorf("the task view or the double capture of t7 is missing")
	}
	keys := 0
	for _, l := range sum.Lanes {
		keys += l.Keys
	}
	if last := sum.Lanes[len(sum.Lanes)-1]; len(sum.Lanes) != maxSummaryLanes || keys != 5101 || last.Keys != keys-maxSummaryLanes+1 {
		t.Errorf("%d lanes for %d keys, the last shared by %d", len(sum.Lanes), keys, last.Keys)
	}
}

// countingFile counts the bytes read from a file.
type countingFile struct {
	*os.File
	n int64
}

func (c *countingFile) Read(p []byte) (int, error) {
	n, err := c.File.Read(p)
	c.n += int64(n)
	return n, err
}

// TestReadWindowFromCheckpoints: a window read from the latest checkpoint
// before it is the window read from the history's first op, and reading
// it reads less of the file.
func TestReadWindowFromCheckpoints(t *testing.T) {
	dir := t.TempDir()
	h, r := longRun(t, dir, 5, checker.DoubleHold)
	named := namedOps(drawnResults(r))
	f, err := os.Open(filepath.Join(dir, HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	file := &countingFile{File: f}
	last := h[len(h)-1].Time
	idx := &windowIndex{every: 997}
	if _, err := readWindow(file, last, last, maxServedOps, false, named, idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.points) < len(h)/997-1 {
		t.Fatalf("%d checkpoints of %d lines, every 997", len(idx.points), len(h))
	}
	for k := range 16 {
		at := (2*k + 1) * len(h) / 24
		if k >= 12 {
			at = 997 * (5*k - 50) // the first op after a checkpoint
		}
		from := h[at].Time
		to := from + time.Duration(k*k%50)*time.Millisecond
		read := func(idx *windowIndex) (windowJSON, int64) {
			file.n = 0
			if _, err := file.Seek(0, 0); err != nil {
				t.Fatal(err)
			}
			w, err := readWindow(file, from, to, maxServedOps, false, named, idx)
			if err != nil {
				t.Fatal(err)
			}
			return w, file.n
		}
		want, whole := read(nil)
		got, part := read(idx)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("window %v..%v: read from a checkpoint, %d spans; from the first op, %d", from, to, len(got.S), len(want.S))
		}
		if k > 2 && part > whole/2 {
			t.Errorf("window %v..%v: %d bytes read from a checkpoint, %d from the first op", from, to, part, whole)
		}
	}
}

// TestServeIndexFollowsTheFile: serve keeps a run's window index while its
// history file stays the same, and starts a new one when it changes.
func TestServeIndexFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), HistoryFile)
	stat := func(content string) os.FileInfo {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	s := &storeServer{}
	first := stat("a\n")
	x := s.index("run", first)
	if s.index("run", first) != x {
		t.Error("the index of an unchanged file was not kept")
	}
	if s.index("run", stat("a\nb\n")) == x {
		t.Error("the index of a file that grew was kept")
	}
	if s.index("other", first) == x {
		t.Error("two runs share an index")
	}
}
