package runner

import (
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// runStore is the run's store directory and what the run writes into it
// while it runs: run.log, the stored scenario and schedule, and the
// history, recorded from the moment the clock starts.
type runStore struct {
	dir     string
	log     *log.Logger
	logFile *os.File
	// scenario is the text of the stored scenario.yaml.
	scenario []byte
	history  *history.Writer
	counts   *countingSink
	answers  answerSink
	// rec is nil until the run's clock starts (startClock).
	rec *history.Recorder
}

// openStore makes the run's directory and writes what is known before
// anything starts: the run's log, its scenario and its fault schedule, and
// an empty history. The store is nil when there is no directory; otherwise
// the caller closes it, whatever the error.
func openStore(p *plan, began time.Time) (*runStore, error) {
	s := &p.s
	dir, err := reports.NewRunDir(p.cfg.store, s.Name, began)
	if err != nil {
		return nil, err
	}
	st := &runStore{dir: dir, counts: &countingSink{}, log: log.New(io.Discard, "", 0)}
	if st.logFile, err = os.Create(filepath.Join(dir, reports.RunLogFile)); err != nil {
		return st, fmt.Errorf("runner: %w", err)
	}
	var logw io.Writer = st.logFile
	if p.cfg.logOut != nil {
		logw = io.MultiWriter(st.logFile, p.cfg.logOut)
	}
	st.log = log.New(logw, "", log.Ltime|log.Lmicroseconds)
	st.log.Printf("scenario %s, seed %d, %d workers, %v + %v quiet, store %s", s.Name, s.Seed, s.Workers, s.Duration, s.Quiet, dir)
	if s.Lock.Own {
		st.log.Printf("lock %s: a Go Locker of the caller's own", s.Lock.Algorithm)
	}
	if err := writeSchedule(dir, s.Nemesis.Steps); err != nil {
		return st, err
	}
	if st.scenario, err = scenarios.Marshal(s); err != nil {
		return st, err
	}
	if err := os.WriteFile(filepath.Join(dir, reports.ScenarioFile), st.scenario, 0o644); err != nil {
		return st, fmt.Errorf("runner: %w", err)
	}
	if st.history, err = history.CreateFile(filepath.Join(dir, reports.HistoryFile)); err != nil {
		return st, fmt.Errorf("runner: %w", err)
	}
	return st, nil
}

// startClock starts the run's clock: the recorder, with the history's
// header. It is called when the cluster and every client are ready, so
// that setup time does not eat into the scenario's duration and "at: 1s"
// means one second of workload.
func (st *runStore) startClock() *history.Recorder {
	st.rec = history.NewRecorder(st.history, st.counts, &st.answers)
	st.rec.Record(history.Header())
	return st.rec
}

// finishHistory closes the history file: the recorder keeps no op, so the
// file is the run's only record, which the check stage reads back as a
// stream. An error says the history could not be written.
func (st *runStore) finishHistory() error {
	err := st.history.Close()
	st.history = nil
	if err != nil {
		return fmt.Errorf("runner: writing history: %w", err)
	}
	return nil
}

// historyPath is the run's history.jsonl.
func (st *runStore) historyPath() string { return filepath.Join(st.dir, reports.HistoryFile) }

// close closes what the store still has open.
func (st *runStore) close() {
	if st.history != nil {
		_ = st.history.Close()
	}
	if st.logFile != nil {
		_ = st.logFile.Close()
	}
}

// failedSetup writes the results of a run whose setup failed: the run
// directory says why there is nothing to judge, so that `check` and `gate
// --from-store` never take it for a valid run.
func (st *runStore) failedSetup(p *plan, err error) {
	st.log.Printf("setup failed: %v", err)
	s := &p.s
	expect := s.Expect
	failed := &reports.Results{Scenario: s.Name, Lock: s.Lock.Algorithm, OwnLock: s.Lock.Own, Seed: s.Seed, HistoryVersion: history.FormatVersion, Verdict: checker.Unknown, Expected: &expect, SetupError: err.Error()}
	if err := reports.WriteResults(st.dir, failed); err != nil {
		st.log.Printf("writing results: %v", err)
	}
}

// writeSchedule writes the schedule as nemesis.jsonl, one step per line.
func writeSchedule(dir string, steps nemesis.Schedule) error {
	f, err := os.Create(filepath.Join(dir, reports.NemesisFile))
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	if err := nemesis.WriteSchedule(f, steps); err != nil {
		f.Close()
		return fmt.Errorf("runner: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	return nil
}
