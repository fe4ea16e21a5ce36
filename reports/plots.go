package reports

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// Plot geometry, in SVG user units. The SVG scales to the page width.
const (
	plotLeft    = 64.0
	plotRight   = 12.0
	plotTop     = 10.0
	plotBottom  = 28.0
	maxBuckets  = 400
	latencyRows = 120 // vertical resolution of the point de-duplication
)

// plot is one rendered SVG plot with its title.
type plot struct {
	Title string
	SVG   template.HTML
}

// latencySample is one completed client op.
type latencySample struct {
	at  time.Duration // the invoke's time
	lat time.Duration
	out outcome
}

// bucketWidth picks the time bucket of the per-bucket lines: a second, or
// more on long runs so that there are at most maxBuckets.
func bucketWidth(end time.Duration) time.Duration {
	w := time.Second
	for end/w > maxBuckets {
		w *= 2
	}
	return w
}

type plotFrame struct {
	w, h     float64 // the SVG's size in user units
	end      time.Duration
	nemesis  []nemesisInterval
	b        strings.Builder
	yLo, yHi float64
	logY     bool
}

func (p *plotFrame) x(t time.Duration) float64 {
	if p.end <= 0 {
		return plotLeft
	}
	return plotLeft + (p.w-plotLeft-plotRight)*float64(t)/float64(p.end)
}

func (p *plotFrame) y(v float64) float64 {
	lo, hi := p.yLo, p.yHi
	if p.logY {
		v, lo, hi = math.Log10(max(v, p.yLo)), math.Log10(lo), math.Log10(hi)
	}
	if hi <= lo {
		hi = lo + 1
	}
	f := (v - lo) / (hi - lo)
	return p.h - plotBottom - f*(p.h-plotTop-plotBottom)
}

// begin writes the SVG header, the nemesis shading and the time axis.
func (p *plotFrame) begin(label string) {
	fmt.Fprintf(&p.b, `<svg class="plot" viewBox="0 0 %g %g" preserveAspectRatio="xMidYMid meet" role="img" aria-label="%s">`,
		p.w, p.h, template.HTMLEscapeString(label))
	for _, iv := range p.nemesis {
		x0, x1 := p.x(min(iv.Start, p.end)), p.x(min(iv.End, p.end))
		if iv.Point {
			fmt.Fprintf(&p.b, `<line class="nem-line nem-%s" x1="%.1f" x2="%.1f" y1="%g" y2="%g"/>`, iv.Class, x0, x0, plotTop, p.h-plotBottom)
			continue
		}
		fmt.Fprintf(&p.b, `<rect class="nemesis nem-%s" x="%.1f" y="%g" width="%.1f" height="%g"><title>%s</title></rect>`,
			iv.Class, x0, plotTop, max(x1-x0, 1), p.h-plotTop-plotBottom, template.HTMLEscapeString(iv.Fault+" "+iv.Value))
	}
	fmt.Fprintf(&p.b, `<rect class="frame" x="%g" y="%g" width="%g" height="%g"/>`,
		plotLeft, plotTop, p.w-plotLeft-plotRight, p.h-plotTop-plotBottom)
	for _, t := range timeTicks(p.end, 10) {
		x := p.x(t)
		fmt.Fprintf(&p.b, `<line class="grid" x1="%.1f" x2="%.1f" y1="%g" y2="%g"/><text class="tick" x="%.1f" y="%g" text-anchor="middle">%s</text>`,
			x, x, plotTop, p.h-plotBottom, x, p.h-plotBottom+14, fmtSeconds(t))
	}
	fmt.Fprintf(&p.b, `<text class="axis-label" x="%g" y="%g" text-anchor="end">s</text>`, p.w-plotRight, p.h-4)
}

func (p *plotFrame) yTick(v float64, label string) {
	y := p.y(v)
	fmt.Fprintf(&p.b, `<line class="grid" x1="%g" x2="%g" y1="%.1f" y2="%.1f"/><text class="tick" x="%g" y="%.1f" text-anchor="end">%s</text>`,
		plotLeft, p.w-plotRight, y, y, plotLeft-4, y+3, label)
}

func (p *plotFrame) end_() template.HTML {
	p.b.WriteString(`</svg>`)
	return template.HTML(p.b.String())
}

// timeTicks returns round tick times across [0, end], about n of them.
func timeTicks(end time.Duration, n int) []time.Duration {
	if end <= 0 {
		return []time.Duration{0}
	}
	steps := []time.Duration{}
	for _, base := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second, 10 * time.Second, 100 * time.Second, 1000 * time.Second} {
		steps = append(steps, base, 2*base, 5*base)
	}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if end/s <= time.Duration(n) {
			step = s
			break
		}
	}
	var out []time.Duration
	for t := time.Duration(0); t <= end; t += step {
		out = append(out, t)
	}
	return out
}

func fmtSeconds(t time.Duration) string {
	s := t.Seconds()
	switch {
	case t%time.Second == 0:
		return fmt.Sprintf("%.0f", s)
	case t%(100*time.Millisecond) == 0:
		return fmt.Sprintf("%.1f", s)
	case t%(10*time.Millisecond) == 0:
		return fmt.Sprintf("%.2f", s)
	}
	return fmt.Sprintf("%.3f", s)
}

func fmtLatency(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%gms", float64(d)/1e6)
	}
	return fmt.Sprintf("%gµs", float64(d)/1e3)
}

// latencySamples pairs every client invoke with its completion, by f.
func latencySamples(h history.History) (map[string][]latencySample, []string) {
	inflight := map[int]history.Op{}
	out := map[string][]latencySample{}
	var fs []string
	for _, op := range h {
		if op.IsNemesis() || op.F == history.FLeaseLost {
			continue
		}
		if op.Type == history.Invoke {
			inflight[op.Process] = op
			continue
		}
		inv, ok := inflight[op.Process]
		if !ok || inv.F != op.F {
			continue
		}
		delete(inflight, op.Process)
		if _, seen := out[op.F]; !seen {
			fs = append(fs, op.F)
		}
		out[op.F] = append(out[op.F], latencySample{at: inv.Time, lat: max(op.Time-inv.Time, time.Microsecond), out: outcomeOf(op.Type)})
	}
	return out, orderFs(fs)
}

// orderFs sorts fs, in place, in the order of their plots: acquire, read,
// write, release, renew, then the others in the order given.
func orderFs(fs []string) []string {
	order := map[string]int{history.FAcquire: 0, history.FRead: 1, history.FWrite: 2, history.FRelease: 3, history.FRenew: 4}
	sort.SliceStable(fs, func(a, b int) bool {
		oa, ok := order[fs[a]]
		if !ok {
			oa = 9
		}
		ob, ok := order[fs[b]]
		if !ok {
			ob = 9
		}
		return oa < ob
	})
	return fs
}

var outcomeClass = [...]string{"ok", "fail", "info", "open"}

// latencyPlot draws one f's latencies on a log scale: one dot per occupied
// (pixel column, row, outcome) cell, and the p50 and p99 of each bucket.
func latencyPlot(f string, samples []latencySample, end time.Duration, nem []nemesisInterval) plot {
	lo, hi := samples[0].lat, samples[0].lat
	for _, s := range samples {
		lo, hi = min(lo, s.lat), max(hi, s.lat)
	}
	p := latencyFrame(f, lo, hi, end, nem)
	// Points, de-duplicated per cell; fail and info drawn last, on top.
	cells := newCellSet(p)
	for _, s := range samples {
		cells.add(s.at, s.lat, s.out)
	}
	cells.draw()
	// Per-bucket quantiles of every outcome together.
	w := bucketWidth(end)
	nb := int(end/w) + 1
	buckets := make([][]time.Duration, nb)
	for _, s := range samples {
		b := min(int(s.at/w), nb-1)
		buckets[b] = append(buckets[b], s.lat)
	}
	for _, lats := range buckets {
		slices.Sort(lats)
	}
	p.quantileLines(w, nb, func(b int, q float64) (time.Duration, bool) {
		lats := buckets[b]
		if len(lats) == 0 {
			return 0, false
		}
		return lats[min(int(q*float64(len(lats))), len(lats)-1)], true
	})
	return plot{Title: fmt.Sprintf("%s latency (%d ops; lines: p50, p99 per %v)", f, len(samples), w), SVG: p.end_()}
}

// latencyFrame begins the latency plot of f, whose latencies run from lo
// to hi, on a log scale of whole decades.
func latencyFrame(f string, lo, hi, end time.Duration, nem []nemesisInterval) *plotFrame {
	yLo := math.Pow(10, math.Floor(math.Log10(float64(lo))))
	yHi := math.Pow(10, math.Ceil(math.Log10(float64(hi))))
	if yHi <= yLo {
		yHi = yLo * 10
	}
	p := &plotFrame{w: 600, h: 200, end: end, nemesis: nem, yLo: yLo, yHi: yHi, logY: true}
	p.begin("latency of " + f)
	for v := yLo; v <= yHi*1.001; v *= 10 {
		p.yTick(v, fmtLatency(time.Duration(v)))
	}
	return p
}

// cell is one (pixel column, row, outcome) cell of a latency plot.
type cell struct {
	x, y int
	o    outcome
}

// cellSet is the occupied cells of a latency plot, in the order first
// occupied, by outcome.
type cellSet struct {
	p    *plotFrame
	seen map[cell]bool
	pts  [4][]cell
}

func newCellSet(p *plotFrame) *cellSet { return &cellSet{p: p, seen: map[cell]bool{}} }

// add marks the cell of an op invoked at at that took lat.
func (cs *cellSet) add(at, lat time.Duration, o outcome) {
	p := cs.p
	c := cell{int(p.x(at)), int(p.y(float64(lat)) * latencyRows / p.h), o}
	if !cs.seen[c] {
		cs.seen[c] = true
		cs.pts[o] = append(cs.pts[o], c)
	}
}

// draw draws one dot per cell, an outcome's dots in one path.
func (cs *cellSet) draw() {
	p := cs.p
	for o, cells := range cs.pts {
		if len(cells) == 0 {
			continue
		}
		fmt.Fprintf(&p.b, `<path class="pts pt-%s" d="`, outcomeClass[o])
		for _, c := range cells {
			y := (float64(c.y) + 0.5) * p.h / latencyRows
			fmt.Fprintf(&p.b, "M%d %.1fh0", c.x, y)
		}
		p.b.WriteString(`"/>`)
	}
}

// quantileLines draws the p50 and p99 lines over the nb buckets of width
// w; value returns a bucket's quantile, false for an empty bucket.
func (p *plotFrame) quantileLines(w time.Duration, nb int, value func(b int, q float64) (time.Duration, bool)) {
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		var d strings.Builder
		cmd := "M"
		for b := range nb {
			v, ok := value(b, q.q)
			if !ok {
				cmd = "M"
				continue
			}
			t := time.Duration(b)*w + w/2
			fmt.Fprintf(&d, "%s%.1f %.1f", cmd, p.x(min(t, p.end)), p.y(float64(v)))
			cmd = "L"
		}
		fmt.Fprintf(&p.b, `<path class="q q-%s" d="%s"/>`, q.name, d.String())
	}
}

// throughputPlot draws completions per second by outcome, per bucket.
func throughputPlot(h history.History, end time.Duration, nem []nemesisInterval) plot {
	w := bucketWidth(end)
	nb := int(end/w) + 1
	counts := [3][]int{make([]int, nb), make([]int, nb), make([]int, nb)}
	for _, op := range h {
		if op.IsNemesis() || op.Type == history.Invoke || op.F == history.FLeaseLost {
			continue
		}
		counts[outcomeOf(op.Type)][min(int(op.Time/w), nb-1)]++
	}
	return throughputPlotOf(counts, w, end, nem)
}

// throughputPlotOf draws the completions counted by outcome in buckets of
// width w.
func throughputPlotOf(counts [3][]int, w, end time.Duration, nem []nemesisInterval) plot {
	peak := 1.0
	per := w.Seconds()
	for _, c := range counts {
		for _, n := range c {
			peak = max(peak, float64(n)/per)
		}
	}
	yHi := niceCeil(peak)
	p := &plotFrame{w: 1200, h: 170, end: end, nemesis: nem, yLo: 0, yHi: yHi}
	p.begin("throughput")
	for _, v := range []float64{0, yHi / 2, yHi} {
		p.yTick(v, fmt.Sprintf("%g/s", v))
	}
	for o, c := range counts {
		var d strings.Builder
		for b, n := range c {
			t := time.Duration(b)*w + w/2
			cmd := "L"
			if b == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f", cmd, p.x(min(t, end)), p.y(float64(n)/per))
		}
		fmt.Fprintf(&p.b, `<path class="rate rate-%s" d="%s"/>`, outcomeClass[o], d.String())
	}
	return plot{Title: fmt.Sprintf("throughput: completions per second (ok, fail, info), per %v", w), SVG: p.end_()}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

// buildPlots returns the throughput plot and one latency plot per f; no
// plots for an empty history.
func buildPlots(h history.History, end time.Duration, nem []nemesisInterval) (*plot, []plot) {
	if end <= 0 {
		return nil, nil
	}
	tp := throughputPlot(h, end, nem)
	var lat []plot
	samples, fs := latencySamples(h)
	for _, f := range fs {
		lat = append(lat, latencyPlot(f, samples[f], end, nem))
	}
	return &tp, lat
}
