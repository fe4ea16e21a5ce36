package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

func gateRowOf(name, resource string, observed map[string]int, kinds ...string) *gateRow {
	r := &gateRow{
		sc:        &scenarios.Scenario{Name: name, Resource: resource, Tags: []string{"gc-pause"}},
		name:      name,
		observed:  observed,
		anomalies: map[string]bool{},
		examples:  map[string]string{},
	}
	r.sc.Lock.Algorithm = "zk-recipe"
	for _, n := range observed {
		r.runs += n
	}
	for _, k := range kinds {
		r.anomalies[k] = true
	}
	return r
}

func TestCellText(t *testing.T) {
	valid := map[string]int{string(checker.Valid): 3}
	invalid := map[string]int{string(checker.Invalid): 3}
	for _, tc := range []struct {
		name string
		row  *gateRow
		want string
	}{
		{"not run", gateRowOf("s", scenarios.Unfenced, map[string]int{}), "not run"},
		{"every run valid", gateRowOf("s", scenarios.Unfenced, valid), "safe ([s](#s))"},
		{"unfenced double hold is unsafe even with an intact counter",
			gateRowOf("s", scenarios.Unfenced, invalid, checker.DoubleHold), "**unsafe**: double-hold ([s](#s))"},
		{"fenced double hold without late writes keeps the data",
			gateRowOf("s", scenarios.Fenced, invalid, checker.DoubleHold), "**lock unsafe**: double-hold; data intact ([s](#s))"},
		{"guarded double hold without late writes keeps the data",
			gateRowOf("s", scenarios.Guarded, invalid, checker.DoubleHold, checker.EarlyGrant), "**lock unsafe**: double-hold,early-grant; data intact ([s](#s))"},
		{"fenced resource that accepted a stale write is unsafe",
			gateRowOf("s", scenarios.Fenced, invalid, checker.DoubleHold, checker.StaleWrite), "**unsafe**: double-hold,stale-write ([s](#s))"},
		{"fenced resource that lost an update is unsafe",
			gateRowOf("s", scenarios.Guarded, invalid, checker.LostUpdate), "**unsafe**: lost-update ([s](#s))"},
		{"some runs valid", gateRowOf("s", scenarios.Fenced, map[string]int{"valid": 1, "invalid": 2}, checker.DoubleHold), "mixed: valid×1 invalid×2 ([s](#s))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cellText(tc.row); got != tc.want {
				t.Errorf("cellText = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestScenariosMarkdownNamesTheResourceInTheDesignColumn(t *testing.T) {
	rows := []*gateRow{
		gateRowOf("zk-gc-pause", scenarios.Unfenced, map[string]int{"invalid": 2}, checker.StaleWrite),
		gateRowOf("zk-gc-pause-fenced", scenarios.Fenced, map[string]int{"invalid": 2}, checker.DoubleHold),
		gateRowOf("zk-gc-pause-guarded", scenarios.Guarded, map[string]int{"invalid": 2}, checker.DoubleHold),
	}
	mustContain(t, renderScenariosMarkdown(t, rows, 2),
		"| zk-recipe |  | **unsafe**: stale-write ([zk-gc-pause](#zk-gc-pause))",
		"| zk-recipe + fenced resource |  | **lock unsafe**: double-hold; data intact ([zk-gc-pause-fenced](#zk-gc-pause-fenced))",
		"| zk-recipe + guarded resource |  | **lock unsafe**: double-hold; data intact",
		"### zk-gc-pause-guarded",
	)
}

func TestScenariosMarkdownDescribesTheFaultTimeline(t *testing.T) {
	scripted := gateRowOf("scripted", scenarios.Unfenced, map[string]int{"invalid": 1}, checker.StaleWrite)
	scripted.sc.Nemesis.Steps = []nemesis.Step{{At: time.Second, Fault: "client-pause", Targets: []string{"w0"}, Point: "before-write", Duration: 2500 * time.Millisecond}}
	random := gateRowOf("random", scenarios.Fenced, map[string]int{"valid": 1})
	random.sc.Nemesis.Random = &nemesis.RandomSpec{Faults: []string{"client-pause"}, Start: 500 * time.Millisecond, Interval: time.Second,
		MinDuration: 200 * time.Millisecond, MaxDuration: 3 * time.Second, Workers: []string{"one"}}
	quiet := gateRowOf("quiet", scenarios.Unfenced, map[string]int{"valid": 1})
	mustContain(t, renderScenariosMarkdown(t, []*gateRow{scripted, random, quiet}, 1),
		"### scripted\n",
		"  - at 1s client-pause w0 at before-write for 2.5s\n",
		"### random\n",
		"  - random, drawn from the run's seed: client-pause, one at a time from 500ms, quiet gaps 500ms–1.5s, each lasting 200ms–3s; workers one\n",
		"### quiet\n",
		"- Fault timeline:\n  - none\n",
	)
}

// renderScenariosMarkdown writes rows as scenarios.md to a temporary file
// and returns its text.
func renderScenariosMarkdown(t *testing.T, rows []*gateRow, seeds int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenarios.md")
	if err := writeScenariosMarkdown(path, rows, seeds); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustContain fails t for every one of wants that md lacks.
func mustContain(t *testing.T, md string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(md, want) {
			t.Errorf("scenarios.md lacks %q:\n%s", want, md)
		}
	}
}
