package reports

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
)

// TestRenderHTMLMargins checks that the report gives each key a line with
// its margins and their ops, marks a violation, and says so of a key none
// applies to; a run without margins has no such line.
func TestRenderHTMLMargins(t *testing.T) {
	h := invalidHistory()
	tests := []struct {
		name    string
		margins []checker.Margin
		want    []string
		bad     int // margins marked as violations
	}{
		{name: "none", margins: nil},
		{name: "a near miss and a violation", margins: []checker.Margin{
			{Key: "a"},
			{Key: "k", Lease: &checker.TimeMargin{Margin: 20 * time.Millisecond, Lease: time.Second, Ops: []int{0, 1, 3}},
				Write: &checker.TimeMargin{Margin: -11 * time.Millisecond, Lease: time.Second, Ops: []int{1, 2}},
				Token: &checker.TokenMargin{Margin: 1, Ops: []int{3, 7}}},
		}, want: []string{"none applies", "lease <span class=\"\">+20ms (+0.020 of its 1s lease)</span> <span class=\"ops\">ops 0, 1, 3</span>",
			"-11ms (-0.011 of its 1s lease)", "ops 1, 2", "token <span class=\"\">+1</span>", "ops 3, 7"}, bad: 1},
		{name: "a hold that could not end", margins: []checker.Margin{{Key: "k", Lease: &checker.TimeMargin{Margin: -checker.Forever, Ops: []int{0, 1, 4}}}},
			want: []string{"lease <span class=\"v-text-invalid\">-∞</span>"}, bad: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := invalidResults(h)
			res.Margins = tt.margins
			var b bytes.Buffer
			if err := RenderHTML(&b, ReportInput{Results: res, History: h}); err != nil {
				t.Fatal(err)
			}
			page := html.UnescapeString(b.String())
			if has := strings.Contains(page, `id="margins"`); has != (tt.margins != nil) {
				t.Fatalf("margins line present %v, want %v", has, tt.margins != nil)
			}
			for _, w := range tt.want {
				if !strings.Contains(page, w) {
					t.Errorf("report lacks %q", w)
				}
			}
			if d := embeddedData(t, b.String()); len(d.Margins) != parts(tt.margins) {
				t.Errorf("the report's data lists %d margins, want %d", len(d.Margins), parts(tt.margins))
			}
			i := strings.Index(page, `id="margins"`)
			if got := strings.Count(page[max(i, 0):], `class="v-text-invalid">`) - strings.Count(page[max(i, 0):], `class="v-text-invalid">invalid`); i >= 0 && got != tt.bad {
				t.Errorf("%d margins marked as violations, want %d", got, tt.bad)
			}
		})
	}
}

// parts counts the margins that apply in ms.
func parts(ms []checker.Margin) int {
	n := 0
	for _, m := range ms {
		n += len(marginParts(m))
	}
	return n
}

// TestResultsMarginsRoundTrip checks that results.json keeps the margins,
// and leaves out the field of a run without them and each margin that does
// not apply.
func TestResultsMarginsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	res := invalidResults(invalidHistory())
	res.Margins = []checker.Margin{{Key: "a"}, {Key: "k", Lease: &checker.TimeMargin{Margin: 20 * time.Millisecond, Lease: time.Second, Ops: []int{0, 1, 3}}}}
	if err := WriteResults(dir, &res); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"margins":`, `"key": "a"`, `"lease": {`, `"margin_ns": 20000000`, `"lease_ns": 1000000000`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("results.json lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), `"write"`) || strings.Contains(string(b), `"token"`) {
		t.Errorf("results.json lists margins that do not apply:\n%s", b)
	}
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Margins, res.Margins) {
		t.Errorf("read back %+v, want %+v", back.Margins, res.Margins)
	}
	res.Margins = nil
	out, _ := json.Marshal(res)
	if strings.Contains(string(out), "margins") {
		t.Error("a run without margins has the field")
	}
}

// TestBrowserReportMargins clicks a margin in headless Chromium: the
// timeline highlights its ops and zooms to them, and no anomaly stays
// selected.
func TestBrowserReportMargins(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the headless Chromium test")
	}
	dir := t.TempDir()
	h := invalidHistory()
	res := invalidResults(h)
	res.Margins = []checker.Margin{{Key: "k", Lease: &checker.TimeMargin{Margin: -10 * time.Millisecond, Lease: time.Second, Ops: []int{1, 9}}}}
	writeRunDir(t, dir, h, res, invalidScenarioYAML)
	if err := WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.open("file://" + filepath.Join(dir, ReportFile))
	b.eval(`document.querySelector("li.anomaly").click(); document.querySelector(".margin-part").click()`, nil)
	var hl struct {
		Indexes  []string `json:"indexes"`
		Selected int      `json:"selected"`
		T0       float64  `json:"t0"`
		T1       float64  `json:"t1"`
	}
	b.eval(`({indexes: Array.from(document.querySelectorAll("#timeline .highlight")).map(e => e.dataset.index).filter(Boolean),
		selected: document.querySelectorAll("li.anomaly.selected").length,
		t0: window.jepsenLiteReport.view.t0, t1: window.jepsenLiteReport.view.t1})`, &hl)
	covered := map[string]bool{}
	for _, di := range hl.Indexes {
		for _, f := range strings.Fields(di) {
			covered[f] = true
		}
	}
	if !covered["1"] || !covered["9"] {
		t.Errorf("highlighted elements cover ops %v, want 1 and 9 (the margin's ops)", hl.Indexes)
	}
	if hl.Selected != 0 {
		t.Errorf("%d anomalies still selected", hl.Selected)
	}
	if hl.T0 > 0.1e6 || hl.T1 < 5.2e6 || hl.T1-hl.T0 > 11e6 {
		t.Errorf("view after the click = %.0fµs..%.0fµs, want it zoomed around 0.1s..5.2s", hl.T0, hl.T1)
	}
}
