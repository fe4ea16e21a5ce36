package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/gate"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

const matrixUsage = `Usage: jepsen-lite matrix [--out FILE] [--html FILE] [--schedules DIR] campaign.json...

Renders the safety datasheet of hunt campaigns (hunt --json FILE): one row
per campaign file (named by the file, without .json), one column per fault
kind any of them hunted with, in the declarations' order (list --faults),
no fault first. Every cell is one of:

  safe         no run of the kind was invalid: 0/n, with how many runs were
               unknown (a fault that failed, a check out of time);
  unsafe       k/n runs were invalid, with the anomalies they found; a note
               under the table gives the first failing run's first anomaly
               in the checker's words and its schedule;
  not decided  every run was unknown;
  n/a          the kind cannot run on the row's lock, and why: the cluster
               said so (a failover without a replica), or the fault is not
               declared for the lock's system (the system's own reason where
               it gives one: etcd's clock cannot be skewed).

With --schedules DIR each unsafe cell's schedule is written to
DIR/<row>-<fault>.yaml and linked: the shrunk.yaml of the first of the
kind's failing runs that 'jepsen-lite shrink' reduced, else the first
failing run's own stored scenario (its exact fault steps and seed),
expecting the anomalies it found. Either runs
as 'jepsen-lite run DIR/<row>-<fault>.yaml'. A campaign file holds its
failing runs' first anomalies, so once their store is gone the page is
made again from the files alone: each note quotes the file, and each
schedule written before stays.

--out writes Markdown (default: standard output); --html writes the same
page as HTML.

Exit 0 when the page was written, 254 for a missing or malformed campaign
file.

Examples:
  jepsen-lite hunt redlock --runs 10 --json build/redlock.json
  jepsen-lite matrix build/*.json --out docs/matrix.md --schedules docs/matrix`

// matrixCmd renders the datasheet of campaign files.
func matrixCmd(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("matrix", matrixUsage, stderr)
	out := fs.String("out", "", "write the datasheet as Markdown to this file (default: standard output)")
	htmlOut := fs.String("html", "", "write the datasheet as HTML to this file")
	schedules := fs.String("schedules", "", "write each unsafe cell's schedule into this directory and link it")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	if len(pos) == 0 {
		return exitUsage, usagef("want at least one campaign file (hunt --json FILE)")
	}
	var files []*campaignFile
	var names []string
	for _, p := range pos {
		c, err := readCampaignFile(p)
		if err != nil {
			return exitUsage, usageError{err}
		}
		files = append(files, c)
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".json"))
	}
	m := buildMatrix(files, names)
	if *schedules != "" {
		if err := m.writeSchedules(*schedules, *out); err != nil {
			return exitInternal, err
		}
	}
	md := m.markdown()
	if *out == "" {
		fmt.Fprint(stdout, md)
	} else if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		return exitInternal, err
	}
	if *htmlOut != "" {
		if err := m.writeHTML(*htmlOut); err != nil {
			return exitInternal, err
		}
	}
	return exitHeld, nil
}

// writeHTML writes the datasheet as one HTML page to path.
func (m *matrix) writeHTML(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = matrixPage.Execute(f, m)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// The states of a datasheet cell.
const (
	cellSafe       = "safe"
	cellUnsafe     = "unsafe"
	cellUndecided  = "not decided"
	cellNotApplies = "n/a"
)

// matrixCell is one row's result for one fault kind.
type matrixCell struct {
	State string
	// Runs, Invalid and Unknown are the row's counts for the kind.
	Runs, Invalid, Unknown int
	Anomalies              []string
	// Why says why the kind does not apply (State cellNotApplies).
	Why string
	// Failing is the directory of the first failing run that shrink
	// reduced, else of the first failing run; Sentence its first anomaly's
	// message and Found the anomaly kinds it found; Schedule the link to
	// its schedule (set by writeSchedules) and Shrunk whether that is a
	// shrunk scenario.
	Failing  string
	Sentence string
	Found    []string
	Schedule string
	Shrunk   bool
	// Kind is the cell's fault kind and Anchor names its note.
	Kind, Anchor string
}

// matrixRow is one campaign.
type matrixRow struct {
	Name     string
	Campaign *campaignFile
	Cells    []*matrixCell
}

// matrix is the datasheet: rows of campaigns, columns of fault kinds.
type matrix struct {
	// Title heads the page and Intro says what it is; how to read it
	// follows (matrixReading).
	Title, Intro string
	Kinds        []string
	Rows         []*matrixRow
}

// buildMatrix lays the campaigns out: the kinds any of them hunted with, in
// the declarations' order with NoFault first, and one cell per row and kind.
func buildMatrix(files []*campaignFile, names []string) *matrix {
	seen := map[string]bool{}
	for _, c := range files {
		for _, r := range c.Report.Rows {
			seen[r.Fault] = true
		}
		for _, f := range c.Faults {
			seen[f] = true
		}
	}
	m := &matrix{Title: "Safety datasheet", Intro: matrixIntro}
	if seen[hunt.NoFault] {
		m.Kinds = append(m.Kinds, hunt.NoFault)
	}
	for _, f := range nemesis.Faults() {
		if name := f.Facts().Name; seen[name] {
			m.Kinds = append(m.Kinds, name)
		}
	}
	for i, c := range files {
		row := &matrixRow{Name: names[i], Campaign: c}
		for _, kind := range m.Kinds {
			cell := cellOf(c, kind)
			cell.Kind, cell.Anchor = kind, names[i]+"-"+kind
			row.Cells = append(row.Cells, cell)
		}
		m.Rows = append(m.Rows, row)
	}
	return m
}

// cellOf is campaign c's cell for kind.
func cellOf(c *campaignFile, kind string) *matrixCell {
	i := slices.IndexFunc(c.Report.Rows, func(r *hunt.Row) bool { return r.Fault == kind })
	if i < 0 {
		return &matrixCell{State: cellNotApplies, Why: notDeclared(c, kind)}
	}
	r := c.Report.Rows[i]
	cell := &matrixCell{Runs: r.Runs, Invalid: r.Invalid, Unknown: r.Unknown, Anomalies: r.Anomalies}
	switch {
	case r.Runs == 0 && r.NotApplicable != "":
		cell.State, cell.Why = cellNotApplies, r.NotApplicable
	case r.Invalid > 0:
		cell.State = cellUnsafe
		if len(r.Failing) > 0 {
			// The first failing run, or the first that shrink reduced.
			at := 0
			for j, dir := range r.Failing {
				if _, err := os.Stat(filepath.Join(dir, ShrunkFile)); err == nil {
					at = j
					break
				}
			}
			cell.Failing = r.Failing[at]
			cell.Sentence, cell.Found = failingFindings(cell.Failing, r.Anomalies)
			if cell.Sentence == "" && at < len(r.Findings) {
				// The run's store is gone: the campaign file's own words.
				cell.Sentence = r.Findings[at]
			}
		}
	case r.Runs == 0 || r.Unknown == r.Runs:
		cell.State = cellUndecided
	default:
		cell.State = cellSafe
	}
	return cell
}

// notDeclared says why a campaign did not hunt with kind: the fault is not
// declared for its system (with the system's own reason for a clock fault),
// or the campaign was not asked for it.
func notDeclared(c *campaignFile, kind string) string {
	f, err := nemesis.Lookup(kind)
	if err != nil {
		return "not a fault kind of this version"
	}
	facts := f.Facts()
	if len(facts.Systems) > 0 && !slices.Contains(facts.Systems, c.System) {
		if sys, err := cluster.LookupSystem(c.System); err == nil && facts.Class == history.ClassClock && sys.NoClockSkew != "" {
			return sys.NoClockSkew
		}
		return fmt.Sprintf("the fault is declared for %s only", strings.Join(facts.Systems, ", "))
	}
	return "not in the campaign's --faults"
}

// failingFindings reads the results of the failing run in dir once and
// returns its first anomaly's sentence and the kinds it found; when they
// cannot be read, no sentence and the row's kinds.
func failingFindings(dir string, rowKinds []string) (string, []string) {
	res, err := reports.ReadResults(dir)
	if err != nil {
		return "", rowKinds
	}
	return checker.FirstFinding(res.Checkers), gate.AnomalyKinds(res.Checkers)
}

// writeSchedules writes each unsafe cell's schedule into dir, as
// <row>-<fault>.yaml, and links it relative to the page at out: the
// failing run's shrunk.yaml when there is one, else its stored scenario
// with the expectation of the anomalies the row found.
func (m *matrix) writeSchedules(dir, out string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, row := range m.Rows {
		for _, cell := range row.Cells {
			if cell.State != cellUnsafe || cell.Failing == "" {
				continue
			}
			file := filepath.Join(dir, cell.Anchor+".yaml")
			data, shrunk, err := failingSchedule(row, cell)
			switch kept, kerr := keptSchedule(file); {
			case err != nil && errors.Is(err, fs.ErrNotExist) && kerr == nil:
				// The run's store is gone; the schedule written from it
				// when it was there stays.
				shrunk = kept
			case err != nil:
				return err
			default:
				if err := os.WriteFile(file, data, 0o644); err != nil {
					return err
				}
			}
			cell.Shrunk = shrunk
			cell.Schedule = file
			if out != "" {
				if rel, err := filepath.Rel(filepath.Dir(out), file); err == nil {
					cell.Schedule = rel
				}
			}
		}
	}
	return nil
}

// keptSchedule reads a cell's schedule written earlier, and says whether it
// is a shrunk one (its tag shrunk).
func keptSchedule(file string) (shrunk bool, err error) {
	sc, err := scenarios.Load(file, runner.Names())
	if err != nil {
		return false, err
	}
	return slices.Contains(sc.Tags, "shrunk"), nil
}

// failingSchedule returns the schedule of the cell's failing run: its
// shrunk.yaml when shrink made one, else its stored scenario, renamed for
// the cell, expecting invalid with the anomalies the run found.
func failingSchedule(row *matrixRow, cell *matrixCell) ([]byte, bool, error) {
	runDir, kind, found := cell.Failing, cell.Kind, cell.Found
	if _, err := os.Stat(runDir); err != nil {
		return nil, false, fmt.Errorf("matrix: the failing run: %w", err)
	}
	if b, err := os.ReadFile(filepath.Join(runDir, ShrunkFile)); err == nil {
		return b, true, nil
	}
	sc, err := scenarios.Load(filepath.Join(runDir, "scenario.yaml"), runner.Names())
	if err != nil {
		return nil, false, fmt.Errorf("matrix: %s: %w", runDir, err)
	}
	sc.Name = "matrix-" + cell.Anchor
	sc.Tags = []string{"matrix", "hunt", kind}
	sc.Description = fmt.Sprintf("A failing run of the datasheet's %s row under %s faults (docs/matrix.md): `jepsen-lite hunt %s` drew this schedule and workload from seed %d, and the run found %s. Its steps are the run's exact fault steps, not shrunk (jepsen-lite shrink %s makes a smaller case). It fails in %d of the %d runs of its kind; a rerun is not certain to fail, since the workers' interleaving is not deterministic.",
		row.Name, kind, row.Campaign.Target, sc.Seed, strings.Join(found, ", "), runDir, cell.Invalid, cell.Runs)
	sc.Expect = checker.Expectation{Verdict: checker.Invalid, Anomalies: found}
	b, err := scenarios.Marshal(sc)
	return b, false, err
}

// matrixIntro opens the datasheet of make matrix: what it is.
const matrixIntro = `Which fault kinds each lock survived and which broke it, measured by
` + "`jepsen-lite hunt`" + ` (docs/hunt.md) and written by ` + "`jepsen-lite matrix`" + ` from the
campaigns' files (` + "`hunt --json`" + `); ` + "`make matrix`" + ` makes this page again.`

// matrixReading says how to read a datasheet: its rows, columns and cells.
const matrixReading = `A row is a lock, a column a fault kind (` + "`jepsen-lite list --faults`" + `). A cell
is **unsafe** k/n (k of its n runs invalid, with the anomalies they
found; its note below gives the first failing run's first anomaly in the
checker's words and a schedule that replays it, shrunk where
` + "`jepsen-lite shrink`" + ` reduced it), safe 0/n (no run
invalid; runs whose fault failed or whose check ran out of time are
counted as unknown), not decided (every run unknown), or n/a (with why).
A safe cell is what n runs showed, not a proof. What each fault kind does
is in ` + "`jepsen-lite list --faults`" + `; a client-pause is drawn with its worker's
links cut for the pause (option isolate: a stop-the-world pause of the
whole client, whose library's heartbeats and keep-alives stop reaching the
servers too) or without (a built-in Go lock's worker stops its calls while
its library's background work goes on); an external client's pause
stops its whole process either way.`

// markdown is the datasheet as Markdown.
func (m *matrix) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s %s\n\n", m.Title, m.Intro, matrixReading)
	b.WriteString("| lock | " + strings.Join(m.Kinds, " | ") + " |\n|---|" + strings.Repeat("---|", len(m.Kinds)) + "\n")
	for _, row := range m.Rows {
		fmt.Fprintf(&b, "| %s |", row.Name)
		for _, cell := range row.Cells {
			fmt.Fprintf(&b, " %s |", cell.short())
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, row := range m.Rows {
		c := row.Campaign
		lock := "`" + c.Algorithm + "`"
		if c.LockCommand != "" {
			lock = "`" + c.LockCommand + "`"
		}
		how := "random schedules"
		if c.Report.Steer {
			how = "steered schedules"
		}
		fmt.Fprintf(&b, "- **%s**: %s on %s (%s, %d node%s), %d workers, %v lease, %v runs; `jepsen-lite hunt %s`, seeds %d.., %s, %s backend; %d runs in %v%s.\n",
			row.Name, lock, c.System, cmp.Or(c.Topology, "default topology"), c.Nodes, plural(c.Nodes), c.Workers, c.TTL, c.Duration, c.Target, c.Seed, how, c.Backend, c.Report.Runs, c.Report.Elapsed.Round(time.Second), finished(c.Finished))
	}
	var notes []string
	for _, row := range m.Rows {
		for k, cell := range row.Cells {
			switch cell.State {
			case cellUnsafe:
				s := fmt.Sprintf("<a id=\"%s\"></a>**%s × %s**: unsafe in %d of %d runs (%s).", cell.Anchor, row.Name, m.Kinds[k], cell.Invalid, cell.Runs, strings.Join(cell.Anomalies, ", "))
				if cell.Sentence != "" {
					which := "The first failing run"
					if cell.Shrunk {
						which = "The failing run shrunk"
					}
					s += " " + which + ": " + strings.TrimSuffix(cell.Sentence, ".") + "."
				}
				if cell.Schedule != "" {
					what := "its schedule, the run's own steps"
					if cell.Shrunk {
						what = "its shrunk schedule"
					}
					s += fmt.Sprintf(" Replay %s: [`%s`](%s).", what, filepath.Base(cell.Schedule), cell.Schedule)
				}
				notes = append(notes, s)
			case cellNotApplies:
				notes = append(notes, fmt.Sprintf("<a id=\"%s\"></a>**%s × %s**: not applicable: %s.", cell.Anchor, row.Name, m.Kinds[k], strings.TrimSuffix(cell.Why, ".")))
			}
		}
	}
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
	}
	return b.String()
}

// short is the cell's text in the table.
func (c *matrixCell) short() string {
	switch c.State {
	case cellUnsafe:
		return fmt.Sprintf("**unsafe** [%d/%d](#%s): %s", c.Invalid, c.Runs, c.Anchor, strings.Join(c.Anomalies, ", "))
	case cellSafe:
		if c.Unknown > 0 {
			return fmt.Sprintf("safe 0/%d (%d unknown)", c.Runs, c.Unknown)
		}
		return fmt.Sprintf("safe 0/%d", c.Runs)
	case cellUndecided:
		return fmt.Sprintf("not decided: %d/%d unknown", c.Unknown, c.Runs)
	default:
		return fmt.Sprintf("[n/a](#%s)", c.Anchor)
	}
}

// finished is ", finished <when>", or empty for a campaign file that does
// not say.
func finished(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return ", finished " + t.UTC().Format("2006-01-02 15:04 MST")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// matrixPage is the datasheet as one HTML page.
var matrixPage = template.Must(template.New("matrix").Funcs(template.FuncMap{
	"join": strings.Join,
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>jepsen-lite: {{.Title}}</title>
<style>
body{font-family:sans-serif;margin:1.5em}
table{border-collapse:collapse}
td,th{border:1px solid #bbb;padding:4px 6px;font-size:13px;vertical-align:top}
.safe{background:#e3f4e3}.unsafe{background:#f8d8d8}.na{background:#eee;color:#666}.undecided{background:#fff3c4}
</style></head><body>
<h1>{{.Title}}</h1>
<table><tr><th>lock</th>{{range .Kinds}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th>{{.Name}}</th>{{range .Cells}}{{if eq .State "unsafe"}}<td class="unsafe"><a href="#{{.Anchor}}">unsafe {{.Invalid}}/{{.Runs}}</a><br>{{join .Anomalies ", "}}</td>{{else if eq .State "safe"}}<td class="safe">safe 0/{{.Runs}}{{if .Unknown}} ({{.Unknown}} unknown){{end}}</td>{{else if eq .State "not decided"}}<td class="undecided">not decided: {{.Unknown}}/{{.Runs}} unknown</td>{{else}}<td class="na" title="{{.Why}}">n/a</td>{{end}}{{end}}</tr>
{{end}}</table>
<ul>
{{range .Rows}}{{$row := .}}{{range .Cells}}{{if eq .State "unsafe"}}<li id="{{.Anchor}}"><b>{{$row.Name}} × {{.Kind}}</b>: unsafe in {{.Invalid}} of {{.Runs}} runs ({{join .Anomalies ", "}}). {{.Sentence}}{{if .Schedule}} Schedule: <a href="{{.Schedule}}">{{.Schedule}}</a>{{end}}</li>
{{else if eq .State "n/a"}}<li id="{{.Anchor}}"><b>{{$row.Name}} × {{.Kind}}</b>: not applicable: {{.Why}}</li>
{{end}}{{end}}{{end}}</ul>
</body></html>
`))
