package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/reports"
)

// guardedScenario is a run directory's scenario.yaml whose register is
// kept in the locked system: a version 1 history of it has its reply
// times dropped.
const guardedScenario = `name: guarded
system: {name: postgres}
lock: {algorithm: pg-mutex, ttl: 2s}
resource: guarded
workers: 2
duration: 2s
expect: {verdict: valid}
`

// savedHistories returns every saved jsonl history of the repository's
// testdata and the synthetic histories of checker/synth: one of a correct
// lock, and one with each anomaly kind it can plant.
func savedHistories(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../../checker/testdata/*.jsonl", "../../history/testdata/*.jsonl", "testdata/*.jsonl"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 100 {
		t.Fatalf("found %d saved histories: the test runs in the command's directory", len(files))
	}
	dir := t.TempDir()
	opts := synth.Options{Workers: 6, Keys: 2, Ops: 3000, TTL: time.Second, InfoRate: 0.02, Tokens: true}
	for i, kind := range append([]string{""}, synth.Kinds...) {
		rng := rand.New(rand.NewPCG(uint64(i+1), 7))
		h := synth.Generate(rng, opts)
		if kind != "" {
			var err error
			if h, err = synth.Inject(rng, h, kind); err != nil {
				t.Fatal(err)
			}
		}
		file := filepath.Join(dir, fmt.Sprintf("synth-%d-%s.jsonl", i, kind))
		if err := synth.Write(file, h); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	return files
}

// guardedRunDir returns a run directory holding file as its history, with
// guardedScenario.
func guardedRunDir(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, reports.HistoryFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(guardedScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckFileAgreesWithReadStored checks every saved history, as a bare
// file and as the history of a run whose register is guarded, in the two
// ways the command has: read whole (readStored, then check, as gate
// --from-store does) and read op by op (openStored, then checkFile, as
// check does). Both give the same error, or the same results document and
// number of ops, the checkers' times aside.
func TestCheckFileAgreesWithReadStored(t *testing.T) {
	for _, file := range savedHistories(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Run("a bare file", func(t *testing.T) { compareChecks(t, file, false) })
			t.Run("a guarded run", func(t *testing.T) { compareChecks(t, guardedRunDir(t, file), true) })
		})
	}
}

// compareChecks checks path both ways and fails when they differ.
func compareChecks(t *testing.T, path string, isDir bool) {
	t.Helper()
	ctx := context.Background()
	opts := checker.Options{Timeout: time.Minute}
	old, oldErr := readStored(path, isDir)
	run, file, newErr := openStored(path, isDir)
	if isDir && newErr == nil && !run.guarded() {
		t.Fatalf("the run's scenario was not read as guarded: %+v", run.sc)
	}
	var res *reports.Results
	ops := 0
	if newErr == nil {
		res, ops, newErr = run.checkFile(ctx, file, run.options(0, false, opts), nil)
	}
	if fmt.Sprint(oldErr) != fmt.Sprint(newErr) {
		t.Fatalf("errors differ:\nwhole:    %v\nop by op: %v", oldErr, newErr)
	}
	if oldErr != nil {
		return
	}
	want := old.check(ctx, old.options(0, false, opts))
	if want.Checkers[0].Verdict != checker.Valid {
		// not well-formed: the command stops at the message of the first op
		// that is not, which is all the two must agree on (op by op, the
		// reading stops there)
		if fmt.Sprint(res.Checkers[0].Anomalies) != fmt.Sprint(want.Checkers[0].Anomalies) {
			t.Fatalf("well-formedness differs:\nop by op: %+v\nwhole:    %+v", res.Checkers[0], want.Checkers[0])
		}
		return
	}
	if ops != len(old.h) {
		t.Fatalf("%d ops, want %d", ops, len(old.h))
	}
	if got, wantDoc := resultsText(t, res), resultsText(t, want); got != wantDoc {
		t.Fatalf("results differ:\nop by op: %s\nwhole:    %s", got, wantDoc)
	}
}

// resultsText returns res as JSON, without the checkers' times.
func resultsText(t *testing.T, res *reports.Results) string {
	t.Helper()
	for i := range res.Checkers {
		res.Checkers[i].Elapsed = 0
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzCheckFileAgrees checks any file both ways, as a bare file or as the
// history of a guarded run: they give the same error, or the same results.
func FuzzCheckFileAgrees(f *testing.F) {
	for _, name := range []string{"testdata/truncated.jsonl", "testdata/malformed.jsonl", "testdata/write-applied-outside-window.jsonl", "../../checker/testdata/lost-update.jsonl", "../../checker/testdata/stale-write-tokens.jsonl"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, false)
		f.Add(data, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, guarded bool) {
		file := filepath.Join(t.TempDir(), "history.jsonl")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if guarded {
			compareChecks(t, guardedRunDir(t, file), true)
			return
		}
		compareChecks(t, file, false)
	})
}
