package reports

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// SummarizeFile reads the history stored at path op by op (history.Scanner)
// into a Summary of it, with the full detail of the ops around every
// anomaly of r (its checkers' and its liveness report's) and around the
// ops of its safety margins. guarded is whether
// the run's register was kept in the locked system (history.DropReplyTimes's
// rule, applied op by op). An incomplete last line is left out, as
// history.ReadFile leaves it out; a line that is not an op is an error.
func SummarizeFile(path string, r *Results, guarded bool) (*Summary, error) {
	sc, closeFile, err := history.ScanFile(path)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	defer closeFile()
	s := newSummary(detailRanges(drawnResults(*r)))
	s.path, s.guarded = path, guarded
	rule := replyRule{guarded: guarded}
	var op history.Op // one for every line: the summary keeps none
	for sc.Scan() {
		op = sc.Op()
		rule.apply(&op)
		s.add(&op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	s.finish()
	return s, nil
}

// drawnResults are the results whose ops a report draws in full detail:
// the checkers' anomalies, the liveness report's, and the ops of the
// safety margins.
func drawnResults(r Results) []checker.Result {
	return append(reportCheckers(r), marginResult(r.Margins))
}

// replyRule is history.DropReplyTimes's rule applied op by op: a history
// of version 1 (no header op with a later version first) of a register
// kept in the locked system has its writes' applied times cleared.
type replyRule struct {
	guarded, seen, drop bool
}

// apply applies the rule to the history's next op.
func (r *replyRule) apply(op *history.Op) {
	if !r.seen {
		r.seen = true
		r.drop = r.guarded && history.Version(history.History{*op}) < 2
	}
	if r.drop && op.F == history.FWrite {
		op.Applied = 0
	}
}

// isLong reports whether the history at path is longer than
// LongHistoryOps ops, by the count of its results (r.Stats.Ops) or, when
// they count none, by counting its lines.
func isLong(path string, r *Results) (bool, error) {
	if r.Stats.Ops > 0 {
		return r.Stats.Ops > LongHistoryOps, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256*1024)
	buf := make([]byte, 256*1024)
	lines := 0
	for lines <= LongHistoryOps {
		n, err := br.Read(buf)
		lines += bytes.Count(buf[:n], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return false, err
		}
	}
	return lines > LongHistoryOps, nil
}

// taskView draws the task view of a queue run in summary: the queue
// checker's definitions need the whole history, which is read into memory
// for them (as the queue checker reads it); nil for a lock run.
func (s *Summary) taskView(tl timeline, anoms []anomalyJSON) (*taskView, error) {
	if !s.queue || s.path == "" {
		return nil, nil
	}
	h, _, err := history.ReadFile(s.path)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	history.DropReplyTimes(h, s.guarded)
	return buildTaskView(h, checker.Analyze(h).Queue, tl.End, tl.Nemesis, anoms), nil
}

// summaryJSON is the downsampled drawing of a long history embedded in
// report.html (timelineJSON.Summary): the key lanes, each cut into buckets
// W µs wide, and the time extents (µs) of the detail windows, whose ops
// the timeline's spans draw in full. ServeOps is the most ops the detail
// endpoint of `serve` returns for one window (report.js asks for a window
// only when its buckets count fewer).
type summaryJSON struct {
	Ops      int        `json:"ops"`
	W        int64      `json:"w"`
	Lanes    []laneJSON `json:"lanes"`
	Detail   [][2]int64 `json:"detail"`
	ServeOps int        `json:"serveOps"`
}

// laneJSON is one key lane: its key (the first of those that share the
// last lane, Keys of them), the bars of its holds and of its maybe-held
// spans, and its completions counted by bucket: CB the bucket as a delta
// from the previous counted one, C the counts of ok, fail, info and
// lease-lost.
type laneJSON struct {
	Key   string      `json:"key"`
	Keys  int         `json:"keys"`
	Holds barsJSON    `json:"holds"`
	Maybe barsJSON    `json:"maybe"`
	CB    []int       `json:"cb"`
	C     [4][]uint32 `json:"c"`
}

// barsJSON is the bars of a lane, column-wise: B the bucket as a delta
// from the previous bar's, S the earliest start as an offset from the
// bucket's start, D the length to the latest end (cut at the timeline's
// end), N how many holds the bar merges, O how many of them never ended,
// U the length of their union, I the first one's op (a delta from the
// previous bar's) and J the last one's op minus I (all times µs).
type barsJSON struct {
	B []int    `json:"b"`
	S []int64  `json:"s"`
	D []int64  `json:"d"`
	N []uint32 `json:"n"`
	O []uint32 `json:"o"`
	U []int64  `json:"u"`
	I []int    `json:"i"`
	J []int    `json:"j"`
}

// barsOf encodes bars cut into buckets of width w, up to end.
func barsOf(bars []bar, w, end time.Duration) barsJSON {
	out := barsJSON{B: []int{}, S: []int64{}, D: []int64{}, N: []uint32{}, O: []uint32{}, U: []int64{}, I: []int{}, J: []int{}}
	prevB, prevI := 0, 0
	for k, b := range bars {
		if b.n == 0 {
			continue
		}
		lo, hi := us(b.lo), us(min(b.hi, end))
		out.B = append(out.B, k-prevB)
		out.S = append(out.S, lo-us(time.Duration(k)*w))
		out.D = append(out.D, max(hi-lo, 0))
		out.N = append(out.N, b.n)
		out.O = append(out.O, b.open)
		out.U = append(out.U, us(b.union(end)))
		out.I = append(out.I, b.firstI-prevI)
		out.J = append(out.J, b.lastI-b.firstI)
		prevB, prevI = k, b.firstI
	}
	return out
}

// json encodes the summary for report.js.
func (s *Summary) json() *summaryJSON {
	out := &summaryJSON{Ops: s.ops, W: us(s.width), Lanes: []laneJSON{}, Detail: [][2]int64{}, ServeOps: maxServedOps}
	lanes := slices.Clone(s.lanes)
	n := len(lanes)
	if n == maxSummaryLanes {
		n-- // the lane the keys past the others share stays last
	}
	slices.SortStableFunc(lanes[:n], func(a, b *sumLane) int { return naturalCompare(a.key, b.key) })
	for _, l := range lanes {
		lj := laneJSON{Key: l.key, Keys: l.keys, Holds: barsOf(l.holds, s.width, s.end), Maybe: barsOf(l.maybe, s.width, s.end), CB: []int{}}
		for o := range lj.C {
			lj.C[o] = []uint32{}
		}
		prev := 0
		for k, c := range l.counts {
			if c == [4]uint32{} {
				continue
			}
			lj.CB = append(lj.CB, k-prev)
			prev = k
			for o := range c {
				lj.C[o] = append(lj.C[o], c[o])
			}
		}
		out.Lanes = append(out.Lanes, lj)
	}
	for _, e := range s.detail.extents {
		out.Detail = append(out.Detail, [2]int64{us(e[0]), us(e[1])})
	}
	return out
}
