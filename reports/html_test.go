package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// embeddedData extracts and decodes the JSON a report embeds for report.js.
func embeddedData(t *testing.T, page string) reportData {
	t.Helper()
	const open = `<script id="report-data" type="application/json">`
	i := strings.Index(page, open)
	if i < 0 {
		t.Fatal("report has no embedded data")
	}
	rest := page[i+len(open):]
	j := strings.Index(rest, "</script>")
	var d reportData
	if err := json.Unmarshal([]byte(rest[:j]), &d); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	return d
}

func TestRenderHTML(t *testing.T) {
	h := invalidHistory()
	in := ReportInput{Results: invalidResults(h), History: h, Description: "One Redis node; its clock jumps.",
		Scenario: invalidScenarioYAML, Links: []Link{{Name: HistoryFile, Href: HistoryFile}, {Name: LinearizabilityFile, Href: LinearizabilityFile}}}
	var b bytes.Buffer
	if err := RenderHTML(&b, in); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	text := html.UnescapeString(page)
	for _, want := range []string{
		"redis-single-clock-bump", "One Redis node; its clock jumps.", doubleHoldMessage,
		`id="verdict" class="badge v-invalid">invalid`, "as expected", "invalid with double-hold",
		`href="history.jsonl"`, `href="linearizability.html"`, "<td>mutex</td>", "<td>fencing</td>",
		"ops 1, 9", `class="plot"`, "nem-network", "nem-clock", "nem-client-pause",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Self-contained: no external script, style, image or font.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:)?//`).FindString(page); m != "" {
		t.Errorf("report references the network: %s", m)
	}
	if strings.Contains(page, "@import") || strings.Contains(page, "url(http") {
		t.Error("report CSS references the network")
	}
	d := embeddedData(t, page)
	if len(d.Anomalies) != 1 {
		t.Fatalf("anomalies = %+v", d.Anomalies)
	}
	a := d.Anomalies[0]
	if a.Kind != "double-hold" || a.From != us(sec(0.10)) || a.To < us(sec(5.2)) {
		t.Errorf("anomaly window = %+v, want from the first acquire's invoke (0.1s) through the second hold", a)
	}
	if len(d.Timeline.Rows) != 3 || len(d.Timeline.Nemesis) != 3 {
		t.Errorf("timeline has %d rows and %d nemesis intervals, want 3 and 3", len(d.Timeline.Rows), len(d.Timeline.Nemesis))
	}
}

func TestRenderHTMLEmptyHistory(t *testing.T) {
	var b bytes.Buffer
	r := Results{Scenario: "s", Verdict: "unknown"}
	if err := RenderHTML(&b, ReportInput{Results: r}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no checker ran") || !strings.Contains(b.String(), "None found.") {
		t.Error("empty report does not say that nothing ran and nothing was found")
	}
}

func TestWriteHTML(t *testing.T) {
	tests := []struct {
		name       string
		extraFiles []string
		wantLinks  []string
		noLinks    []string
	}{
		{"plain run", nil, []string{HistoryFile, ResultsFile, ScenarioFile}, []string{LinearizabilityFile, RunLogFile}},
		{"with linearizability and logs", []string{LinearizabilityFile, RunLogFile, "n1.log"},
			[]string{LinearizabilityFile, RunLogFile, "n1.log"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			h := invalidHistory()
			writeRunDir(t, dir, h, invalidResults(h), invalidScenarioYAML)
			for _, f := range tc.extraFiles {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := WriteHTML(dir); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(dir, ReportFile))
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			if !strings.Contains(page, "its clock jumps forward 30s") {
				t.Error("report lacks the description read from scenario.yaml")
			}
			for _, l := range tc.wantLinks {
				if !strings.Contains(page, `href="`+l+`"`) {
					t.Errorf("report lacks a link to %s", l)
				}
			}
			for _, l := range tc.noLinks {
				if strings.Contains(page, `href="`+l+`"`) {
					t.Errorf("report links to absent %s", l)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, reportFileTmpName)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("temporary file left behind: %v", err)
			}
		})
	}
}

func TestWriteHTMLTruncatedHistory(t *testing.T) {
	dir := t.TempDir()
	h := invalidHistory()
	r := invalidResults(h)
	r.Truncated = true
	writeRunDir(t, dir, h, r, invalidScenarioYAML)
	f, err := os.OpenFile(filepath.Join(dir, HistoryFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"index":27,"time":12000000000,"process":3,"ty`)
	f.Close()
	if err := WriteHTML(dir); err != nil {
		t.Fatalf("a history cut mid-line must still give a report: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ReportFile))
	if !strings.Contains(string(b), "truncated") {
		t.Error("report does not say the history was truncated")
	}
}

func TestWriteHTMLNoResults(t *testing.T) {
	if err := WriteHTML(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WriteHTML without results.json = %v, want fs.ErrNotExist", err)
	}
}

// beliefsHistory has the header op, a belief that nothing ends (worker 0),
// a guarded write without `applied` and a write of unknown outcome after
// which worker 1 crashes.
func beliefsHistory() history.History {
	v := func(n int64) func(*history.Op) { return func(o *history.Op) { o.Value = history.IntValue(n) } }
	return indexed([]history.Op{
		history.Header(),
		wop(0.10, 0, history.Invoke, "acquire", withTTL(5)), wop(0.12, 0, history.OK, "acquire"),
		wop(0.20, 0, history.Invoke, "write", v(1)), wop(0.60, 0, history.OK, "write", v(1)),
		wop(1.00, 1, history.Invoke, "acquire", withTTL(5)), wop(1.10, 1, history.Fail, "acquire"),
		wop(1.20, 1, history.Invoke, "write", v(2)), wop(1.40, 1, history.Info, "write"),
		wop(2.00, 0, history.Invoke, "read"), wop(2.10, 0, history.OK, "read", v(1)),
	})
}

func TestRenderHTMLBeliefsAndHeader(t *testing.T) {
	h := beliefsHistory()
	var b bytes.Buffer
	if err := RenderHTML(&b, ReportInput{Results: Results{Scenario: "s", Verdict: "valid", Stats: CountStats(h)}, History: h}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	d := embeddedData(t, page)
	if len(d.Timeline.Nemesis) != 0 || strings.Contains(page, `class="lg nemesis-legend"`) ||
		regexp.MustCompile(`class="nem(esis|-line) nem-[a-z]`).MatchString(page) {
		t.Errorf("the header op is drawn as a fault: %+v", d.Timeline.Nemesis)
	}
	if len(d.Timeline.ApplySpan) != 2 || d.Timeline.ApplyLen[0] != us(sec(0.4)) || d.Timeline.ApplyLen[1] != -1 {
		t.Errorf("apply intervals = %v %v %v, want the guarded write's call (0.4s) and the unknown one's without end",
			d.Timeline.ApplySpan, d.Timeline.ApplyLo, d.Timeline.ApplyLen)
	}
	open := 0
	for _, c := range d.Timeline.C {
		if (c>>2)&15 == int(kindHold) && c&3 == int(outOpen) {
			open++
		}
	}
	if open != 1 {
		t.Errorf("%d open holds encoded, want worker 0's", open)
	}
}

func TestLoadReportInputGuardedVersion1(t *testing.T) {
	for _, tc := range []struct {
		name     string
		header   bool
		resource string
		kept     bool
	}{
		{"version 1 guarded: the reply's time is dropped", false, "guarded", false},
		{"version 2 guarded: applied is exact", true, "guarded", true},
		{"version 1 fenced: applied is exact", false, "fenced", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ops []history.Op
			if tc.header {
				ops = append(ops, history.Header())
			}
			ops = append(ops, wop(0.1, 0, history.Invoke, "acquire"), wop(0.2, 0, history.OK, "acquire"),
				wop(0.3, 0, history.Invoke, "write"), wop(0.5, 0, history.OK, "write", withApplied(0.5)))
			h := indexed(ops)
			dir := t.TempDir()
			writeRunDir(t, dir, h, Results{Scenario: "s", Verdict: "valid"}, "name: s\nresource: "+tc.resource+"\n")
			in, err := LoadReportInput(dir)
			if err != nil {
				t.Fatal(err)
			}
			w := in.History[len(in.History)-1]
			if (w.Applied != 0) != tc.kept {
				t.Errorf("applied = %v, want kept: %v", w.Applied, tc.kept)
			}
		})
	}
}

// TestRenderHTMLStuck checks that the report says a run's lock was stuck,
// apart from the verdict, and draws the stuck window like an anomaly's.
func TestRenderHTMLStuck(t *testing.T) {
	h, _, err := history.ReadFile("../cmd/jepsen-lite/testdata/holder-crashed-lock-never-expires.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	live := checker.Liveness(h, checker.LivenessOptions{})
	if live.Verdict != checker.Invalid {
		t.Fatalf("fixture liveness %s, want a stuck key", live.Verdict)
	}
	var b bytes.Buffer
	if err := RenderHTML(&b, ReportInput{Results: Results{Scenario: "s", Verdict: checker.Valid, Liveness: &live, Stats: CountStats(h)}, History: h}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !regexp.MustCompile(`<dd id="liveness"><strong[^>]*>stuck, unavailable</strong> \(apart from the verdict\); 1 grants`).MatchString(page) {
		t.Errorf("the summary does not say the lock was stuck and unavailable")
	}
	// Each window is the checker's own, shaded with a legend entry.
	drawn := map[string]bool{}
	for _, a := range embeddedData(t, page).Anomalies {
		for _, l := range live.Anomalies {
			if a.Kind == l.Kind && a.Window != nil && *a.Window == [2]int64{us(l.Window.Start), us(l.Window.End)} && a.From <= a.Window[0] && a.To >= a.Window[1] {
				drawn[a.Kind] = true
			}
		}
	}
	for _, kind := range []string{checker.Stuck, checker.Unavailable} {
		if !drawn[kind] {
			t.Errorf("no %s window is drawn", kind)
		}
		if !strings.Contains(page, `<i class="sw live-`+kind+`"></i>`) {
			t.Errorf("the legend has no %s band", kind)
		}
	}
}

// TestTimelineAvailability checks the bands of nodes down that the report
// draws from the availability records of a version 3 history, and that the
// records are no faults.
func TestTimelineAvailability(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	rec := func(at int, f string, value string) history.Op {
		return declared(history.Op{Time: ms(at), Process: history.NemesisProcess, Type: history.Info, F: f, Value: []byte(value)})
	}
	h := history.History{
		history.Header(),
		{Time: ms(10), Process: 0, Type: history.Invoke, F: history.FAcquire, Key: "k", TTL: time.Second},
		{Time: ms(20), Process: 0, Type: history.Fail, F: history.FAcquire, Key: "k"},
		rec(100, history.FAvailability, `{"nodes":5,"down":["n1"]}`),
		rec(101, "kill", `{"nodes":["n1"]}`),
		rec(200, history.FAvailability, `{"nodes":5,"down":["n1","n2","n3"]}`),
		rec(201, "pause", `{"nodes":["n2","n3"]}`),
		rec(300, history.FAvailability, `{"nodes":5,"down":[]}`),
		rec(301, "start", `{"nodes":["n1"]}`),
		rec(302, "resume", `{"nodes":["n2","n3"]}`),
		{Time: ms(400), Process: 1, Type: history.Invoke, F: history.FAcquire, Key: "k", TTL: time.Second},
		{Time: ms(410), Process: 1, Type: history.OK, F: history.FAcquire, Key: "k", Lease: time.Second},
	}
	for i := range h {
		h[i].Index = i
	}
	tl := buildTimeline(h)
	want := []availabilityBand{
		{Start: ms(100), End: ms(200), Availability: history.Availability{Nodes: 5, Down: []string{"n1"}}, I: 3},
		{Start: ms(200), End: ms(300), Availability: history.Availability{Nodes: 5, Down: []string{"n1", "n2", "n3"}}, I: 5},
	}
	if !reflect.DeepEqual(tl.Availability, want) {
		t.Fatalf("availability bands %+v, want %+v", tl.Availability, want)
	}
	var faults []string
	for _, iv := range tl.Nemesis {
		faults = append(faults, iv.Fault)
		if iv.Open {
			t.Errorf("fault %s left open: %+v", iv.Fault, iv)
		}
	}
	if !slices.Equal(faults, []string{"kill", "pause"}) {
		t.Fatalf("faults drawn %v, want kill and pause only", faults)
	}
	var b bytes.Buffer
	if err := RenderHTML(&b, ReportInput{Results: Results{Scenario: "s", Verdict: checker.Valid, Stats: CountStats(h)}, History: h}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<i class="sw avail-maj"></i>`, `<i class="sw avail-min"></i>`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the legend lacks %s", want)
		}
	}
	if got := embeddedData(t, b.String()).Timeline.Avail; len(got) != 2 || got[1].Majority || !got[0].Majority {
		t.Errorf("embedded availability %+v, want a minority down then a majority down", got)
	}
}

// TestRenderHTMLNamesTheLockClient checks that the report of an external
// client's run names the client and its command, and that the report of a
// built-in lock has no such line.
func TestRenderHTMLNamesTheLockClient(t *testing.T) {
	h := invalidHistory()
	for _, tc := range []struct {
		name   string
		client *LockClient
	}{
		{"external", &LockClient{Command: "python3 examples/anylang/redis_py_lock.py", Name: "redis-py 4.3.4 redis.lock.Lock (python 3.11)"}},
		{"built-in", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := invalidResults(h)
			res.LockClient = tc.client
			var b bytes.Buffer
			if err := RenderHTML(&b, ReportInput{Results: res, History: h}); err != nil {
				t.Fatal(err)
			}
			text := html.UnescapeString(b.String())
			has := strings.Contains(text, `id="lock-client"`)
			if has != (tc.client != nil) {
				t.Fatalf("lock client line present %v, want %v", has, tc.client != nil)
			}
			if tc.client != nil && (!strings.Contains(text, tc.client.Name) || !strings.Contains(text, tc.client.Command)) {
				t.Error("the report does not name the client and its command")
			}
		})
	}
}
