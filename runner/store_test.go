package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// TestFinishHistoryReadsTheFileBack checks that the history a run checks
// is the one its recorder streamed to history.jsonl, read back (the
// recorder keeps no op), that a run whose clock never started has none,
// and that a file that cannot be read back is an error, not a history.
func TestFinishHistoryReadsTheFileBack(t *testing.T) {
	st := newTestStore(t)
	rec := st.startClock()
	for p := 0; p < 3; p++ {
		rec.Record(history.Op{Process: p, Client: p, Type: history.Invoke, F: history.FAcquire, Key: "k"})
		rec.Record(history.Op{Process: p, Client: p, Type: history.Fail, F: history.FAcquire, Key: "k"})
	}
	rec.Record(history.EndOp())
	if rec.History() != nil {
		t.Fatal("the run's recorder kept ops in memory")
	}
	h, err := st.finishHistory()
	if err != nil || len(h) != rec.Len() || len(h) != 8 || !h[0].IsHeader() || history.Validate(h) != nil {
		t.Fatalf("read back %d ops (recorded %d), err %v: %+v", len(h), rec.Len(), err, h)
	}
	for i, op := range h[1:7] {
		if op.Process != i/2 || op.F != history.FAcquire {
			t.Fatalf("op %d read back as %+v", i+1, op)
		}
	}

	if h, err := newTestStore(t).finishHistory(); h != nil || err != nil {
		t.Fatalf("a clock that never started: %d ops, err %v; want none and no error", len(h), err)
	}

	gone := newTestStore(t)
	gone.startClock()
	if err := os.Remove(filepath.Join(gone.dir, reports.HistoryFile)); err != nil {
		t.Fatal(err)
	}
	if h, err := gone.finishHistory(); h != nil || err == nil || !strings.Contains(err.Error(), "reading the history back") {
		t.Fatalf("a history file gone before it was read back: %d ops, err %v; want an error", len(h), err)
	}
}
