package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestRenderHTMLGroupsAnomalies checks that the report lists an anomaly that
// others follow from once, with their count and ops (docs/history.md §4,
// one cause, one finding), that its checker's row counts them, and that
// results.json keeps them and still reads without them.
func TestRenderHTMLGroupsAnomalies(t *testing.T) {
	h, _, err := history.ReadFile("../checker/testdata/double-holds-one-paused-holder.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	res := Results{Scenario: "s", Verdict: checker.Invalid, Checkers: checker.Check(context.Background(), h, checker.Options{}), Stats: CountStats(h)}
	var b bytes.Buffer
	if err := RenderHTML(&b, ReportInput{Results: res, History: h}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<span class="follows">+ 19 more double-hold that follow from it: ops [1 13 18], [1 21 26], [1 29 34], [1 37 42], [1 45 50], …</span>`,
		`<span class="follows">+ 2 more stale-write that follow from it: ops`,
		`<td class="num">1 (+19 that follow)</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report does not say %q", want)
		}
	}
	var dh []anomalyJSON
	for _, a := range embeddedData(t, page).Anomalies {
		if a.Kind == checker.DoubleHold {
			dh = append(dh, a)
		}
	}
	if len(dh) != 1 || dh[0].Follows != 19 || len(dh[0].Followers) != 19 {
		t.Errorf("embedded double-holds %+v, want one with 19 followers", dh)
	}
	// results.json round-trips the grouping, and one written before it
	// (no follows) reads as ungrouped anomalies.
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"follows":19,"followers":[[1,13,18],`) {
		t.Errorf("results.json has no follows and followers:\n%s", data)
	}
	var old Results
	if err := json.Unmarshal([]byte(`{"scenario":"s","verdict":"invalid","checkers":[{"name":"double-hold","verdict":"invalid","anomalies":[{"kind":"double-hold","key":"k","ops":[1,5],"message":"m"}]}]}`), &old); err != nil {
		t.Fatal(err)
	}
	if a := old.Checkers[0].Anomalies[0]; a.Follows != 0 || a.Followers != nil || len(a.Ops) != 2 {
		t.Errorf("an old results.json reads as %+v", a)
	}
}
