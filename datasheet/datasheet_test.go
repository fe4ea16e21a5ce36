package datasheet

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// failingRun writes a stored run of a client pause into dir: its scenario
// and results with one stale-write.
func failingRun(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sc, err := scenarios.Load("redis-single-gc-pause", runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	sc.Name, sc.Seed, sc.Expect = "redis-single-baseline-hunt-client-pause", 4, checker.Expectation{Verdict: checker.Valid}
	b, err := scenarios.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	res := map[string]any{"scenario": sc.Name, "seed": 4, "verdict": "invalid", "checkers": []map[string]any{
		{"name": "stale-write", "verdict": "invalid", "anomalies": []map[string]any{{"kind": "stale-write", "ops": []int{3, 9}, "message": "process 0 wrote after its lease ended."}}},
	}}
	rb, _ := json.Marshal(res)
	if err := os.WriteFile(filepath.Join(dir, "results.json"), rb, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMatrix renders two campaigns, a Redis lock and an etcd lock, and
// checks every kind of cell, that no cell is empty, and that an unsafe
// cell's schedule is a runnable scenario expecting what the run found.
func TestMatrix(t *testing.T) {
	dir := t.TempDir()
	first, run := filepath.Join(dir, "store", "run1"), filepath.Join(dir, "store", "run2")
	failingRun(t, first)
	failingRun(t, run)
	files := twoCampaigns(t, dir, first, run)
	out, page, schedules := filepath.Join(dir, "docs", "matrix.md"), filepath.Join(dir, "matrix.html"), filepath.Join(dir, "docs", "matrix")
	md := render(t, files, Output{Markdown: out, HTML: page, Schedules: schedules})
	for _, w := range []string{
		"| lock | none | client-pause | clock-bump | failover | partition |",
		"**unsafe** [1/2](#redis-single-client-pause): lost-update, stale-write",
		"safe 0/2 (1 unknown)",
		"not decided: 2/2 unknown",
		"[n/a](#redis-single-failover)",
		"redis/masters has no replicas",
		// etcd was not asked for clock-bump or failover: its reasons come
		// from the declarations.
		"etcd is a Go binary",
		"**etcd-mutex × failover**: not applicable: the fault is declared for redis only",
		"stale-write: process 0 wrote after its lease ended.",
		"[`redis-single-client-pause.yaml`](matrix/redis-single-client-pause.yaml)",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("matrix.md lacks %q:\n%s", w, md)
		}
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| ") && strings.Contains(line, "|  |") {
			t.Errorf("an empty cell: %s", line)
		}
	}
	sc, err := scenarios.Load(filepath.Join(schedules, "redis-single-client-pause.yaml"), runner.Names())
	if err != nil {
		t.Fatalf("the schedule does not load: %v", err)
	}
	if sc.Expect.Verdict != checker.Invalid || strings.Join(sc.Expect.Anomalies, ",") != "stale-write" || sc.Seed != 4 || len(sc.Nemesis.Steps) == 0 {
		t.Errorf("schedule: expect %+v, seed %d, %d steps; want invalid (stale-write), seed 4, the run's steps", sc.Expect, sc.Seed, len(sc.Nemesis.Steps))
	}
	h, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(h), `<td class="unsafe">`) || !strings.Contains(string(h), "redis-single × client-pause") {
		t.Errorf("matrix.html: %v\n%s", err, h)
	}
	// A shrunk scenario beside a failing run, here the second, is the
	// schedule instead.
	if err := os.WriteFile(filepath.Join(run, ShrunkFile), []byte("name: shrunk\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	md = render(t, files, Output{Markdown: out, Schedules: schedules})
	if b, _ := os.ReadFile(filepath.Join(schedules, "redis-single-client-pause.yaml")); string(b) != "name: shrunk\n" {
		t.Errorf("the schedule is not the shrunk scenario: %q", b)
	}
	if !strings.Contains(md, "Replay its shrunk schedule") {
		t.Errorf("matrix.md does not say the schedule is shrunk:\n%s", md)
	}
}

// twoCampaigns writes two campaign files into dir, a Redis lock's (whose
// client pause failed in the runs first and run) and an etcd lock's, and
// returns their paths.
func twoCampaigns(t *testing.T, dir, first, run string) []string {
	t.Helper()
	redis := &CampaignFile{Target: "redis-single", Algorithm: "redis-single", System: "redis", Topology: "masters", Nodes: 1, Workers: 8,
		Duration: 6 * time.Second, TTL: time.Second, RunsPerKind: 2, Seed: 1, Backend: "local",
		Faults: []string{"client-pause", "clock-bump", "failover", "partition"},
		Report: &hunt.Report{Scenario: "redis-single-baseline", Runs: 8, Rows: []*hunt.Row{
			{Fault: hunt.NoFault, Runs: 2},
			{Fault: "client-pause", Runs: 2, Invalid: 1, Anomalies: []string{"lost-update", "stale-write"}, Failing: []string{first, run}},
			{Fault: "clock-bump", Runs: 2, Unknown: 1},
			{Fault: "failover", NotApplicable: "redis/masters has no replicas to fail over to"},
			{Fault: "partition", Runs: 2, Unknown: 2},
		}}}
	etcd := &CampaignFile{Target: "etcd-mutex", Algorithm: "etcd-mutex", System: "etcd", Nodes: 3, Workers: 8,
		Duration: 8 * time.Second, TTL: 2 * time.Second, RunsPerKind: 2, Seed: 1, Backend: "local",
		Report: &hunt.Report{Scenario: "etcd-mutex-baseline", Runs: 6, Rows: []*hunt.Row{
			{Fault: hunt.NoFault, Runs: 2}, {Fault: "client-pause", Runs: 2}, {Fault: "partition", Runs: 2},
		}}}
	var files []string
	for name, c := range map[string]*CampaignFile{"redis-single": redis, "etcd-mutex": etcd} {
		f := filepath.Join(dir, name+".json")
		if err := c.Write(f); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// render renders the datasheet of the campaign files at paths as `jepsen-lite
// matrix` does, to out, and returns its Markdown.
func render(t *testing.T, paths []string, out Output) string {
	t.Helper()
	files, names, err := ReadCampaigns(paths)
	if err != nil {
		t.Fatal(err)
	}
	if err := Build(files, names).Render(out, io.Discard); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out.Markdown)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHuntDatasheet writes the one-row datasheet of a campaign (hunt
// --page): titled by the lock, the unsafe cell's note with its run's
// sentence, linking the run's shrunk.yaml beside the page, and the HTML
// page with the same title.
func TestHuntDatasheet(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "store", "run1")
	failingRun(t, run)
	shrunk := "name: shrunk-pause\n"
	if err := os.WriteFile(filepath.Join(run, ShrunkFile), []byte(shrunk), 0o644); err != nil {
		t.Fatal(err)
	}
	cf := &CampaignFile{Target: "redis-single", LockCommand: "python3 examples/anylang/redis_py_lock.py", Algorithm: "exec", System: "redis", Nodes: 1, Workers: 8,
		Duration: 6 * time.Second, TTL: time.Second, RunsPerKind: 2, Seed: 1, Backend: "local",
		Report: &hunt.Report{Scenario: "redis-single-baseline", Runs: 4, Rows: []*hunt.Row{
			{Fault: hunt.NoFault, Runs: 2},
			{Fault: "client-pause", Runs: 2, Invalid: 1, Anomalies: []string{"stale-write"}, Failing: []string{run}},
		}}}
	page := filepath.Join(dir, "page")
	if err := WritePage(page, cf); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(page, "datasheet.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Safety datasheet: redis_py_lock.py\n",
		"`jepsen-lite hunt redis-single`",
		"| redis_py_lock.py | safe 0/2 | **unsafe** [1/2](#redis_py_lock.py-client-pause): stale-write |",
		"The failing run shrunk: stale-write: process 0 wrote after its lease ended.",
		"[`redis_py_lock.py-client-pause.yaml`](redis_py_lock.py-client-pause.yaml)",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("datasheet.md does not say %q:\n%s", want, md)
		}
	}
	if b, err := os.ReadFile(filepath.Join(page, "redis_py_lock.py-client-pause.yaml")); err != nil || string(b) != shrunk {
		t.Errorf("the cell's schedule: %q, %v; want the run's shrunk.yaml", b, err)
	}
	if h, err := os.ReadFile(filepath.Join(page, "datasheet.html")); err != nil || !strings.Contains(string(h), "<h1>Safety datasheet: redis_py_lock.py</h1>") {
		t.Errorf("datasheet.html: %v\n%s", err, h)
	}
}

// TestMatrixWithoutStore renders a datasheet again after its campaigns'
// stores are gone: the campaign file's findings give each note its
// sentence (of the run that shrink reduced, hunt.Row.Shrunk, beside its
// shrunk schedule), and the schedules written while the runs were there
// stay, shrunk or not, so the page comes out the same.
func TestMatrixWithoutStore(t *testing.T) {
	dir := t.TempDir()
	run, shrunkRun := filepath.Join(dir, "store", "run1"), filepath.Join(dir, "store", "run2")
	failingRun(t, run)
	failingRun(t, shrunkRun)
	sc, err := scenarios.Load(filepath.Join(shrunkRun, "scenario.yaml"), runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	sc.Tags = append(sc.Tags, "shrunk")
	b, err := scenarios.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shrunkRun, ShrunkFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	finding := "stale-write: process 0 wrote after its lease ended."
	c := &CampaignFile{Target: "redis-single", Algorithm: "redis-single", System: "redis", Topology: "masters", Nodes: 1, Workers: 8,
		Duration: 6 * time.Second, TTL: time.Second, RunsPerKind: 2, Seed: 1, Backend: "local",
		Report: &hunt.Report{Scenario: "redis-single-baseline", Runs: 6, Rows: []*hunt.Row{
			{Fault: hunt.NoFault, Runs: 2},
			{Fault: "client-pause", Runs: 2, Invalid: 1, Anomalies: []string{"stale-write"}, Failing: []string{run}, Findings: []string{finding}},
			{Fault: "kill", Runs: 2, Invalid: 2, Anomalies: []string{"stale-write"}, Failing: []string{run, shrunkRun},
				Findings: []string{"stale-write: process 5 wrote after its lease ended.", finding}, Shrunk: shrunkRun},
		}}}
	file := filepath.Join(dir, "redis-single.json")
	if err := c.Write(file); err != nil {
		t.Fatal(err)
	}
	out, schedules := filepath.Join(dir, "docs", "matrix.md"), filepath.Join(dir, "docs", "matrix")
	before := render(t, []string{file}, Output{Markdown: out, Schedules: schedules})
	if err := os.RemoveAll(filepath.Join(dir, "store")); err != nil {
		t.Fatal(err)
	}
	after := render(t, []string{file}, Output{Markdown: out, Schedules: schedules})
	if after != before {
		t.Errorf("the page changed when the store went:\n%s\n---\n%s", before, after)
	}
	for _, want := range []string{"The first failing run: " + finding, "The failing run shrunk: " + finding, "its shrunk schedule"} {
		if !strings.Contains(after, want) {
			t.Errorf("the page does not say %q:\n%s", want, after)
		}
	}
}

// TestMatrixSetupGaveUp renders a campaign two of whose kinds stopped
// after three runs in a row failed their setup: their cells count those
// runs as unknown (a cell of only such runs is not decided), link a note
// that says why the cell has fewer runs, and never say not applicable.
func TestMatrixSetupGaveUp(t *testing.T) {
	dir := t.TempDir()
	gaveUp := "setup failed in 3 runs in a row: runner: setup failed: starting mariadb: local: mariadb-install-db: exit status 1"
	c := &CampaignFile{Target: "mysql-lease", Algorithm: "mysql-lease", System: "mariadb", Nodes: 1, Workers: 8,
		Duration: 6 * time.Second, TTL: time.Second, RunsPerKind: 10, Seed: 1, Backend: "local",
		Report: &hunt.Report{Scenario: "mysql-lease-baseline", Runs: 18, Rows: []*hunt.Row{
			{Fault: hunt.NoFault, Runs: 10},
			{Fault: "kill", Runs: 3, Unknown: 3, SetupFailed: 3, SetupGaveUp: gaveUp},
			{Fault: "partition", Runs: 5, Unknown: 3, SetupFailed: 3, SetupGaveUp: gaveUp},
		}}}
	file := filepath.Join(dir, "mysql-lease.json")
	if err := c.Write(file); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "matrix.html")
	md := render(t, []string{file}, Output{Markdown: filepath.Join(dir, "matrix.md"), HTML: page})
	for _, w := range []string{
		"| mysql-lease | safe 0/10 | not decided: 3/3 unknown ([fewer runs](#mysql-lease-kill)) | safe 0/5 (3 unknown) ([fewer runs](#mysql-lease-partition)) |",
		"<a id=\"mysql-lease-kill\"></a>**mysql-lease × kill**: Its runs after these 3 were not made: " + gaveUp + ".",
		"<a id=\"mysql-lease-partition\"></a>**mysql-lease × partition**: Its runs after these 5 were not made: " + gaveUp + ".",
	} {
		if !strings.Contains(md, w) {
			t.Errorf("matrix.md lacks %q:\n%s", w, md)
		}
	}
	if strings.Contains(md, "[n/a]") || strings.Contains(md, "not applicable:") {
		t.Errorf("matrix.md calls a kind whose setups failed not applicable:\n%s", md)
	}
	h, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(h), `<li id="mysql-lease-kill"><b>mysql-lease × kill</b>: Its runs after these 3 were not made`) ||
		!strings.Contains(string(h), `(<a href="#mysql-lease-partition">fewer runs</a>)`) {
		t.Errorf("matrix.html: %v\n%s", err, h)
	}
}
