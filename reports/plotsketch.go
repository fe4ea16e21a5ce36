package reports

import (
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// A long history's latency plots read its latencies from log histograms:
// latPerDecade bins per decade over latDecades decades from 1µs, so a
// quantile drawn is within 4% of the latency it stands for. Their dots are
// placed by latCols columns of time (or more, up to twice as many, while
// the run is young).
const (
	latPerDecade = 32
	latDecades   = 10
	latBins      = latPerDecade * latDecades
	latCols      = 1024
	latWords     = (latBins*4 + 63) / 64
)

// plotSketch is what the throughput and latency plots of a long history
// need, counted op by op: the completions by outcome in the throughput
// plot's buckets (exact: bucketWidth's buckets, whose width doubles as
// the run grows), and for each f, its latencies' range, a histogram of
// them per bucket (for the p50 and p99 lines) and the occupied cells of
// (time column, latency bin, outcome) (for the dots). Its memory is
// bounded by its buckets and bins, not by the history's length.
type plotSketch struct {
	last time.Duration
	tw   time.Duration // the throughput plot's bucket width
	tput [3][]int
	cw   time.Duration // the width of a column of dots
	fs   []string
	lat  map[string]*latSketch
}

// latSketch is what the latency plot of one f needs.
type latSketch struct {
	n      int
	lo, hi time.Duration
	cols   [][]uint64 // by column: the bits bin*4+outcome occupied; nil when none
	hist   [][]uint32 // by throughput bucket: the count of each bin; nil when none
}

func newPlotSketch() *plotSketch {
	return &plotSketch{tw: time.Second, cw: time.Millisecond, lat: map[string]*latSketch{}}
}

// latBin is the bin of a latency of at least 1µs.
func latBin(lat time.Duration) int {
	b := int(math.Log10(float64(lat)/float64(time.Microsecond)) * latPerDecade)
	return min(max(b, 0), latBins-1)
}

// latOfBin is the latency a bin stands for: its middle, on the log scale.
func latOfBin(b int) time.Duration {
	return time.Duration(float64(time.Microsecond) * math.Pow(10, (float64(b)+0.5)/latPerDecade))
}

// add counts op, whose outstanding invoke was inv (nil when none).
func (ps *plotSketch) add(op *history.Op, inv *history.Op) {
	ps.last = max(ps.last, op.Time)
	for ps.last/ps.tw > maxBuckets {
		ps.doubleBuckets()
	}
	for ps.last/ps.cw >= latCols {
		ps.doubleColumns()
	}
	if op.IsNemesis() || op.Type == history.Invoke || op.F == history.FLeaseLost {
		return
	}
	*grow(&ps.tput[outcomeOf(op.Type)], int(op.Time/ps.tw))++
	if inv == nil || inv.F != op.F {
		return
	}
	ls := ps.lat[op.F]
	if ls == nil {
		ls = &latSketch{}
		ps.lat[op.F] = ls
		ps.fs = append(ps.fs, op.F)
	}
	lat := max(op.Time-inv.Time, time.Microsecond)
	if ls.n == 0 {
		ls.lo, ls.hi = lat, lat
	}
	ls.n++
	ls.lo, ls.hi = min(ls.lo, lat), max(ls.hi, lat)
	bin := latBin(lat)
	col := grow(&ls.cols, int(inv.Time/ps.cw))
	if *col == nil {
		*col = make([]uint64, latWords)
	}
	k := bin*4 + int(outcomeOf(op.Type))
	(*col)[k/64] |= 1 << (k % 64)
	hist := grow(&ls.hist, int(inv.Time/ps.tw))
	if *hist == nil {
		*hist = make([]uint32, latBins)
	}
	(*hist)[bin]++
}

// doubleBuckets doubles the throughput plot's bucket width.
func (ps *plotSketch) doubleBuckets() {
	ps.tw *= 2
	for o := range ps.tput {
		ps.tput[o] = mergePairs(ps.tput[o], func(a *int, b int) { *a += b })
	}
	for _, ls := range ps.lat {
		ls.hist = mergePairs(ls.hist, func(a *[]uint32, b []uint32) {
			switch {
			case *a == nil:
				*a = b
			case b != nil:
				for i := range b {
					(*a)[i] += b[i]
				}
			}
		})
	}
}

// doubleColumns doubles the width of the columns of dots.
func (ps *plotSketch) doubleColumns() {
	ps.cw *= 2
	for _, ls := range ps.lat {
		ls.cols = mergePairs(ls.cols, func(a *[]uint64, b []uint64) {
			switch {
			case *a == nil:
				*a = b
			case b != nil:
				for i := range b {
					(*a)[i] |= b[i]
				}
			}
		})
	}
}

// plots draws the throughput plot and one latency plot per f, as
// buildPlots does from the whole history, over the run up to end.
func (ps *plotSketch) plots(end time.Duration, nem []nemesisInterval) (*plot, []plot) {
	if end <= 0 {
		return nil, nil
	}
	nb := int(end/ps.tw) + 1
	var counts [3][]int
	for o := range counts {
		counts[o] = make([]int, nb)
		copy(counts[o], ps.tput[o])
	}
	tp := throughputPlotOf(counts, ps.tw, end, nem)
	var lat []plot
	for _, f := range orderFs(ps.fs) {
		lat = append(lat, ps.latencyPlot(f, end, nem))
	}
	return &tp, lat
}

// latencyPlot draws the latency plot of f from its sketch.
func (ps *plotSketch) latencyPlot(f string, end time.Duration, nem []nemesisInterval) plot {
	ls := ps.lat[f]
	p := latencyFrame(f, ls.lo, ls.hi, end, nem)
	clip := func(l time.Duration) time.Duration { return min(max(l, ls.lo), ls.hi) }
	cells := newCellSet(p)
	for c, col := range ls.cols {
		at := min(time.Duration(c)*ps.cw+ps.cw/2, end)
		for w, word := range col {
			for word != 0 {
				k := w*64 + bits.TrailingZeros64(word)
				word &= word - 1
				cells.add(at, clip(latOfBin(k/4)), outcome(k%4))
			}
		}
	}
	cells.draw()
	nb := int(end/ps.tw) + 1
	p.quantileLines(ps.tw, nb, func(b int, q float64) (time.Duration, bool) {
		if b >= len(ls.hist) || ls.hist[b] == nil {
			return 0, false
		}
		return clip(quantileOf(ls.hist[b], q)), true
	})
	return plot{Title: fmt.Sprintf("%s latency (%d ops; lines: p50, p99 per %v, from a histogram: within 4%%)", f, ls.n, ps.tw), SVG: p.end_()}
}

// quantileOf returns the latency of the q quantile of a histogram: the
// latency of the bin that holds the op of rank q·n.
func quantileOf(hist []uint32, q float64) time.Duration {
	n := 0
	for _, c := range hist {
		n += int(c)
	}
	rank := min(int(q*float64(n)), n-1)
	for b, c := range hist {
		if rank < int(c) {
			return latOfBin(b)
		}
		rank -= int(c)
	}
	return latOfBin(latBins - 1)
}

// mergedNemesis returns the faults of nem for the plots of a long run:
// those of one class that start less than res after the previous one of
// the class ends are merged into one, which says how many it holds, so
// that a plot draws about one shape per unit of its width however many
// faults the run had.
func mergedNemesis(nem []nemesisInterval, res time.Duration) []nemesisInterval {
	var out []nemesisInterval
	counts := []int{}
	latest := map[string]int{} // class -> its latest in out
	for _, iv := range nem {
		if k, ok := latest[iv.Class]; ok && out[k].Point == iv.Point && iv.Start <= out[k].End+res {
			out[k].End = max(out[k].End, iv.End)
			counts[k]++
			continue
		}
		out = append(out, iv)
		counts = append(counts, 1)
		latest[iv.Class] = len(out) - 1
	}
	for k, n := range counts {
		if n > 1 {
			out[k].Fault, out[k].Value = fmt.Sprintf("%d × %s", n, out[k].Fault), "(merged at this scale)"
		}
	}
	return out
}
