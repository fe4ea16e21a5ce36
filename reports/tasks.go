package reports

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// The task view's limits and geometry, in SVG user units (the plots' frame).
const (
	// maxTaskRows is the most tasks drawn as rows, one each; a queue run
	// with more is drawn as a heat map, with rows for the tasks its
	// anomalies name (at most maxTaskRows of them).
	maxTaskRows = 60
	// maxHeatRows is the most rows of the heat map; with more tasks, each
	// row stands for several consecutive tasks and shows the most holders
	// of any of them.
	maxHeatRows = 300
	// heatBuckets is the number of time buckets of the heat map.
	heatBuckets = 300
	// maxHoldTitles is the most holds drawn with a tooltip of their own;
	// above it, only the holds an anomaly names have one.
	maxHoldTitles = 3000
	// maxTaskLanes is the most lanes of a task row; holds that overlap
	// more than that share its last lane.
	maxTaskLanes = 4
	// workerColours is the number of worker colours; worker w has colour
	// w mod workerColours.
	workerColours = 10
	taskViewWidth = 1200.0
	taskLaneH     = 8.0 // one lane of holds
	taskMarkH     = 4.0 // the strip of set-status and reaper marks under a row's lanes
	taskRowGap    = 3.0
	taskAxisH     = 14.0  // the time axis over the rows
	heatHeight    = 480.0 // the heat map's height, about
)

// taskView is what the report draws of a queue run's tasks: the queue
// checker's own holds (checker.QueueFacts, the one implementation of
// docs/history.md §3, "Tasks") and the anomalies of its result and of
// liveness, never recomputed. It has one row per task, or, with more than
// maxTaskRows tasks, a heat map (tasks × time buckets, the colour the most
// processes holding a task at once) and rows for the tasks the anomalies
// name.
type taskView struct {
	Tasks int // the tasks of the run: of the task table, captured, set or reaped
	Holds int
	// Heat is the heat map; nil when every task has a row.
	Heat *plot
	// Rows are the rows of every task, or (beside Heat) of the tasks the
	// anomalies name; nil when there are none.
	Rows *plot
	// Note says which tasks the rows show when they are not all.
	Note string
	// Workers are the legend entries of the worker colours in use.
	Workers []legendEntry
	// Reaper is set when the run has reaper passes.
	Reaper bool
	// Titles is set when every hold has a tooltip.
	Titles bool
}

// Counts says how many tasks and captures the run has: "1 task, 2
// captures".
func (v *taskView) Counts() string {
	return fmt.Sprintf("%s, %s", counted(v.Tasks, "task", "tasks"), counted(v.Holds, "capture", "captures"))
}

// counted is n with its noun: "1 task", "2 tasks".
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// taskRow is what the task view knows of one task.
type taskRow struct {
	task      string
	holds     []int // indexes into QueueFacts.Holds, in the order of their oks
	lane      []int // the lane of each hold
	lanes     int
	statuses  []int // indexes into QueueFacts.Statuses
	reaps     []int // indexes into QueueFacts.Reaps: the oks that name the task
	anomalies []int // indexes into the report's anomalies
}

// taskDrawer draws the task view of one history.
type taskDrawer struct {
	h     history.History
	q     *checker.QueueFacts
	end   time.Duration
	nem   []nemesisInterval
	anoms []anomalyJSON
	// named maps an anomaly (its index in anoms) to the op indexes it and
	// the anomalies that follow from it name.
	named  map[int]map[int]bool
	rows   map[string]*taskRow
	order  []string
	titles bool
}

// isQueue reports whether q has anything of the queue workload.
func isQueue(q *checker.QueueFacts) bool {
	return q != nil && (q.SpecOp >= 0 || q.Captured() || len(q.Statuses) > 0 || len(q.Reaps) > 0)
}

// buildTaskView returns the task view of h, whose queue facts are q, on a
// timeline ending at end, with the report's anomalies; nil when h has no
// queue ops.
func buildTaskView(h history.History, q *checker.QueueFacts, end time.Duration, nem []nemesisInterval, anoms []anomalyJSON) *taskView {
	if !isQueue(q) {
		return nil
	}
	d := newTaskDrawer(h, q, end, nem, anoms)
	v := &taskView{Tasks: len(d.order), Holds: len(q.Holds), Reaper: len(q.Reaps) > 0, Titles: d.titles}
	if len(d.order) <= maxTaskRows {
		if len(d.order) > 0 {
			p := d.drawRows(d.order, "one row per task")
			v.Rows = &p
		}
	} else {
		hp := d.drawHeat(d.order)
		v.Heat = &hp
		var named []string
		for _, t := range d.order {
			if len(d.rows[t].anomalies) > 0 {
				named = append(named, t)
			}
		}
		switch {
		case len(named) == 0:
			v.Note = "No anomaly names a task: no rows."
		case len(named) > maxTaskRows:
			v.Note = fmt.Sprintf("The rows show the first %d of the %d tasks the anomalies name.", maxTaskRows, len(named))
			named = named[:maxTaskRows]
		}
		if len(named) > 0 {
			p := d.drawRows(named, fmt.Sprintf("the %s the anomalies name, one row each", counted(len(named), "task", "tasks")))
			v.Rows = &p
		}
	}
	seen := map[int][]string{}
	var colours []int
	for _, ho := range q.Holds {
		c := ho.Client % workerColours
		w := fmt.Sprint(ho.Client)
		if !slices.Contains(seen[c], w) {
			if len(seen[c]) == 0 {
				colours = append(colours, c)
			}
			seen[c] = append(seen[c], w)
		}
	}
	slices.Sort(colours)
	for _, c := range colours {
		ws := seen[c]
		slices.SortFunc(ws, naturalCompare)
		label := "worker " + ws[0]
		if len(ws) > 1 {
			label = "workers " + strings.Join(ws, ", ")
		}
		v.Workers = append(v.Workers, legendEntry{Class: fmt.Sprintf("tw%d", c), Label: label})
	}
	return v
}

// newTaskDrawer returns the drawer of the tasks of h, with their rows.
func newTaskDrawer(h history.History, q *checker.QueueFacts, end time.Duration, nem []nemesisInterval, anoms []anomalyJSON) *taskDrawer {
	d := &taskDrawer{h: h, q: q, end: max(end, time.Millisecond), nem: nem, anoms: anoms,
		named: map[int]map[int]bool{}, rows: map[string]*taskRow{}, titles: len(q.Holds) <= maxHoldTitles}
	d.collect()
	return d
}

// row returns the row of task t, making it.
func (d *taskDrawer) row(t string) *taskRow {
	r := d.rows[t]
	if r == nil {
		r = &taskRow{task: t}
		d.rows[t] = r
		d.order = append(d.order, t)
	}
	return r
}

// collect sorts the holds, set-statuses, reaper passes and anomalies into
// the tasks' rows and gives each hold its lane: the first whose holds have
// all ended by the hold's ok (in the history's order, as the checker
// compares holds).
func (d *taskDrawer) collect() {
	q := d.q
	if q.SpecOp >= 0 {
		for t := range q.Specs {
			d.row(t)
		}
	}
	for i := range q.Holds {
		r := d.row(q.Holds[i].Task)
		r.holds = append(r.holds, i)
	}
	for i := range q.Statuses {
		r := d.row(q.Statuses[i].Task)
		r.statuses = append(r.statuses, i)
	}
	for i := range q.Reaps {
		for _, t := range q.Reaps[i].Tasks {
			r := d.row(t)
			r.reaps = append(r.reaps, i)
		}
	}
	kinds := checker.TaskKinds()
	for n, a := range d.anoms {
		if a.Key == "" || !slices.Contains(kinds, a.Kind) {
			continue
		}
		r := d.row(a.Key)
		r.anomalies = append(r.anomalies, n)
		ops := map[int]bool{}
		for _, i := range a.Ops {
			ops[i] = true
		}
		for _, f := range a.Followers {
			for _, i := range f {
				ops[i] = true
			}
		}
		d.named[n] = ops
	}
	slices.SortFunc(d.order, naturalCompare)
	for _, r := range d.rows {
		var laneEnd []int
		for _, i := range r.holds {
			ho := &q.Holds[i]
			l := slices.IndexFunc(laneEnd, func(e int) bool { return e <= ho.OK })
			switch {
			case l >= 0:
			case len(laneEnd) < maxTaskLanes:
				laneEnd = append(laneEnd, 0)
				l = len(laneEnd) - 1
			default:
				l = maxTaskLanes - 1
			}
			laneEnd[l] = max(laneEnd[l], ho.End)
			r.lane = append(r.lane, l)
		}
		r.lanes = max(1, len(laneEnd))
	}
}

// at returns the time of the op at position i of the history.
func (d *taskDrawer) at(i int) time.Duration { return d.h[i].Time }

// holdEnd returns the time the hold ends on the drawing: its end op's, or
// the timeline's end for an open hold.
func (d *taskDrawer) holdEnd(ho *checker.Hold) time.Duration {
	if ho.End == checker.Open {
		return d.end
	}
	return d.at(ho.End)
}

// namedBy returns the anomalies of r (indexes into anoms) that name the
// capture ok of hold ho.
func (d *taskDrawer) namedBy(r *taskRow, ho *checker.Hold) []int {
	var out []int
	for _, n := range r.anomalies {
		if d.named[n][d.h[ho.OK].Index] {
			out = append(out, n)
		}
	}
	return out
}

// holdText describes hold ho in a sentence.
func (d *taskDrawer) holdText(ho *checker.Hold) string {
	s := fmt.Sprintf("%s: worker %d (process %d) captured it at %s (capture ops %d, %d)", ho.Task, ho.Client, ho.Process,
		fmtAt(d.at(ho.OK)), d.h[ho.Invoke].Index, d.h[ho.OK].Index)
	switch {
	case ho.End == checker.Open:
		return s + "; held it to the end"
	case ho.Reaped && d.h[ho.End].F == history.FReap:
		return s + fmt.Sprintf("; the reaper pass invoked at %s (op %d) may have set it back", fmtAt(d.at(ho.End)), d.h[ho.End].Index)
	case ho.Reaped:
		return s + "; a reaper pass invoked before the capture returned may have set it back at once"
	}
	return s + fmt.Sprintf("; gave it up with its set-status %s invoked at %s (op %d)", history.StatusOf(d.h[ho.End]), fmtAt(d.at(ho.End)), d.h[ho.End].Index)
}

// fmtAt renders a harness time as seconds with three decimals, as the
// checkers' sentences do ("0.016s").
func fmtAt(t time.Duration) string { return fmt.Sprintf("%.3fs", t.Seconds()) }

// paths accumulates the path data of each class, so that many marks of a
// class are one element.
type paths struct {
	order []string
	d     map[string]*strings.Builder
}

// add appends the path data of format and args to class's path.
func (ps *paths) add(class, format string, args ...any) {
	if ps.d == nil {
		ps.d = map[string]*strings.Builder{}
	}
	b := ps.d[class]
	if b == nil {
		b = &strings.Builder{}
		ps.d[class] = b
		ps.order = append(ps.order, class)
	}
	fmt.Fprintf(b, format, args...)
}

// write writes one path element per class, in the order of their first
// marks.
func (ps *paths) write(b *strings.Builder) {
	for _, c := range ps.order {
		fmt.Fprintf(b, `<path class="%s" d="%s"/>`, c, ps.d[c].String())
	}
}

// statusClass is the class of a set-status mark: its status (done, failed
// or another) and, when it did not surely take effect, its outcome.
func statusClass(s *checker.StatusSet) string {
	c := "st st-other"
	switch s.Status {
	case history.StatusDone:
		c = "st st-done"
	case history.StatusFailed:
		c = "st st-failed"
	}
	switch s.Type {
	case history.Fail:
		c += " st-refused"
	case history.Info, history.Invoke:
		c += " st-unknown"
	}
	return c
}

// esc escapes a text for the SVG.
var esc = template.HTMLEscapeString

// drawRows draws one row per task of tasks: each hold from its capture's
// ok to its end, coloured by its worker, in the first lane free at its ok;
// under them each set-status (at its invoke, where it ends the hold) and
// each reaper pass that named the task; behind them each anomaly that
// names the task, over the window of its ops, marked at its start; a
// reaper row on top when the run has reaper passes, and a dashed line at
// each reaper pass of unknown outcome (which may have set back any task).
func (d *taskDrawer) drawRows(tasks []string, title string) plot {
	c := &rowsCanvas{d: d, p: &plotFrame{w: taskViewWidth, h: d.rowsHeight(tasks), end: d.end, nemesis: d.nem}}
	c.p.begin("tasks")
	b := &c.p.b
	// the time axis again on top, for a tall view
	for _, t := range timeTicks(d.end, 10) {
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="%g" text-anchor="middle">%s</text>`, c.p.x(t), plotTop+taskAxisH-3, fmtSeconds(t))
	}
	c.y = plotTop + taskAxisH + 1
	if len(d.q.Reaps) > 0 {
		c.reaperRow()
	}
	for n, t := range tasks {
		c.taskRow(n, t)
	}
	// The layers, back to front: rows and anomaly bands (b), holds (mid,
	// holdPaths), set-status and reaper marks (marks), the outlines of the
	// holds anomalies name and the anomalies' marks (front).
	b.WriteString(c.mid.String())
	c.holdPaths.write(b)
	c.marks.write(b)
	b.WriteString(c.front.String())
	c.unknownReaps()
	return plot{Title: title, SVG: c.p.end_()}
}

// rowsHeight is the height of the task rows' plot of tasks.
func (d *taskDrawer) rowsHeight(tasks []string) float64 {
	height := plotTop + taskAxisH + plotBottom + 2
	if len(d.q.Reaps) > 0 {
		height += taskLaneH + taskRowGap
	}
	for _, t := range tasks {
		height += float64(d.rows[t].lanes)*taskLaneH + taskMarkH + taskRowGap
	}
	return height
}

// rowsCanvas is the task rows' plot as drawRows draws it: the frame, whose
// builder holds the back layer, the layers in front of it, and y, the top
// of the next row.
type rowsCanvas struct {
	d                *taskDrawer
	p                *plotFrame
	mid, front       strings.Builder
	holdPaths, marks paths
	y                float64
}

// x is the abscissa of time t, clamped to the run.
func (c *rowsCanvas) x(t time.Duration) float64 { return c.p.x(min(max(t, 0), c.d.end)) }

// reaperRow draws the reaper's row: one rectangle per pass, from its
// invoke to its completion.
func (c *rowsCanvas) reaperRow() {
	d, b := c.d, &c.p.b
	fmt.Fprintf(b, `<text class="tlabel" x="%g" y="%.1f" text-anchor="end">reaper</text>`, plotLeft-4, c.y+taskLaneH-1)
	for _, r := range d.q.Reaps {
		x0, x1 := c.x(d.at(r.Invoke)), c.x(d.end)
		done, cls := "never completed", "reap-pass unknown"
		if r.Done >= 0 {
			x1 = c.x(d.at(r.Done))
			done = "completed at " + fmtAt(d.at(r.Done))
		}
		what := "of unknown outcome: it may have set back any task"
		if !r.Unknown {
			cls = "reap-pass"
			what = "set back " + strings.Join(r.Tasks, ", ")
			if len(r.Tasks) == 0 {
				what = "set back nothing"
			} else {
				cls = "reap-pass reaped"
			}
		}
		fmt.Fprintf(b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%g"><title>reaper pass invoked at %s (op %d), %s; %s</title></rect>`,
			cls, x0, c.y, max(x1-x0, 1), taskLaneH-1, fmtAt(d.at(r.Invoke)), d.h[r.Invoke].Index, done, esc(what))
	}
	c.y += taskLaneH + taskRowGap
}

// taskRow draws the row of task t, the n-th: its band and label, its
// anomalies, its holds and its marks.
func (c *rowsCanvas) taskRow(n int, t string) {
	r := c.d.rows[t]
	rowH := float64(r.lanes)*taskLaneH + taskMarkH
	c.rowLabel(n, t, r, rowH)
	c.rowAnomalies(t, r, rowH)
	c.rowHolds(r)
	c.rowMarks(r, rowH)
	c.y += rowH + taskRowGap
}

// rowLabel draws the band of task t's row, striped on odd rows, and its
// label, whose tooltip gives the task's captures, queue and budget.
func (c *rowsCanvas) rowLabel(n int, t string, r *taskRow, rowH float64) {
	b := &c.p.b
	odd := ""
	if n%2 == 1 {
		odd = " odd"
	}
	fmt.Fprintf(b, `<rect class="trow%s" x="%g" y="%.1f" width="%g" height="%g"/>`, odd, plotLeft, c.y-1, c.p.w-plotLeft-plotRight, rowH+2)
	label, lc := t, "tlabel"
	if len([]rune(label)) > 10 {
		label = string([]rune(label)[:9]) + "…"
	}
	if len(r.anomalies) > 0 {
		lc += " anom"
	}
	info := fmt.Sprintf("task %s: %d captures", t, len(r.holds))
	if s, ok := c.d.q.Specs[t]; ok {
		info += ", queue " + s.Queue
		if s.Budget != nil {
			info += fmt.Sprintf(", budget %d", *s.Budget)
		}
	}
	fmt.Fprintf(b, `<text class="%s" data-task="%s" x="%g" y="%.1f" text-anchor="end">%s<title>%s</title></text>`,
		lc, esc(t), plotLeft-4, c.y+taskLaneH-1, esc(label), esc(info))
}

// rowAnomalies draws the anomalies that name task t, behind the holds,
// each marked at its start in front.
func (c *rowsCanvas) rowAnomalies(t string, r *taskRow, rowH float64) {
	for _, n := range r.anomalies {
		a := &c.d.anoms[n]
		if a.From < 0 {
			continue
		}
		x0, x1 := c.x(time.Duration(a.From)*time.Microsecond), c.x(time.Duration(a.To)*time.Microsecond)
		fmt.Fprintf(&c.p.b, `<rect class="task-anom k-%s" data-anomaly="%d" x="%.1f" y="%.1f" width="%.1f" height="%g"><title>%s: %s</title></rect>`,
			esc(a.Kind), n, x0, c.y-1, max(x1-x0, 2), rowH+2, esc(a.Kind), esc(a.Message))
		fmt.Fprintf(&c.front, `<path class="task-anom-mark k-%s" data-anomaly="%d" data-task="%s" d="M%.1f %.1fl5 -7h-10z"><title>%s: %s</title></path>`,
			esc(a.Kind), n, esc(t), x0, c.y+5, esc(a.Kind), esc(a.Message))
	}
}

// holdRun is a run of touching holds of one worker colour on one lane,
// drawn as one rectangle.
type holdRun struct {
	lane   int
	cls    string
	x0, x1 float64
}

// rowHolds draws a row's holds on their lanes. Without tooltips, the holds
// of one worker colour on one lane that touch (within half a unit) are one
// rectangle.
func (c *rowsCanvas) rowHolds(r *taskRow) {
	d := c.d
	var runs []holdRun
	pending := map[[2]string]int{} // lane and class -> index into runs
	for k, i := range r.holds {
		ho := &d.q.Holds[i]
		x0, x1 := c.x(d.at(ho.OK)), c.x(d.holdEnd(ho))
		w := max(x1-x0, 0.8)
		hy := c.y + float64(r.lane[k])*taskLaneH
		cls := fmt.Sprintf("thold tw%d", ho.Client%workerColours)
		if d.titles {
			fmt.Fprintf(&c.mid, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%g"><title>%s</title></rect>`, cls, x0, hy, w, taskLaneH-1, esc(d.holdText(ho)))
		} else {
			key := [2]string{fmt.Sprint(r.lane[k]), cls}
			if j, ok := pending[key]; ok && x0 <= runs[j].x1+0.5 {
				runs[j].x1 = max(runs[j].x1, x0+w)
			} else {
				pending[key] = len(runs)
				runs = append(runs, holdRun{r.lane[k], cls, x0, x0 + w})
			}
		}
		if ho.End == checker.Open {
			c.holdPaths.add("thold-open", "M%.1f %.1fh%.1fv%gh%.1fz", x0, hy, w, taskLaneH-1, -w)
		}
		if by := d.namedBy(r, ho); len(by) > 0 {
			fmt.Fprintf(&c.front, `<rect class="thold-named" data-anomaly="%d" x="%.1f" y="%.1f" width="%.1f" height="%g"><title>%s — named by %s</title></rect>`,
				by[0], x0, hy, w, taskLaneH-1, esc(d.holdText(ho)), esc(d.anoms[by[0]].Kind))
		}
	}
	for _, u := range runs {
		hy := c.y + float64(u.lane)*taskLaneH
		c.holdPaths.add(u.cls, "M%.1f %.1fh%.1fv%gh%.1fz", u.x0, hy, u.x1-u.x0, taskLaneH-1, u.x0-u.x1)
	}
}

// rowMarks draws a row's set-status marks under its lanes and its reaper
// passes across it. Without tooltips, marks of one class at one half unit
// are one mark.
func (c *rowsCanvas) rowMarks(r *taskRow, rowH float64) {
	d := c.d
	my := c.y + float64(r.lanes)*taskLaneH
	marked := map[string]bool{}
	mark := func(cls string, x0, y0, h float64) {
		x0 = math.Round(x0*2) / 2
		if k := fmt.Sprint(cls, x0); d.titles || !marked[k] {
			marked[k] = true
			c.marks.add(cls, "M%g %.1fv%g", x0, y0, h)
		}
	}
	for _, i := range r.statuses {
		s := &d.q.Statuses[i]
		mark(statusClass(s), c.x(d.at(s.Invoke)), my, taskMarkH)
	}
	for _, i := range r.reaps {
		mark("reap-mark", c.x(d.at(d.q.Reaps[i].Invoke)), c.y-1, rowH+2)
	}
}

// unknownReaps draws a dashed line across every row at each reaper pass of
// unknown outcome.
func (c *rowsCanvas) unknownReaps() {
	d := c.d
	for _, r := range d.q.Reaps {
		if r.Unknown {
			x0 := c.x(d.at(r.Invoke))
			fmt.Fprintf(&c.p.b, `<line class="reap-unknown" x1="%.1f" x2="%.1f" y1="%g" y2="%.1f"><title>reaper pass of unknown outcome invoked at %s (op %d): it may have set back any task</title></line>`,
				x0, x0, plotTop, c.y, fmtAt(d.at(r.Invoke)), d.h[r.Invoke].Index)
		}
	}
}

// bucket returns the heat map bucket of time t.
func (d *taskDrawer) bucket(t time.Duration) int {
	return min(max(int(int64(t)*heatBuckets/int64(d.end)), 0), heatBuckets-1)
}

// holders raises cells[b] to the most processes that held task r at once
// in bucket b, by the checker's holds in the history's order: after the
// holds that start and end at one op, the processes holding the task count
// in every bucket from that op's time to the next such op's.
func (d *taskDrawer) holders(r *taskRow, cells []uint8) {
	type ev struct{ pos, proc, delta int }
	var evs []ev
	for _, i := range r.holds {
		ho := &d.q.Holds[i]
		if ho.End <= ho.OK {
			continue
		}
		evs = append(evs, ev{ho.OK, ho.Process, 1})
		if ho.End != checker.Open {
			evs = append(evs, ev{ho.End, ho.Process, -1})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Or(cmp.Compare(a.pos, b.pos), cmp.Compare(a.delta, b.delta)) })
	count := map[int]int{}
	n := 0
	for k := 0; k < len(evs); {
		pos := evs[k].pos
		for ; k < len(evs) && evs[k].pos == pos; k++ {
			e := evs[k]
			before := count[e.proc]
			count[e.proc] += e.delta
			switch {
			case before == 0 && count[e.proc] > 0:
				n++
			case before > 0 && count[e.proc] == 0:
				n--
			}
		}
		if n == 0 {
			continue
		}
		t0, t1 := d.at(pos), d.end
		if k < len(evs) {
			t1 = d.at(evs[k].pos)
		}
		b0, b1 := d.bucket(t0), d.bucket(t0)
		if t1 > t0 {
			b1 = d.bucket(t1 - 1)
		}
		for b := b0; b <= b1; b++ {
			cells[b] = max(cells[b], uint8(min(n, 255)))
		}
	}
}

// heatClass is the class of a heat map cell of v holders, v > 0: 1, 2,
// or 3 and more.
func heatClass(v uint8) string { return fmt.Sprintf("heat heat-%d", min(v, 3)) }

// drawHeat draws the heat map of tasks: a row per task (or per run of
// consecutive tasks when there are more than maxHeatRows), a column per
// time bucket, the colour the most processes holding the task at once in
// the bucket; rows with a task an anomaly names are marked at the left.
func (d *taskDrawer) drawHeat(tasks []string) plot {
	per := (len(tasks) + maxHeatRows - 1) / maxHeatRows
	nrows := (len(tasks) + per - 1) / per
	rh := min(max(heatHeight/float64(nrows), 1.5), 8)
	height := plotTop + plotBottom + float64(nrows)*rh
	p := &plotFrame{w: taskViewWidth, h: height, end: d.end, nemesis: d.nem}
	p.begin("task heat map")
	b := &p.b
	cells := make([][]uint8, nrows)
	for i := range cells {
		cells[i] = make([]uint8, heatBuckets)
	}
	for i, t := range tasks {
		d.holders(d.rows[t], cells[i/per])
	}
	cw := (p.w - plotLeft - plotRight) / heatBuckets
	var ps paths
	labelEvery := max(1, nrows/12)
	for r := range nrows {
		y := plotTop + float64(r)*rh
		for c := 0; c < heatBuckets; {
			v := cells[r][c]
			e := c + 1
			for e < heatBuckets && min(cells[r][e], 3) == min(v, 3) {
				e++
			}
			if v > 0 {
				ps.add(heatClass(v), "M%.1f %.1fh%.1fv%gh%.1fz", plotLeft+float64(c)*cw, y, float64(e-c)*cw, rh, -float64(e-c)*cw)
			}
			c = e
		}
		group := tasks[r*per : min((r+1)*per, len(tasks))]
		if r%labelEvery == 0 {
			fmt.Fprintf(b, `<text class="tlabel" x="%g" y="%.1f" text-anchor="end">%s</text>`, plotLeft-10, y+min(rh, 8)-1, esc(group[0]))
		}
		var kinds []string
		var first = -1
		for _, t := range group {
			for _, n := range d.rows[t].anomalies {
				if first < 0 {
					first = n
				}
				kinds = append(kinds, t+" "+d.anoms[n].Kind)
			}
		}
		if first >= 0 {
			fmt.Fprintf(b, `<path class="heat-anom" data-anomaly="%d" d="M%g %.1fh-6v%gz"><title>%s</title></path>`,
				first, plotLeft-1, y, max(rh, 3), esc(strings.Join(kinds, "; ")))
		}
	}
	ps.write(b)
	w := d.end / heatBuckets
	title := fmt.Sprintf("heat map: %d tasks × %d buckets of %v; colour: the most processes holding a task at once", len(tasks), heatBuckets, w.Round(time.Microsecond))
	if per > 1 {
		title += fmt.Sprintf(" (a row: %d consecutive tasks, the most of any of them)", per)
	}
	return plot{Title: title, SVG: p.end_()}
}

// naturalCompare orders strings with their runs of digits compared as
// numbers: "t2" before "t10".
func naturalCompare(a, b string) int {
	return cmp.Or(natural(a, b), cmp.Compare(a, b))
}

// natural is naturalCompare without its tie-break: "t1" and "t01" are
// equal.
func natural(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), cmp.Compare(na, nb)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

// digits returns the length of the run of ASCII digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
