package checker

import (
	"context"
	"os"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// The phases of a check of a stored history (FileProgress.Phase).
const (
	// PhaseReading is reading the history and checking the ops as they come.
	PhaseReading = "reading"
	// PhaseDeciding is deciding what the last op left open (pieces still
	// waiting for the linearizability search, the end-of-history rules).
	PhaseDeciding = "deciding"
	// PhaseDone is the end of the check.
	PhaseDone = "done"
)

// FileProgress is how far a check of a stored history has come.
type FileProgress struct {
	Phase string
	// Ops is the number of ops read so far.
	Ops int
	// Bytes is how much of the file has been read, of Total (its size; 0
	// when not known, for a pipe).
	Bytes, Total int64
	// Elapsed is the time since the check started.
	Elapsed time.Duration
}

// FileOptions configure CheckFile.
type FileOptions struct {
	Options
	Liveness LivenessOptions
	// Progress, when set, is called with how far the check has come: every
	// so often while it reads, at each change of phase, and once at the end
	// (PhaseDone). It is called from one goroutine at a time and must
	// return quickly.
	Progress func(FileProgress)
	// Rewrite, when set, is applied to every op as it is read, before any
	// check sees it (history.DropReplyTimes's rule, op by op).
	Rewrite func(*history.Op)
}

// FileResult is what CheckFile found.
type FileResult struct {
	// Results are the checkers' results, in the order of Checkers.
	Results []Result
	// Liveness is the liveness report; nil when the history is not
	// well-formed.
	Liveness *LivenessResult
	// Ops is the number of ops in the history; Workers the number of them
	// that are worker ops (not the nemesis's).
	Ops, Workers int
	// Info is what reading the file found besides the ops.
	Info history.ReadInfo
}

// CheckFile checks the history stored at path: what CheckWithLiveness says
// of it. An error is returned only when the file cannot be read or a line
// is not an op (a *history.LineError naming the line); a history that is
// not well-formed gives the well-formed checker's unknown verdict, as
// Check does.
func CheckFile(ctx context.Context, path string, opts FileOptions) (FileResult, error) {
	start := time.Now()
	report := func(phase string, ops int, bytes, total int64) {
		if opts.Progress != nil {
			opts.Progress(FileProgress{Phase: phase, Ops: ops, Bytes: bytes, Total: total, Elapsed: time.Since(start)})
		}
	}
	var total int64
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		total = st.Size()
	}
	report(PhaseReading, 0, 0, total)
	h, info, err := history.ReadFile(path)
	if err != nil {
		return FileResult{}, err
	}
	workers := 0
	for i := range h {
		if opts.Rewrite != nil {
			opts.Rewrite(&h[i])
		}
		if !h[i].IsNemesis() {
			workers++
		}
	}
	report(PhaseDeciding, len(h), total, total)
	results, live := CheckWithLiveness(ctx, h, opts.Options, opts.Liveness)
	report(PhaseDone, len(h), total, total)
	return FileResult{Results: results, Liveness: live, Ops: len(h), Workers: workers, Info: info}, nil
}
