package checker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
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
	// Margins are the history's safety margins (docs/history.md §4.8);
	// nil when it is not well-formed.
	Margins []Margin
	// Ops is the number of ops in the history (of a history that is not
	// well-formed, those before the first op that is not).
	Ops int
	// Version is the history's format version (history.Version).
	Version int
	// Info is what reading the file found besides the ops.
	Info history.ReadInfo
	// HostEvents are what the history's host records say (docs/history.md
	// §1, "The host records"), in its order; the anomalies whose windows
	// they overlap say so (Anomaly.Host).
	HostEvents []history.HostEvent
	// BudgetSpent reports that the reading stopped when the check's time
	// budget was spent: Ops, HostEvents and Info are of the part read.
	BudgetSpent bool
}

// CheckFile checks the history stored at path: what CheckWithLiveness says
// of it, reading it as a stream (docs/history.md §6). The file is decoded
// in chunks on every core; each op is checked for well-formedness and then
// fed, in order, to each check, each on its own goroutine, so the memory
// the reading holds is a few chunks, and each check holds what it keeps
// open. An error is returned only when the file cannot be read or a line is
// not an op (a *history.LineError naming the line), or when ctx ends
// before the check does (ErrInterrupted: the reading stops within a chunk
// and the linearizability search within a step); a history that is not
// well-formed gives the well-formed checker's unknown verdict, as Check
// does. An anomaly whose window a host record overlaps says so
// (Anomaly.Host, NoteHost): the file is read again for its ops' times
// when the history has both. The time budget (Options.Timeout) is not an
// interruption: past it each check not yet decided is unknown, and the
// reading goes on.
func CheckFile(ctx context.Context, path string, opts FileOptions) (FileResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return FileResult{}, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	var total int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		total = st.Size()
	}
	res, err := checkReader(ctx, f, path, total, opts)
	if err == nil {
		err = noteHostFile(ctx, path, &res)
	}
	if err != nil {
		return FileResult{}, err
	}
	return res, nil
}

// checkReader is CheckFile over r, of total bytes (0: not known).
func checkReader(ctx context.Context, r io.Reader, name string, total int64, opts FileOptions) (FileResult, error) {
	start := time.Now()
	// The checks and the reading stop at the budget or an interruption: past
	// the budget every check is out of it, and the liveness report and the
	// margins, which read on, would judge a part of the history as the
	// whole (budgetSpent says what was read).
	checkCtx, cancel := withBudget(ctx, opts.Timeout)
	defer cancel()
	report := func(phase string, ops int, bytes int64) {
		if opts.Progress != nil {
			opts.Progress(FileProgress{Phase: phase, Ops: ops, Bytes: bytes, Total: total, Elapsed: time.Since(start)})
		}
	}
	report(PhaseReading, 0, 0)
	checkers := Checkers(opts.Options)
	streams := newStreams(checkCtx, checkers, opts.Options, &opts.Liveness, start)
	var (
		res     FileResult
		v       history.Validator
		bad     *history.OpError
		badKey  string
		lastRep time.Time
	)
	info, err := history.ReadChunksFrom(ctx, r, name, func(c *history.Chunk) error {
		if checkCtx.Err() != nil && ctx.Err() == nil {
			c.Release()
			return errBudgetSpent
		}
		var ops []history.Op
		ops, bad, badKey = res.take(c.Ops, &v, opts.Rewrite)
		if bad == nil || len(ops) > 0 {
			c.Ops = ops
			streams.feed(c)
		} else {
			c.Release()
		}
		if now := time.Now(); now.Sub(lastRep) >= 100*time.Millisecond {
			lastRep = now
			report(PhaseReading, res.Ops, c.Bytes)
		}
		if bad != nil {
			return errStopReading
		}
		return nil
	})
	if err != nil && err != errStopReading && err != errBudgetSpent {
		streams.abandon()
		if ctx.Err() != nil {
			return FileResult{}, interrupted(ctx)
		}
		return FileResult{}, err
	}
	res.Info = info
	if res.Version == 0 {
		res.Version = history.Version(nil)
	}
	report(PhaseDeciding, res.Ops, total)
	res.Results, res.Liveness, res.Margins = streams.results(start)
	if ctx.Err() != nil {
		return FileResult{}, interrupted(ctx)
	}
	if err == errBudgetSpent {
		res.BudgetSpent = true
		budgetSpent(&res, stopNote(checkCtx))
	}
	if bad != nil {
		res.Results, res.Liveness, res.Margins = malformed(checkers, start, bad, badKey), nil, nil
	}
	report(PhaseDone, res.Ops, total)
	return res, nil
}

// take counts the ops of a chunk, as rewrite (nil: none) leaves them, that
// v finds well-formed, with the history's version and host events, and
// returns them: all of ops, or those before the first that is not, which
// it returns (as an *history.OpError) with its key.
func (res *FileResult) take(ops []history.Op, v *history.Validator, rewrite func(*history.Op)) ([]history.Op, *history.OpError, string) {
	for i := range ops {
		if rewrite != nil {
			rewrite(&ops[i])
		}
		if err := v.Add(&ops[i]); err != nil {
			var bad *history.OpError
			if !errors.As(err, &bad) {
				bad = &history.OpError{Index: res.Ops, Line: res.Ops + 1, Err: err}
			}
			return ops[:i], bad, ops[i].Key
		}
		if res.Ops == 0 {
			res.Version = history.Version(ops[:1])
		}
		res.Ops++
		res.HostEvents = addHostEvent(res.HostEvents, &ops[i])
	}
	return ops, nil, ""
}

// errStopReading stops the reading of a history found not well-formed.
var errStopReading = errors.New("checker: stop reading")

// errBudgetSpent stops the reading of a history whose check's time budget
// is spent.
var errBudgetSpent = errors.New("checker: the check's time budget is spent")

// budgetSpent makes res, of a history whose reading stopped when the
// check's budget was spent (note: "timed out after 5m0s"), say so where it
// would otherwise judge the part read as the whole: a check that found the
// part valid (the well-formedness check among them) is unknown, the
// liveness report too, and no margin is given. An anomaly found in the
// part stands.
func budgetSpent(res *FileResult, note string) {
	read := fmt.Sprintf("%s, with the first %d ops of the history read", note, res.Ops)
	for i := range res.Results {
		if r := &res.Results[i]; r.Verdict == Valid {
			r.Verdict, r.Note = Unknown, read
		}
	}
	if res.Liveness != nil {
		*res.Liveness = LivenessResult{Verdict: Unknown, Grants: res.Liveness.Grants, Captures: res.Liveness.Captures, Note: "not judged: " + read}
	}
	res.Margins = nil
}

// malformed is the results of a history that stops being well-formed at
// bad, an op of key key: the well-formed checker's unknown verdict, and
// every other checker's "not run", as Check gives.
func malformed(checkers []Checker, start time.Time, bad *history.OpError, key string) []Result {
	results := make([]Result, len(checkers))
	results[0] = malformedResult(bad, key, time.Since(start))
	notRun(checkers, results)
	return results
}

// opSink is one check fed a well-formed history chunk by chunk, in order,
// with the Follower's events over each chunk's ops, on its own goroutine:
// add never keeps an op itself (it copies what it keeps), and end, called
// once after the last chunk, records the check's result.
type opSink struct {
	add func(m fedChunk)
	end func()
	in  chan fedChunk
}

// fedChunk is one chunk of a history with the Follower's events over its
// ops, or (c nil) the end of the history with the Follower's events of
// the end.
type fedChunk struct {
	c     *history.Chunk
	holds []HoldEvent
	batch *holdBatch // holds' storage, given back once every sink read it
}

// holdBatch is the storage of one chunk's events, shared by the sinks and
// reused once the last of them has read it (free), so that following a
// long history makes no garbage of events.
type holdBatch struct {
	evs  []HoldEvent
	refs atomic.Int32
	free chan *holdBatch
}

// holdBatchesFree is how many holdBatches a check keeps for reuse: more
// than the chunks in flight.
const holdBatchesFree = 16

// done gives up one sink's use of b.
func (b *holdBatch) done() {
	if b != nil && b.refs.Add(-1) == 0 {
		b.evs = b.evs[:0]
		select {
		case b.free <- b:
		default:
		}
	}
}

// streams are the checks of one history, fed chunk by chunk. The Follower
// follows the holds once, as the chunks come, for every check.
type streams struct {
	ctx context.Context
	fol *Follower
	// follow hands the chunks read to the Follower's goroutine (follow),
	// which hands them on to the sinks; followed is closed once it has
	// handed on the end of the history.
	follow   chan *history.Chunk
	followed chan struct{}
	batches  chan *holdBatch // free for reuse
	sinks    []*opSink
	wg       sync.WaitGroup
	// results are the checkers' results in the order of Checkers, set by
	// the sinks' ends; live is the liveness report.
	results_ []Result
	live     LivenessResult
	margins  []Margin
}

// newStreams starts one goroutine per check of checkers (whose first is
// the well-formed checker, which the reading itself is) and, when lopts is
// set, the liveness report and the margins; each check's Elapsed counts
// from start, when the reading began.
func newStreams(ctx context.Context, checkers []Checker, opts Options, lopts *LivenessOptions, start time.Time) *streams {
	s := &streams{ctx: ctx, fol: NewFollower(), follow: make(chan *history.Chunk), followed: make(chan struct{}),
		batches:  make(chan *holdBatch, holdBatchesFree),
		results_: make([]Result, len(checkers))}
	s.results_[0] = Result{Name: checkers[0].Name(), Verdict: Valid, Anomalies: []Anomaly{}}
	for i, c := range checkers[1:] {
		slot := &s.results_[i+1]
		done := func(r Result) { *slot = r; slot.Elapsed = time.Since(start) }
		switch c := c.(type) {
		case DoubleHoldChecker:
			hs := newHoldStream()
			s.addHolds(nil, hs.hold, func() { done(hs.result(ctx, c.Name())) })
		case *LinearizabilityChecker:
			ls := c.newStream(ctx)
			s.addHoldsFirst(ls.add, ls.hold, func() { done(ls.result()) })
		case TokenChecker:
			ts := newTokenStream()
			s.addHolds(ts.add, ts.hold, func() { done(ts.result(ctx, c.Name())) })
		case ResourceChecker:
			rs := newResourceStream(c.Drift)
			s.addHoldsFirst(rs.add, rs.hold, func() { done(rs.result(ctx, c.Name())) })
		case QueueChecker:
			qs := newQueueStream()
			s.addHolds(qs.add, qs.holdEvent, func() { done(qs.result(ctx, c.Name())) })
		default:
			panic(fmt.Sprintf("checker: %s does not read a history as a stream", c.Name()))
		}
	}
	if lopts != nil {
		lv := newLiveStream(*lopts)
		s.addHoldsFirst(lv.add, lv.hold, func() { s.live = lv.result() })
		ms := newMarginStream(opts.drift())
		s.addHolds(ms.add, ms.hold, func() { s.margins = ms.result() })
	}
	go s.following()
	return s
}

// add starts a sink that reads op by op.
func (s *streams) add(add func(*history.Op), end func()) {
	s.addChunks(func(m fedChunk) {
		if m.c == nil {
			return
		}
		for i := range m.c.Ops {
			add(&m.c.Ops[i])
		}
	}, end)
}

// addHolds starts a sink that reads op by op (add, when set) and the
// Follower's events (hold): each op, then the events its feeding made.
func (s *streams) addHolds(add func(*history.Op), hold func(*HoldEvent), end func()) {
	s.addChunks(func(m fedChunk) {
		var ops []history.Op
		if m.c != nil {
			ops = m.c.Ops
		}
		rest := feedFollowed(ops, m.holds, add, hold)
		for i := range rest {
			hold(&rest[i])
		}
	}, end)
}

// addHoldsFirst starts a sink that reads the Follower's events of each op
// (hold) before the op (add).
func (s *streams) addHoldsFirst(add func(*history.Op), hold func(*HoldEvent), end func()) {
	s.addChunks(func(m fedChunk) {
		var ops []history.Op
		if m.c != nil {
			ops = m.c.Ops
		}
		feedHoldsFirst(ops, m.holds, add, hold)
	}, end)
}

// addChunks starts a sink that reads chunk by chunk.
func (s *streams) addChunks(add func(fedChunk), end func()) {
	k := &opSink{add: add, end: end, in: make(chan fedChunk, 2)}
	s.sinks = append(s.sinks, k)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for m := range k.in {
			k.add(m)
			m.batch.done()
			if m.c != nil {
				m.c.Release()
			}
		}
		k.end()
	}()
}

// feed hands chunk c, held by the caller, to the Follower's goroutine.
func (s *streams) feed(c *history.Chunk) { s.follow <- c }

// following is the Follower's goroutine: it follows each chunk read and
// hands it with the Follower's events over it to every sink, and at the
// end of the history the events of the end.
func (s *streams) following() {
	defer close(s.followed)
	for c := range s.follow {
		var b *holdBatch
		select {
		case b = <-s.batches:
		default:
			b = &holdBatch{free: s.batches}
		}
		for i := range c.Ops {
			b.evs = s.fol.Add(&c.Ops[i], b.evs)
		}
		b.refs.Store(int32(len(s.sinks)))
		c.Hold(len(s.sinks) - 1)
		for _, k := range s.sinks {
			k.in <- fedChunk{c: c, holds: b.evs, batch: b}
		}
	}
	end := fedChunk{holds: s.fol.End(nil)}
	for _, k := range s.sinks {
		k.in <- end
		close(k.in)
	}
}

// results ends the history and waits for every check's result, the
// liveness report and the margins.
func (s *streams) results(start time.Time) ([]Result, *LivenessResult, []Margin) {
	close(s.follow)
	<-s.followed
	s.wg.Wait()
	s.results_[0].Elapsed = time.Since(start)
	return s.results_, &s.live, s.margins
}

// abandon ends the sinks without using their results.
func (s *streams) abandon() { s.results(time.Now()) }
