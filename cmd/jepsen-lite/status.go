package main

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/progress"
	"github.com/jepsen-lite/jepsen-lite/runner"
)

// quietUsage is the help of --quiet, which run, check, gate and hunt take.
const quietUsage = "show no progress line (it is shown only when stderr is a terminal, and cleared when done)"

// progressHelp is the paragraph of the usage texts of run, check, gate and
// hunt about their progress line.
const progressHelp = `On a terminal, a progress line on stderr shows the phase, how far it has
come, the time elapsed and the time left; it is cleared when done, and
never printed when stderr is not a terminal (a pipe, a file) or with
--quiet.`

// newStatusLine returns a command's progress line on stderr: drawn only
// when stderr is a terminal and quiet is false (progress.New).
func newStatusLine(stderr io.Writer, quiet bool) *progress.Line {
	return progress.New(stderr, progress.Quiet(quiet))
}

// fileStatus is the status line of a check of a stored history: while it
// reads, the bytes read of the file's size (a bar) and the ops read with
// their rate; then the phase and the ops.
func fileStatus(p checker.FileProgress) progress.Status {
	s := progress.Status{Phase: p.Phase, Count: int64(p.Ops), CountUnit: "ops"}
	if p.Phase == checker.PhaseReading {
		s.Done, s.Total, s.Unit = p.Bytes, p.Total, progress.Bytes
	}
	return s
}

// runStatus is the status line of a run: its phase, and while it runs the
// time of its duration with its ops recorded, the faults in force and the
// workers' ops by type.
func runStatus(p runner.Progress) progress.Status {
	s := progress.Status{Phase: p.Phase}
	if p.Phase == runner.PhaseRunning {
		s.Done, s.Total, s.Unit = int64(p.Elapsed), int64(p.Total), progress.Time
		s.Count, s.CountUnit = p.Ops, "ops"
		counts := fmt.Sprintf("ok %s  fail %s  info %s", progress.Thousands(p.OK), progress.Thousands(p.Fail), progress.Thousands(p.Inf))
		s.Note = counts
		if len(p.Faults) > 0 {
			s.Note = "faults: " + strings.Join(p.Faults, "; ") + "  " + counts
		}
	}
	return s
}

// runNote says in a few words where a run of a batch is: "running
// 3.2s/7.0s".
func runNote(p runner.Progress) string {
	if p.Phase != runner.PhaseRunning {
		return p.Phase
	}
	return fmt.Sprintf("running %.1fs/%.1fs", p.Elapsed.Seconds(), p.Total.Seconds())
}

// gateFound says what the runs of a gate found so far: "2 invalid", with
// ", 1 unmet" when a run did not end as its scenario expected.
func gateFound(invalid, unmet int) string {
	if unmet == 0 {
		return fmt.Sprintf("%d invalid", invalid)
	}
	return fmt.Sprintf("%d invalid, %d unmet", invalid, unmet)
}

// batchStatus is the status line of a command that carries out many runs
// (gate, hunt): the runs done of the total (time left estimated from the
// runs finished), the findings so far, and the current run with its phase.
// Its methods may be called from the runs' goroutines.
type batchStatus struct {
	line  *progress.Line
	phase string

	mu          sync.Mutex
	done, total int
	// found says what the runs finished found so far ("1 invalid"),
	// drawn first.
	found string
	// current names the current run ("redlock-gc-pause seed 2"), at names
	// its phase.
	current, at string
}

// newBatchStatus returns the status line of a batch of total runs, phase
// naming the command.
func newBatchStatus(line *progress.Line, phase string, total int) *batchStatus {
	b := &batchStatus{line: line, phase: phase, total: total}
	b.show()
	return b
}

// start says that the run named current begins, after done of total runs;
// found says what the runs finished found.
func (b *batchStatus) start(current string, done, total int, found string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.current, b.at, b.done, b.total, b.found = current, "", done, total, found
	b.show()
}

// run says where the current run is.
func (b *batchStatus) run(p runner.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.at = runNote(p)
	b.show()
}

// show updates the line; b.mu is held or b not yet shared.
func (b *batchStatus) show() { b.line.Update(b.status()) }

// status is what the line shows; b.mu is held or b not yet shared.
func (b *batchStatus) status() progress.Status {
	var note []string
	if b.found != "" {
		note = append(note, b.found)
	}
	if b.current != "" {
		run := b.current
		if b.at != "" {
			run += ": " + b.at
		}
		note = append(note, run)
	}
	return progress.Status{Phase: b.phase, Done: int64(b.done), Total: int64(b.total), Unit: "runs", Note: strings.Join(note, " · ")}
}
