package reports

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// checkedResults is the results document of h as a run writes it: every
// checker's result and liveness.
func checkedResults(h history.History) Results {
	checkers, live := checker.CheckWithLiveness(context.Background(), h, checker.Options{}, checker.LivenessOptions{})
	return Results{Scenario: "queue", Seed: 1, Verdict: checker.Overall(checkers), Checkers: checkers, Liveness: live, Stats: CountStats(h)}
}

// renderQueue renders the report of h with its checked results.
func renderQueue(t *testing.T, h history.History) (string, reportData) {
	t.Helper()
	var b bytes.Buffer
	if err := RenderHTML(&b, ReportInput{Results: checkedResults(h), History: h}); err != nil {
		t.Fatal(err)
	}
	return b.String(), embeddedData(t, b.String())
}

// between returns the text of page from the first open to the next close
// after it, "" when there is no open.
func between(page, open, close string) string {
	i := strings.Index(page, open)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], close)
	if j < 0 {
		return page[i:]
	}
	return page[i : i+j+len(close)]
}

// anomalyIndex returns the index in the report's anomalies of the anomaly
// of kind on key, -1 when there is none.
func anomalyIndex(d reportData, kind, key string) int {
	return slices.IndexFunc(d.Anomalies, func(a anomalyJSON) bool { return a.Kind == kind && a.Key == key })
}

// holdRect is the horizontal extent of a drawn hold, in SVG units.
type holdRect struct{ x0, x1 float64 }

var holdRectRE = regexp.MustCompile(`<rect class="thold tw\d" x="([-0-9.]+)" y="[-0-9.]+" width="([-0-9.]+)"`)

// drawnHolds returns the extents of the holds drawn in svg, sorted.
func drawnHolds(svg string) []holdRect {
	var out []holdRect
	for _, m := range holdRectRE.FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		w, _ := strconv.ParseFloat(m[2], 64)
		out = append(out, holdRect{x, x + w})
	}
	slices.SortFunc(out, func(a, b holdRect) int { return cmp.Or(cmp.Compare(a.x0, b.x0), cmp.Compare(a.x1, b.x1)) })
	return out
}

type taskMark struct{ kind, task string }

// taskViewRowsCase is a fixture's task rows and what they must show.
type taskViewRowsCase struct {
	name    string
	fixture string // a file of checker/testdata
	tasks   []string
	marks   []taskMark     // the anomaly marks, each on its task's row
	named   int            // the holds outlined as named by an anomaly
	lanes   map[string]int // the lanes of some rows
	texts   []string       // in the task view (unescaped)
}

// TestTaskViewRows: the task rows of a queue run's report draw the
// checker's holds, marks and anomalies.
func TestTaskViewRows(t *testing.T) {
	tests := []taskViewRowsCase{
		{name: "double capture: the task has two lanes, both holds named", fixture: "queue-double-capture.jsonl",
			tasks: []string{"t1", "t2"}, marks: []taskMark{{checker.DoubleCapture, "t1"}}, named: 2,
			lanes: map[string]int{"t1": 2, "t2": 1},
			texts: []string{"t1: worker 1 (process 1) captured it at 0.016s (capture ops 3, 4); gave it up with its set-status done invoked at 0.050s (op 10)",
				"double-capture: worker 0 captured task t1 at 0.020s while worker 1 held it"}},
		{name: "stale status: the reaper's pass ends the first hold", fixture: "queue-stale-status.jsonl",
			tasks: []string{"t1"}, marks: []taskMark{{checker.StaleStatus, "t1"}}, named: 2, lanes: map[string]int{"t1": 1},
			texts: []string{"the reaper pass invoked at 0.100s (op 4) may have set it back", `class="reap-mark"`,
				`class="reap-pass reaped"`, "reaper pass invoked at 0.100s (op 4), completed at 0.102s; set back t1"}},
		{name: "lost task of a crashed holder: its hold is open to the end", fixture: "queue-lost-task-crashed-holder.jsonl",
			tasks: []string{"t1"}, marks: []taskMark{{checker.LostTask, "t1"}}, named: 1,
			texts: []string{"held it to the end", `class="thold-open"`}},
		{name: "lost task never captured: a row without captures", fixture: "queue-lost-task-never-captured.jsonl",
			tasks: []string{"t1", "t2"}, marks: []taskMark{{checker.LostTask, "t2"}}, named: 0,
			texts: []string{"task t2: 0 captures, queue q0, budget 3"}},
		{name: "budget overspent", fixture: "queue-budget-overspent.jsonl",
			marks: []taskMark{{checker.BudgetOverspent, "t1"}}, named: 1},
		{name: "cross queue, then passed over in its own queue", fixture: "queue-cross-queue.jsonl",
			marks: []taskMark{{checker.CrossQueue, "t2"}, {checker.LostTask, "t2"}}, named: 1},
		{name: "valid handover at the set-status: one lane, no marks", fixture: "queue-handover-at-set-status.jsonl",
			lanes: map[string]int{"t1": 1}},
		{name: "a refused set-status keeps the hold: double capture", fixture: "queue-failed-set-status-keeps-hold.jsonl",
			marks: []taskMark{{checker.DoubleCapture, "t1"}}, named: 2, lanes: map[string]int{"t1": 2, "t2": 1},
			texts: []string{`class="st st-done st-refused"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { checkTaskViewRows(t, tc) })
	}
}

// checkTaskViewRows renders the report of tc's fixture and checks its task
// rows against tc and the checker's facts.
func checkTaskViewRows(t *testing.T, tc taskViewRowsCase) {
	t.Helper()
	h, _, err := history.ReadFile(filepath.Join("..", "checker", "testdata", tc.fixture))
	if err != nil {
		t.Fatal(err)
	}
	page, data := renderQueue(t, h)
	view := between(page, `<section class="tasks"`, `</section>`)
	if view == "" {
		t.Fatal("the report of a queue run has no task view")
	}
	if strings.Contains(view, `class="task-heat"`) {
		t.Error("a heat map for a few tasks")
	}
	rows := between(view, `<figure class="task-rows">`, `</figure>`)
	for _, task := range tc.tasks {
		if !strings.Contains(rows, fmt.Sprintf(`data-task="%s" x=`, task)) {
			t.Errorf("no row for task %s", task)
		}
	}
	tl := buildTimeline(h)
	q := tl.facts.Queue
	checkDrawnHolds(t, h, tl, rows)
	checkAnomalyMarks(t, view, data, tc.marks)
	if n := strings.Count(view, `class="thold-named"`); n != tc.named {
		t.Errorf("%d holds outlined as named, want %d", n, tc.named)
	}
	d := newTaskDrawer(h, q, tl.End, tl.Nemesis, data.Anomalies)
	for task, n := range tc.lanes {
		if got := d.rows[task].lanes; got != n {
			t.Errorf("task %s has %d lanes, want %d", task, got, n)
		}
	}
	text := html.UnescapeString(view)
	for _, w := range tc.texts {
		if !strings.Contains(text, w) && !strings.Contains(view, w) {
			t.Errorf("the task view lacks %q", w)
		}
	}
	// every set-status is marked under its task's row
	marks := 0
	for _, m := range regexp.MustCompile(`<path class="st [^"]*" d="([^"]*)"`).FindAllStringSubmatch(view, -1) {
		marks += strings.Count(m[1], "M")
	}
	if marks != len(q.Statuses) {
		t.Errorf("%d set-status marks, want %d", marks, len(q.Statuses))
	}
}

// checkDrawnHolds checks that the holds drawn in rows are the checker's,
// from the capture's ok to the end of the hold.
func checkDrawnHolds(t *testing.T, h history.History, tl timeline, rows string) {
	t.Helper()
	p := plotFrame{w: taskViewWidth, end: tl.End}
	var want []holdRect
	for _, ho := range tl.facts.Queue.Holds {
		end := tl.End
		if ho.End != checker.Open {
			end = h[ho.End].Time
		}
		x0, x1 := p.x(h[ho.OK].Time), p.x(end)
		want = append(want, holdRect{x0, x0 + max(x1-x0, 0.8)})
	}
	slices.SortFunc(want, func(a, b holdRect) int { return cmp.Or(cmp.Compare(a.x0, b.x0), cmp.Compare(a.x1, b.x1)) })
	got := drawnHolds(rows)
	if len(got) != len(want) {
		t.Fatalf("%d holds drawn, want the checker's %d", len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i].x0-want[i].x0) > 0.06 || math.Abs(got[i].x1-want[i].x1) > 0.11 {
			t.Errorf("hold %d drawn over %.1f..%.1f, want %.1f..%.1f", i, got[i].x0, got[i].x1, want[i].x0, want[i].x1)
		}
	}
}

// checkAnomalyMarks checks that the task view has exactly the marks of
// marks, each on its task's row and naming the checker's anomaly by its
// index in the list, with its window behind the row.
func checkAnomalyMarks(t *testing.T, view string, data reportData, marks []taskMark) {
	t.Helper()
	if n := strings.Count(view, `class="task-anom-mark`); n != len(marks) {
		t.Errorf("%d anomaly marks, want %d", n, len(marks))
	}
	for _, m := range marks {
		n := anomalyIndex(data, m.kind, m.task)
		if n < 0 {
			t.Fatalf("the checkers found no %s on %s: %+v", m.kind, m.task, data.Anomalies)
		}
		mark := fmt.Sprintf(`class="task-anom-mark k-%s" data-anomaly="%d" data-task="%s"`, m.kind, n, m.task)
		if !strings.Contains(view, mark) {
			t.Errorf("no mark %s", mark)
		}
		if !strings.Contains(view, fmt.Sprintf(`class="task-anom k-%s" data-anomaly="%d"`, m.kind, n)) {
			t.Errorf("no window of the %s anomaly", m.kind)
		}
	}
}

// queueHistory is a run of tasks t0…t(n-1) of queue q0, each captured in
// turn by worker i mod 4 and set done; each task of double is also
// captured by worker 4 while its first worker holds it.
func queueHistory(n int, double ...string) history.History {
	specs := make([]history.TaskSpec, n)
	for i := range specs {
		specs[i] = history.TaskSpec{Task: fmt.Sprintf("t%d", i), Queue: "q0"}
	}
	h := history.History{history.Header(), history.TasksOp(specs)}
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	captured := func(task string) json.RawMessage {
		return history.JSONValue([]history.CapturedTask{{Task: task}})
	}
	type timed struct {
		at time.Duration
		op history.Op
	}
	var ops []timed
	add := func(at time.Duration, p int, typ history.Type, f, key string, v json.RawMessage) {
		ops = append(ops, timed{at, history.Op{Process: p, Client: p, Type: typ, F: f, Key: key, Value: v}})
	}
	for i, s := range specs {
		t0, w := ms(10*i+1), i%4
		add(t0, w, history.Invoke, history.FCapture, "q0", history.IntValue(1))
		add(t0+ms(1), w, history.OK, history.FCapture, "q0", captured(s.Task))
		add(t0+ms(6), w, history.Invoke, history.FSetStatus, s.Task, history.JSONValue(history.StatusDone))
		add(t0+ms(7), w, history.OK, history.FSetStatus, s.Task, nil)
		if slices.Contains(double, s.Task) {
			add(t0+ms(2), 4, history.Invoke, history.FCapture, "q0", history.IntValue(1))
			add(t0+ms(3), 4, history.OK, history.FCapture, "q0", captured(s.Task))
			add(t0+ms(4), 4, history.Invoke, history.FSetStatus, s.Task, history.JSONValue(history.StatusFailed))
			add(t0+ms(5), 4, history.OK, history.FSetStatus, s.Task, nil)
		}
	}
	slices.SortStableFunc(ops, func(a, b timed) int { return int(a.at - b.at) })
	for _, o := range ops {
		o.op.Time = o.at
		h = append(h, o.op)
	}
	for i := range h {
		h[i].Index = i
	}
	return h
}

func TestTaskViewHeatMap(t *testing.T) {
	tests := []struct {
		name    string
		tasks   int
		double  []string
		rows    []string // the tasks with rows
		title   string   // in the heat map's caption
		note    string
		most    map[string]uint8 // the most holders at once of some tasks
		classes []string         // heat map classes drawn
	}{
		{name: "80 tasks, one captured by two workers at once", tasks: 80, double: []string{"t7"}, rows: []string{"t7"},
			title: "heat map: 80 tasks × 300 buckets", most: map[string]uint8{"t7": 2, "t3": 1, "t79": 1},
			classes: []string{"heat heat-1", "heat heat-2"}},
		{name: "80 tasks, no anomaly: no rows", tasks: 80, note: "No anomaly names a task: no rows.",
			most: map[string]uint8{"t7": 1}, classes: []string{"heat heat-1"}},
		{name: "700 tasks: a row stands for three", tasks: 700, double: []string{"t0", "t650"}, rows: []string{"t0", "t650"},
			title: "(a row: 3 consecutive tasks, the most of any of them)", most: map[string]uint8{"t650": 2, "t651": 1},
			classes: []string{"heat heat-1", "heat heat-2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := queueHistory(tc.tasks, tc.double...)
			if err := history.Validate(h); err != nil {
				t.Fatalf("not well-formed: %v", err)
			}
			page, data := renderQueue(t, h)
			view := between(page, `<section class="tasks"`, `</section>`)
			heat := between(view, `<figure class="task-heat">`, `</figure>`)
			if heat == "" {
				t.Fatal("no heat map")
			}
			if !strings.Contains(html.UnescapeString(heat), tc.title) {
				t.Errorf("heat map caption lacks %q", tc.title)
			}
			var classes []string
			for _, m := range regexp.MustCompile(`<path class="(heat [^"]*)"`).FindAllStringSubmatch(heat, -1) {
				classes = append(classes, m[1])
			}
			slices.Sort(classes)
			if !slices.Equal(classes, tc.classes) {
				t.Errorf("heat map classes %v, want %v", classes, tc.classes)
			}
			if tc.note != "" && !strings.Contains(view, tc.note) {
				t.Errorf("no note %q", tc.note)
			}
			rows := between(view, `<figure class="task-rows">`, `</figure>`)
			var got []string
			for _, m := range regexp.MustCompile(`<text class="tlabel[^"]*" data-task="([^"]*)"`).FindAllStringSubmatch(rows, -1) {
				got = append(got, m[1])
			}
			if !slices.Equal(got, tc.rows) {
				t.Errorf("rows for %v, want %v", got, tc.rows)
			}
			checkDoubleCaptureMarks(t, rows, heat, data, tc.double)
			tl := buildTimeline(h)
			d := newTaskDrawer(h, tl.facts.Queue, tl.End, nil, data.Anomalies)
			for task, want := range tc.most {
				cells := make([]uint8, heatBuckets)
				d.holders(d.rows[task], cells)
				if got := slices.Max(cells); got != want {
					t.Errorf("task %s has at most %d holders at once, want %d", task, got, want)
				}
			}
		})
	}
}

// checkDoubleCaptureMarks checks that the double capture of each task of
// double is marked on its row and on its row of the heat map.
func checkDoubleCaptureMarks(t *testing.T, rows, heat string, data reportData, double []string) {
	t.Helper()
	for _, task := range double {
		n := anomalyIndex(data, checker.DoubleCapture, task)
		if n < 0 {
			t.Fatalf("the checker found no double-capture of %s", task)
		}
		want := fmt.Sprintf(`class="task-anom-mark k-double-capture" data-anomaly="%d" data-task="%s"`, n, task)
		if !strings.Contains(rows, want) {
			t.Errorf("rows lack %s", want)
		}
		if !strings.Contains(heat, fmt.Sprintf(`class="heat-anom" data-anomaly="%d"`, n)) {
			t.Errorf("the heat map does not mark the row of %s", task)
		}
	}
}

// TestTaskViewOnlyForQueueRuns: a lock run's report has no task view.
func TestTaskViewOnlyForQueueRuns(t *testing.T) {
	h := invalidHistory()
	var b bytes.Buffer
	if err := RenderHTML(&b, ReportInput{Results: invalidResults(h), History: h}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `<section class="tasks"`) {
		t.Error("a lock run's report has a task view")
	}
	if v := buildTaskView(h, checker.Analyze(h).Queue, sec(11), nil, nil); v != nil {
		t.Errorf("task view of a lock run = %+v", v)
	}
}

func TestNaturalCompare(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"numbers as numbers", []string{"t10", "t2", "t1", "t100"}, []string{"t1", "t2", "t10", "t100"}},
		{"prefixes first", []string{"task-b", "task", "task-a"}, []string{"task", "task-a", "task-b"}},
		{"leading zeros ordered after equal values", []string{"t1", "t01", "t0"}, []string{"t0", "t01", "t1"}},
		{"mixed runs", []string{"q2-t10", "q10-t1", "q2-t9"}, []string{"q2-t9", "q2-t10", "q10-t1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Clone(tc.in)
			slices.SortFunc(got, naturalCompare)
			if !slices.Equal(got, tc.want) {
				t.Errorf("sorted %v = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// TestBrowserReportTasks: in the page, a click on an anomaly's mark in the
// task view selects the anomaly in the list and marks it selected in the
// task view; the anomaly list does the same the other way.
func TestBrowserReportTasks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the headless Chromium test")
	}
	h, _, err := history.ReadFile(filepath.Join("..", "checker", "testdata", "queue-stale-status.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeRunDir(t, dir, h, checkedResults(h), "name: queue\nworkload: queue\n")
	if err := WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)
	b.open("file://" + filepath.Join(dir, ReportFile))
	var got struct {
		Rows     int      `json:"rows"`
		Holds    int      `json:"holds"`
		Selected []string `json:"selected"`
		Listed   []string `json:"listed"`
	}
	b.eval(`document.querySelector(".tasks .task-anom-mark").dispatchEvent(new MouseEvent("click", {bubbles: true}));
		({rows: document.querySelectorAll(".tasks text.tlabel[data-task]").length,
		  holds: document.querySelectorAll(".tasks rect.thold").length,
		  selected: Array.from(document.querySelectorAll(".tasks .selected")).map(e => e.getAttribute("class")).sort(),
		  listed: Array.from(document.querySelectorAll("li.anomaly.selected .kind")).map(e => e.textContent)})`, &got)
	if got.Rows != 1 || got.Holds != 2 {
		t.Errorf("task view has %d rows and %d holds, want 1 and 2", got.Rows, got.Holds)
	}
	want := []string{"task-anom k-stale-status selected", "task-anom-mark k-stale-status selected", "thold-named selected", "thold-named selected"}
	if !slices.Equal(got.Selected, want) {
		t.Errorf("selected in the task view: %q, want %q", got.Selected, want)
	}
	if !slices.Equal(got.Listed, []string{checker.StaleStatus}) {
		t.Errorf("selected in the list: %q, want the stale-status", got.Listed)
	}
	if dir := os.Getenv("REPORTS_SCREENSHOT_DIR"); dir != "" {
		if err := b.screenshotElement(".tasks", filepath.Join(dir, "tasks.png")); err != nil {
			t.Fatal(err)
		}
	}
}
