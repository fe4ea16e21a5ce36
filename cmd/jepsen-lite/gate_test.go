package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// doubleGrant is a history in which worker 1 is granted k while worker 0
// holds it with a 5 s lease it never releases: double-hold and early-grant.
const doubleGrant = `{"index":0,"time":0,"process":-1,"type":"info","f":"history","value":{"format":"jepsen-lite","version":2}}
{"index":1,"time":100000000,"process":0,"client":0,"type":"invoke","f":"acquire","key":"k","ttl":5000000000}
{"index":2,"time":110000000,"process":0,"client":0,"type":"ok","f":"acquire","key":"k","lease":5000000000}
{"index":3,"time":1000000000,"process":1,"client":1,"type":"invoke","f":"acquire","key":"k","ttl":5000000000}
{"index":4,"time":1010000000,"process":1,"client":1,"type":"ok","f":"acquire","key":"k","lease":5000000000}
{"index":5,"time":2000000000,"process":1,"client":1,"type":"invoke","f":"release","key":"k"}
{"index":6,"time":2010000000,"process":1,"client":1,"type":"ok","f":"release","key":"k"}
`

// notWellFormed completes an acquire that was never invoked.
const notWellFormed = `{"index":0,"time":0,"process":-1,"type":"info","f":"history","value":{"format":"jepsen-lite","version":2}}
{"index":1,"time":100000000,"process":0,"client":0,"type":"ok","f":"acquire","key":"k","lease":5000000000}
`

// staleResults is a results.json from older checkers that found nothing.
const staleResults = `{"scenario":"redis-failover-async","seed":7,"history_version":2,"verdict":"valid","expected":{"verdict":"valid"},"expectation_met":true,"checkers":[],"stats":{}}
`

// TestGateFromStoreRechecksHistories builds a store by hand: an old run of
// redis-failover-async whose history holds a double grant but whose stale
// results.json (and stored expectation) say valid, a run that died before
// writing a history, and a newer run whose history is not well-formed. The
// gate must re-check the histories with the current checkers (invalid,
// judged against the catalog's expectation of a double hold), count the
// malformed one as an error, leave out the one without a history, name the
// run directory and ops in the Markdown, and write nothing into the store.
func TestGateFromStoreRechecksHistories(t *testing.T) {
	const name = "redis-failover-async"
	sc, err := scenarios.Load(name, runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	stored := *sc
	stored.Seed = 7
	stored.Expect = checker.Expectation{Verdict: checker.Valid} // not the catalog's: must not be used
	yml, err := scenarios.Marshal(&stored)
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	invalid := writeRunDir(t, filepath.Join(store, name, "20260101T000000.000Z"), map[string]string{
		reports.ScenarioFile: string(yml), reports.HistoryFile: doubleGrant, reports.ResultsFile: staleResults})
	writeRunDir(t, filepath.Join(store, name, "20260101T000100.000Z"), map[string]string{reports.ScenarioFile: string(yml)})
	malformed := writeRunDir(t, filepath.Join(store, name, "20260101T000200.000Z"), map[string]string{
		reports.ScenarioFile: string(yml), reports.HistoryFile: notWellFormed, reports.ResultsFile: staleResults})

	md := filepath.Join(t.TempDir(), "scenarios.md")
	junit := filepath.Join(t.TempDir(), "gate.xml")
	var stdout, stderr bytes.Buffer
	code, err := gateCmd(context.Background(), []string{name, "--seeds", "3", "--from-store", store, "--markdown", md, "--junit", junit}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("gate: %v\n%s", err, stderr.String())
	}
	if code != exitViolated {
		t.Errorf("exit %d, want %d (the malformed run is an error):\n%s%s", code, exitViolated, stdout.String(), stderr.String())
	}
	var row string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(line, name+" ") {
			row = line
		}
	}
	for _, want := range []string{"invalid×1 error×1", "double-hold,early-grant", "1/2"} {
		if !strings.Contains(row, want) {
			t.Errorf("gate row lacks %q (re-checked histories, not the stored results):\n%s", want, stdout.String())
		}
	}

	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(b),
		"Histories re-checked with the current checkers (`gate --from-store "+store+"`).",
		"- Proof from one run, `"+filepath.ToSlash(invalid)+"/` (ops by their `index` in its `history.jsonl`):\n",
		"  - `double-hold` on `k`, ops 2, 4",
		"  - `early-grant` on `k`, ops 4, 2",
	)
	if b, err := os.ReadFile(junit); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(string(b), "not well-formed") || !strings.Contains(string(b), malformed) {
		t.Errorf("JUnit lacks the malformed run's error and directory:\n%s", b)
	}

	for _, dir := range []string{invalid, malformed} {
		got, err := os.ReadFile(filepath.Join(dir, reports.ResultsFile))
		if err != nil || string(got) != staleResults {
			t.Errorf("%s: results.json changed (%v):\n%s", dir, err, got)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 3 {
			t.Errorf("%s: %d files, want the 3 written by the test", dir, len(entries))
		}
	}
}

// TestGateFromStoreListsLivenessAnomalies re-checks a stored run of
// pg-mutex-holder-crash whose holder of a lock that never expires crashed
// while every node was up: the gate lists stuck and unavailable beside the
// (valid) verdict, the catalog's expectation (stuck) holds, and the Markdown
// proves both kinds with their ops and sentences.
func TestGateFromStoreListsLivenessAnomalies(t *testing.T) {
	const name = "pg-mutex-holder-crash"
	sc, err := scenarios.Load(name, runner.Names())
	if err != nil {
		t.Fatal(err)
	}
	yml, err := scenarios.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := os.ReadFile("testdata/holder-crashed-lock-never-expires.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "store")
	writeRunDir(t, filepath.Join(store, name, "20260101T000000.000Z"), map[string]string{reports.ScenarioFile: string(yml), reports.HistoryFile: string(hist)})
	md := filepath.Join(t.TempDir(), "scenarios.md")
	var stdout, stderr bytes.Buffer
	code, err := gateCmd(context.Background(), []string{name, "--seeds", "1", "--from-store", store, "--markdown", md}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("gate: %v\n%s", err, stderr.String())
	}
	if code != exitHeld {
		t.Errorf("exit %d, want %d:\n%s%s", code, exitHeld, stdout.String(), stderr.String())
	}
	for _, want := range []string{"valid; stuck", "valid×1", "stuck,unavailable", "1/1"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("gate output lacks %q:\n%s", want, stdout.String())
		}
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	mustContain(t, string(b),
		"  - `stuck` on `k`, ops 1, 2, ",
		"  - `unavailable` on `k`, ops 1, 2, ",
		"k unavailable from 0.015s to ",
	)
}

// writeRunDir makes the run directory dir with files (name -> text) and
// returns it.
func writeRunDir(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, text := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
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
