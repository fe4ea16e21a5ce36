package datasheet

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// partsBase is the base of the merged campaigns: redlock on three Redis
// masters, whose failover is not applicable (no replica).
func partsBase() *scenarios.Scenario {
	return &scenarios.Scenario{Name: "redlock-baseline", System: scenarios.System{Name: "redis", Nodes: 3},
		Lock: scenarios.Lock{Algorithm: "redlock", TTL: time.Second}, Workers: 4, Duration: 10 * time.Second}
}

// kindOf is the fault kind of a campaign's run.
func kindOf(sc *scenarios.Scenario) string {
	switch {
	case sc.Nemesis.Random != nil:
		return sc.Nemesis.Random.Faults[0]
	case len(sc.Nemesis.Steps) > 0:
		return sc.Nemesis.Steps[0].Fault
	}
	return hunt.NoFault
}

// partsRun is a run whose outcome follows its kind and seed alone: client
// pauses invalid from seed 3 on (lost-update at seed 5), kills invalid at
// seed 4 and unknown at seeds 2 and 6 (faults failed) and 7 (its setup
// failed), partitions unknown every run.
func partsRun(_ context.Context, sc *scenarios.Scenario) (hunt.Outcome, error) {
	kind := kindOf(sc)
	out := hunt.Outcome{Verdict: checker.Valid, Dir: fmt.Sprintf("/nonexistent/store/%s-%d", kind, sc.Seed)}
	out.Margins = []checker.Margin{{Key: "k", Write: &checker.TimeMargin{Margin: time.Duration(900-int(sc.Seed)*11-len(kind)) * time.Millisecond, Lease: time.Second}}}
	invalid := func(anomalies ...string) {
		out.Verdict, out.Anomalies = checker.Invalid, anomalies
		out.Finding = fmt.Sprintf("%s: %s seed %d", anomalies[0], kind, sc.Seed)
	}
	switch {
	case kind == "client-pause" && sc.Seed == 5:
		invalid("lost-update", "stale-write")
	case kind == "client-pause" && sc.Seed >= 3:
		invalid("stale-write")
	case kind == "kill" && sc.Seed == 4:
		invalid("double-grant")
	case kind == "kill" && sc.Seed%4 == 2:
		out.FaultFailed = true
	case kind == "kill" && sc.Seed == 7:
		out.Verdict, out.SetupFailed = checker.Unknown, "a server would not start"
	case kind == "partition":
		out.Verdict = checker.Unknown
	}
	return out, nil
}

// partsCampaign returns the campaign file of a hunt with opts of
// partsBase, whole or of opts.Shard.
func partsCampaign(t *testing.T, opts hunt.Options) *CampaignFile {
	t.Helper()
	rep, err := hunt.Campaign(context.Background(), partsBase(), partsRun, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return NewCampaignFile("redlock", "", partsBase(), opts, rep)
}

// TestMergePartsIsTheWhole makes a campaign whole and in n parts, writes
// the parts' campaign files and merges them read back in reverse order
// (hunt --merge): the merged datasheet row has the whole campaign's cells,
// every count, anomaly, first failing run with its sentence and n/a reason
// the same, and says that its time is the parts' sum. A campaign that
// ended early says so in its row.
func TestMergePartsIsTheWhole(t *testing.T) {
	opts := hunt.Options{Faults: []string{"client-pause", "kill", "partition", "failover"}, Runs: 7, Seed: 1, Backend: "local"}
	whole := partsCampaign(t, opts)
	wantSheet := Build([]*CampaignFile{whole}, []string{"redlock"})
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprintf("%d parts", n), func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for i := n; i >= 1; i-- {
				o := opts
				o.Shard = hunt.Shard{Index: i, Count: n}
				p := filepath.Join(dir, fmt.Sprintf("redlock-%d.json", i))
				if err := partsCampaign(t, o).Write(p); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			merged, err := ReadParts(paths)
			if err != nil {
				t.Fatal(err)
			}
			if merged.Shard != nil || merged.MergedParts != n || merged.Report.Runs != whole.Report.Runs {
				t.Errorf("merged: shard %v, %d parts, %d runs; want none, %d, %d", merged.Shard, merged.MergedParts, merged.Report.Runs, n, whole.Report.Runs)
			}
			got := Build([]*CampaignFile{merged}, []string{"redlock"})
			if !slices.Equal(got.Kinds, wantSheet.Kinds) {
				t.Fatalf("merged kinds %v, want %v", got.Kinds, wantSheet.Kinds)
			}
			for k, cell := range got.Rows[0].Cells {
				if want := wantSheet.Rows[0].Cells[k]; !reflect.DeepEqual(cell, want) {
					t.Errorf("%s: merged cell %+v, want the whole campaign's %+v", got.Kinds[k], *cell, *want)
				}
			}
			if md := got.Markdown(); !strings.Contains(md, fmt.Sprintf("the sum of its %d parts' times, merged", n)) {
				t.Errorf("the merged row does not say its time is the parts' sum:\n%s", md)
			}
		})
	}
	if c := wantSheet.Rows[0].Cells[1]; c.State != cellUnsafe || c.Failing != "/nonexistent/store/client-pause-3" || c.Sentence != "stale-write: client-pause seed 3" {
		t.Errorf("the whole campaign's client-pause cell %+v: want unsafe, first failing at seed 3", *c)
	}
	whole.EndedEarly = "interrupted"
	if md := Build([]*CampaignFile{whole}, []string{"redlock"}).Markdown(); !strings.Contains(md, "(ended early: interrupted)") {
		t.Errorf("the row of a campaign that ended early does not say so:\n%s", md)
	}
}

// TestMergePartsRefuses: a merge refuses, naming the files, anything but
// every part of one campaign once, and matrix refuses a part.
func TestMergePartsRefuses(t *testing.T) {
	opts := hunt.Options{Faults: []string{"kill"}, Runs: 4, Seed: 1, Backend: "local"}
	part := func(i, n int, edit func(*CampaignFile)) *CampaignFile {
		o := opts
		o.Shard = hunt.Shard{Index: i, Count: n}
		c := partsCampaign(t, o)
		if edit != nil {
			edit(c)
		}
		return c
	}
	tests := []struct {
		name  string
		files []*CampaignFile
		want  string
	}{
		{"a whole campaign", []*CampaignFile{part(1, 2, nil), partsCampaign(t, opts)}, "b.json is a whole campaign, not a part"},
		{"another seed", []*CampaignFile{part(1, 2, nil), part(2, 2, func(c *CampaignFile) { c.Seed = 9 })}, `a.json and b.json are parts of different campaigns: seed "1" and "9"`},
		{"another target", []*CampaignFile{part(1, 2, nil), part(2, 2, func(c *CampaignFile) { c.Target = "redis-single" })}, "different campaigns: target"},
		{"another number of parts", []*CampaignFile{part(1, 2, nil), part(2, 3, nil)}, `different campaigns: parts "2" and "3"`},
		{"a part twice", []*CampaignFile{part(2, 3, nil), part(1, 3, nil), part(2, 3, nil)}, "a.json and c.json are both part 2/3"},
		{"a part missing", []*CampaignFile{part(1, 3, nil), part(3, 3, nil)}, "a.json, b.json hold parts 1, 3 of 3: part 2 is missing"},
		{"two parts missing", []*CampaignFile{part(3, 4, nil)}, "parts 1, 2, 4 are missing"},
		{"a part interrupted", []*CampaignFile{part(1, 2, nil), part(2, 2, func(c *CampaignFile) { c.EndedEarly = "interrupted" })}, "b.json, part 2/2, ended early (interrupted)"},
		{"a part stopped", []*CampaignFile{part(1, 2, func(c *CampaignFile) { c.Report.Stopped = "store/x" }), part(2, 2, nil)}, "a.json, part 1/2, stopped"},
		{"a part out of range", []*CampaignFile{part(1, 2, func(c *CampaignFile) { c.Shard.Index = 3 })}, "a.json says it is part 3/2"},
	}
	names := []string{"a.json", "b.json", "c.json"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := MergeParts(tt.files, names[:len(tt.files)]); err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("MergeParts: %v, %v; want one line with %q", got, err, tt.want)
			}
		})
	}
	p := filepath.Join(t.TempDir(), "redlock-2.json")
	if err := part(2, 2, nil).Write(p); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadCampaigns([]string{p}); err == nil || !strings.Contains(err.Error(), "redlock-2.json holds part 2/2") {
		t.Errorf("matrix read a part: %v; want it refused, naming the file", err)
	}
}
