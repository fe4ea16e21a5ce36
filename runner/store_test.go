package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/reports"
)

// newTestStore returns a run store in a fresh directory with its history
// file open, as openStore leaves it.
func newTestStore(t *testing.T) *runStore {
	t.Helper()
	dir := t.TempDir()
	w, err := history.CreateFile(filepath.Join(dir, reports.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	st := &runStore{dir: dir, history: w, counts: &countingSink{}}
	t.Cleanup(st.close)
	return st
}

// TestCheckRecordedReadsTheFileBack checks that the history a run checks
// is the one its recorder streamed to history.jsonl, read back (the
// recorder keeps no op), counted as recorded, and that a file that cannot
// be read back, or holds other than what was recorded, gives an unknown
// verdict saying so, never a verdict about the lock.
func TestCheckRecordedReadsTheFileBack(t *testing.T) {
	record := func(st *runStore) recorded {
		rec := st.startClock()
		for p := 0; p < 3; p++ {
			rec.Record(history.Op{Process: p, Client: p, Type: history.Invoke, F: history.FAcquire, Key: "k"})
			rec.Record(history.Op{Process: p, Client: p, Type: history.Fail, F: history.FAcquire, Key: "k"})
		}
		rec.Record(history.EndOp())
		if rec.History() != nil {
			t.Fatal("the run's recorder kept ops in memory")
		}
		return recorded{ops: rec.Len(), stats: st.counts.stats()}
	}
	for _, tc := range []struct {
		name    string
		spoil   func(st *runStore, rd *recorded)
		verdict checker.Verdict
		note    string
	}{
		{"read back", func(*runStore, *recorded) {}, checker.Valid, ""},
		{"file gone", func(st *runStore, _ *recorded) { os.Remove(st.historyPath()) }, checker.Unknown, "could not be read back"},
		{"ops missing", func(_ *runStore, rd *recorded) { rd.ops++ }, checker.Unknown, "8 ops in the file, 9 recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newTestStore(t)
			rd := record(st)
			if err := st.finishHistory(); err != nil {
				t.Fatal(err)
			}
			if rd.ops != 8 || rd.stats != (reports.Stats{Ops: 7, Fail: 3}) {
				t.Fatalf("recorded %d ops, stats %+v", rd.ops, rd.stats)
			}
			tc.spoil(st, &rd)
			results := &reports.Results{Expected: &checker.Expectation{Verdict: checker.Valid}}
			checkRecorded(context.Background(), results, st, rd, checker.Options{})
			if results.Verdict != tc.verdict || !strings.Contains(fmt.Sprint(results.Checkers), tc.note) {
				t.Fatalf("verdict %s, checkers %+v; want %s and %q", results.Verdict, results.Checkers, tc.verdict, tc.note)
			}
			if tc.verdict == checker.Valid && (len(results.Checkers) != len(checker.Checkers(checker.Options{})) || results.Liveness == nil || !results.ExpectationMet) {
				t.Fatalf("checkers %+v, liveness %v, met %v", results.Checkers, results.Liveness, results.ExpectationMet)
			}
		})
	}
}
