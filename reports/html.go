package reports

import (
	"bufio"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
)

//go:embed assets
var assets embed.FS

// reportFileTmpName is where WriteHTML writes before renaming.
const reportFileTmpName = ".report.html.tmp"

// Link is a file of the run directory that the report links to, by a path
// relative to the report.
type Link struct {
	Name string
	Href string
}

// ReportInput is everything report.html shows.
type ReportInput struct {
	Results Results
	History history.History
	// Description is the scenario's description, shown under its name.
	Description string
	// Scenario is the text of the resolved scenario.yaml, shown folded.
	Scenario string
	// Links are the run's files the report links to (history.jsonl,
	// results.json, linearizability.html, logs), in display order.
	Links []Link
	// Facts is the checker's analysis of History (checker.CheckAnalyzed)
	// when the caller has it; nil has the report analyze History itself.
	Facts *checker.Facts
	// Summary, when set, is the history in summary (SummarizeFile), for a
	// long one (more than LongHistoryOps ops): the report draws it
	// downsampled, with the full detail around every anomaly, and reads
	// neither History nor Facts.
	Summary *Summary
}

// WriteHTML writes <runDir>/report.html from the run's results.json,
// history.jsonl and scenario.yaml, as the offline `report` command does. A
// missing history gives a report without timeline; a missing results.json
// is an error.
func WriteHTML(runDir string) error {
	in, err := LoadReportInput(runDir)
	if err != nil {
		return err
	}
	return WriteReport(runDir, in)
}

// WriteReport writes <runDir>/report.html for in, which a run that has its
// results, history and analysis in memory gives as they are, so that
// nothing is read back from the store. The file is written under a
// temporary name and renamed, so a reader never sees half a report.
func WriteReport(runDir string, in ReportInput) error {
	tmp := filepath.Join(runDir, reportFileTmpName)
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = RenderHTML(w, in)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(runDir, ReportFile))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("reports: writing %s: %w", ReportFile, err)
	}
	return nil
}

// LoadReportInput reads what WriteHTML renders from a run directory: its
// history whole, or, for a history longer than LongHistoryOps ops, in
// summary (SummarizeFile), read op by op.
func LoadReportInput(runDir string) (ReportInput, error) {
	var in ReportInput
	b, err := os.ReadFile(filepath.Join(runDir, ResultsFile))
	if err != nil {
		return in, fmt.Errorf("reports: %w", err)
	}
	if err := json.Unmarshal(b, &in.Results); err != nil {
		return in, fmt.Errorf("reports: %s: %w", ResultsFile, err)
	}
	guarded := false
	if b, err := os.ReadFile(filepath.Join(runDir, ScenarioFile)); err == nil {
		in.Scenario = string(b)
		in.Description = scenarioDescription(b)
		// the timeline draws the checker's apply intervals, so it drops
		// what the checkers drop
		guarded = scenarioField(b, "resource") == "guarded"
	}
	path := filepath.Join(runDir, HistoryFile)
	long, err := isLong(path, &in.Results)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return in, fmt.Errorf("reports: %w", err)
	case long:
		s, err := SummarizeFile(path, &in.Results, guarded)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return in, err
		}
		in.Summary = s
	default:
		h, err := readHistory(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return in, err
		}
		in.History = h
		history.DropReplyTimes(in.History, guarded)
	}
	in.Links = RunLinks(runDir)
	return in, nil
}

// readHistory decodes a history.jsonl file. An incomplete last line (a run
// that died while writing) is left out.
func readHistory(path string) (history.History, error) {
	h, _, err := history.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	return h, nil
}

// scenarioDescription reads the description field of a scenario file.
func scenarioDescription(b []byte) string { return scenarioField(b, "description") }

// scenarioField reads a top-level string field of a scenario file.
func scenarioField(b []byte, name string) string {
	var m map[string]any
	if yaml.Unmarshal(b, &m) != nil {
		return ""
	}
	s, _ := m[name].(string)
	return strings.TrimSpace(s)
}

// RunLinks lists the files of runDir that the report links to.
func RunLinks(runDir string) []Link {
	var out []Link
	for _, name := range []string{HistoryFile, ResultsFile, LinearizabilityFile, ScenarioFile, NemesisFile, RunLogFile, JUnitFile} {
		if st, err := os.Stat(filepath.Join(runDir, name)); err == nil && !st.IsDir() {
			out = append(out, Link{Name: name, Href: name})
		}
	}
	logs, _ := filepath.Glob(filepath.Join(runDir, "*.log"))
	sort.Strings(logs)
	for _, p := range logs {
		name := filepath.Base(p)
		if name != RunLogFile {
			out = append(out, Link{Name: name, Href: name})
		}
	}
	return out
}

var reportTemplate = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"seconds":   func(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) },
	"elapsed":   func(d time.Duration) string { return d.Round(time.Microsecond).String() },
	"follows":   follows,
	"followers": followersText,
}).ParseFS(assets, "assets/report.html.tmpl"))

// follows counts the anomalies that follow from the causes of as
// (checker.Anomaly.Follows).
func follows(as []checker.Anomaly) int {
	n := 0
	for _, a := range as {
		n += a.Follows
	}
	return n
}

// followersText lists the ops of the first few anomalies that follow from
// a's cause: "[1 9], [1 12], [1 15], …".
func followersText(a anomalyJSON) string {
	return checker.Anomaly{Followers: a.Followers}.FollowersOps(5, "…")
}

// reportView is the data of report.html.tmpl.
type reportView struct {
	In        ReportInput
	Title     string
	Duration  time.Duration
	Verdict   checker.Verdict
	Expected  string
	Met       bool
	HasExpect bool
	Checkers  []checker.Result
	Anomalies []anomalyJSON
	// Margins are the lines of the run's margins, a line per key.
	Margins    []marginLine
	Throughput *plot
	Latency    []plot
	// Tasks is the task view of a queue run; nil for a lock run.
	Tasks  *taskView
	Legend []legendEntry
	// Bands are the legend entries of the shaded bands drawn beside the
	// faults: liveness windows and nodes down.
	Bands []legendEntry
	// LivenessWord says what the liveness report found, in a few words.
	LivenessWord string
	Generated    string
	CSS          template.CSS
	JS           template.JS
	Data         template.JS
	// Long is set when the timeline is drawn in summary; LongOps is then
	// the history's length and DetailOps the number of ops drawn in full
	// detail.
	Long               bool
	LongOps, DetailOps int
}

type legendEntry struct{ Class, Label string }

// classLabels name the fault classes (history.FaultClasses) in the legend;
// report.css colours each (nem-<class>). The legend names after each the
// faults of that class the timeline draws.
var classLabels = map[history.FaultClass]string{
	history.ClassNetwork:     "network fault",
	history.ClassPause:       "node paused",
	history.ClassKill:        "node killed",
	history.ClassClock:       "clock skew",
	history.ClassClientPause: "client pause",
	history.ClassFailover:    "failover",
	history.ClassOther:       "other fault",
}

// faultLegend returns the legend of the faults drawn: one entry per class
// drawn, in the order of history.FaultClasses, naming its faults in the
// order they first appear.
func faultLegend(drawn []nemesisInterval) []legendEntry {
	names := map[string][]string{}
	for _, iv := range drawn {
		if !slices.Contains(names[iv.Class], iv.Fault) {
			names[iv.Class] = append(names[iv.Class], iv.Fault)
		}
	}
	var out []legendEntry
	for _, c := range history.FaultClasses() {
		if fs := names[string(c)]; len(fs) > 0 {
			out = append(out, legendEntry{string(c), classLabels[c] + " (" + strings.Join(fs, ", ") + ")"})
		}
	}
	return out
}

// The legend entries of the bands, by class (report.css).
var bandLabels = []legendEntry{
	{"live-stuck", "stuck: nobody took the lock again (the checker's window)"},
	{"live-unavailable", "unavailable: refused while a majority of nodes was up (the checker's window)"},
	{"avail-maj", "nodes down, a majority up (availability record)"},
	{"avail-min", "a majority of nodes down (availability record)"},
	{"host-step", "the host's wall clock stepped (host record)"},
	{"host-stall", "the harness stalled (host record)"},
	{"step-not-run", "a step of the schedule not run: the run ended before its time"},
	{"step-late", "a step carried out late: from its time to when it took effect"},
}

// reportData is the JSON embedded in report.html for report.js.
type reportData struct {
	Timeline  timelineJSON  `json:"timeline"`
	Anomalies []anomalyJSON `json:"anomalies"`
	// Margins are the ops and windows of the margins, in the order of
	// their parts (marginPart.Q).
	Margins []anomalyJSON `json:"margins,omitempty"`
}

// RenderHTML writes a self-contained report.html for in to w: every style,
// script and figure is inline, so the file opens from disk with no network.
// A history given in summary (in.Summary) is drawn downsampled, with the
// full detail around every anomaly.
func RenderHTML(w io.Writer, in ReportInput) error {
	checkers := reportCheckers(in.Results)
	margins := marginResult(in.Results.Margins)
	named := namedOps(append(slices.Clip(checkers), margins))
	var v reportView
	var data reportData
	if s := in.Summary; s != nil {
		s.finish()
		tl := s.tl
		v = newReportView(in, checkers, tl, s.detail.ops)
		v.Long, v.LongOps, v.DetailOps = true, s.ops, len(s.detail.ops)
		v.Throughput, v.Latency = s.plots.plots(tl.Last, mergedNemesis(tl.Nemesis, tl.Last/1200))
		tasks, err := s.taskView(tl, v.Anomalies)
		if err != nil {
			return err
		}
		v.Tasks = tasks
		data = reportData{Timeline: tl.compact(named), Anomalies: v.Anomalies, Margins: anomalyWindows([]checker.Result{margins}, s.detail.ops, tl)}
		data.Timeline.Summary = s.json()
	} else {
		facts := in.Facts
		if facts == nil {
			facts = checker.Analyze(in.History)
		}
		tl := timelineOf(in.History, facts)
		v = newReportView(in, checkers, tl, in.History)
		v.Throughput, v.Latency = buildPlots(in.History, tl.Last, tl.Nemesis)
		v.Tasks = buildTaskView(in.History, tl.facts.Queue, tl.End, tl.Nemesis, v.Anomalies)
		data = reportData{Timeline: tl.compact(named), Anomalies: v.Anomalies, Margins: anomalyWindows([]checker.Result{margins}, in.History, tl)}
	}
	return renderView(w, v, data)
}

// reportCheckers returns the checkers' results of r that the report lists,
// with the liveness report's stuck keys and unavailable windows listed
// like anomalies, under their own checker's name.
func reportCheckers(r Results) []checker.Result {
	checkers := r.Checkers
	if l := r.Liveness; l != nil && len(l.Anomalies) > 0 {
		// their windows (the checker's) are shaded on the timeline
		checkers = append(slices.Clip(checkers), checker.Result{Name: anomaly.CheckerLiveness, Verdict: l.Verdict, Anomalies: l.Anomalies, Note: "apart from the verdict"})
	}
	return checkers
}

// newReportView returns the view of in whose timeline is tl, drawn from
// the ops of h (the whole history, or the detail windows of a summary).
func newReportView(in ReportInput, checkers []checker.Result, tl timeline, h history.History) reportView {
	v := reportView{
		In:        in,
		Title:     in.Results.Scenario,
		Duration:  tl.Last,
		Verdict:   in.Results.Verdict,
		Met:       in.Results.ExpectationMet,
		Checkers:  checkers,
		Anomalies: anomalyWindows(checkers, h, tl),
		Margins:   marginLines(in.Results.Margins),
	}
	if v.Title == "" {
		v.Title = "run"
	}
	if e := in.Results.Expected; e != nil {
		v.HasExpect = true
		v.Expected = string(e.Verdict)
		if v.Expected == "" {
			v.Expected = string(checker.Valid)
		}
		if len(e.Anomalies) > 0 {
			v.Expected += " with " + strings.Join(e.Anomalies, ", ")
		}
	}
	v.Legend = faultLegend(tl.Nemesis)
	classes := map[string]bool{}
	if l := in.Results.Liveness; l != nil {
		v.LivenessWord = l.Summary()
		for _, a := range l.Anomalies {
			if a.Window != nil {
				classes["live-"+a.Kind] = true
			}
		}
	}
	for _, b := range tl.Availability {
		if b.Majority() {
			classes["avail-maj"] = true
		} else {
			classes["avail-min"] = true
		}
	}
	for _, e := range tl.Host {
		if e.Kind == history.FClockStep {
			classes["host-step"] = true
		} else {
			classes["host-stall"] = true
		}
	}
	for _, iv := range tl.Nemesis {
		classes["step-not-run"] = classes["step-not-run"] || iv.NotRun
		classes["step-late"] = classes["step-late"] || iv.Late > 0 || iv.HealLate > 0
	}
	for _, l := range bandLabels {
		if classes[l.Class] {
			v.Bands = append(v.Bands, l)
		}
	}
	return v
}

// renderView writes the page of v with the data report.js reads.
func renderView(w io.Writer, v reportView, data reportData) error {
	css, err := assets.ReadFile("assets/report.css")
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	js, err := assets.ReadFile("assets/report.js")
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("reports: encoding report data: %w", err)
	}
	v.CSS, v.JS, v.Data = template.CSS(css), template.JS(js), template.JS(b)
	if err := reportTemplate.Execute(w, v); err != nil {
		return fmt.Errorf("reports: rendering %s: %w", ReportFile, err)
	}
	return nil
}
