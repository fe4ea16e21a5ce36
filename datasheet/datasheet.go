// Package datasheet owns the safety datasheet of hunt campaigns
// (docs/matrix.md; `jepsen-lite matrix`, `make matrix`, `hunt --page`): the
// campaign files that `hunt --json` writes, their layout as rows of locks
// and columns of fault kinds, each cell's state and note, the schedules
// that replay the unsafe cells, and the page as Markdown and HTML.
package datasheet

import (
	"cmp"
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

// Output is where Render writes a datasheet.
type Output struct {
	// Markdown is the Markdown file; "" for the writer Render is given.
	Markdown string
	// HTML is the HTML file; "" for none.
	HTML string
	// Schedules is the directory of the unsafe cells' schedules, linked
	// from the page; "" for none.
	Schedules string
}

// ReadCampaigns reads the campaign files at paths, each row named by its
// file without .json; an error names the file. It refuses a file of one
// part of a campaign (hunt --shard): a row is a whole campaign, its parts
// merged first (hunt --merge, MergeParts).
func ReadCampaigns(paths []string) ([]*CampaignFile, []string, error) {
	var files []*CampaignFile
	var names []string
	for _, p := range paths {
		c, err := ReadCampaignFile(p)
		if err != nil {
			return nil, nil, err
		}
		if c.Shard != nil {
			return nil, nil, fmt.Errorf("%s holds part %d/%d of a campaign, not a whole one: merge its %d parts first (jepsen-lite hunt --merge FILE... --json FILE)", p, c.Shard.Index, c.Shard.Count, c.Shard.Count)
		}
		files = append(files, c)
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".json"))
	}
	return files, names, nil
}

// Render writes the datasheet to out: the schedules first (they are
// linked from the page), then the Markdown (to stdout when out names no
// file), then the HTML.
func (m *Sheet) Render(out Output, stdout io.Writer) error {
	if out.Schedules != "" {
		if err := m.WriteSchedules(out.Schedules, out.Markdown); err != nil {
			return err
		}
	}
	md := m.Markdown()
	if out.Markdown == "" {
		fmt.Fprint(stdout, md)
	} else if err := os.WriteFile(out.Markdown, []byte(md), 0o644); err != nil {
		return err
	}
	if out.HTML != "" {
		return m.WriteHTML(out.HTML)
	}
	return nil
}

// WritePage writes the one-row datasheet of campaign cf into dir (hunt
// --page): datasheet.md, datasheet.html and each unsafe cell's schedule,
// titled by the lock (the external client's program, else the target).
func WritePage(dir string, cf *CampaignFile) error {
	name := strings.TrimSuffix(filepath.Base(cf.Target), ".yaml")
	if words := strings.Fields(cf.LockCommand); len(words) > 0 {
		name = filepath.Base(words[len(words)-1])
	}
	m := Build([]*CampaignFile{cf}, []string{name})
	m.Title = "Safety datasheet: " + name
	m.Intro = fmt.Sprintf("Which fault kinds %s survived and which broke it, measured by one `jepsen-lite hunt %s` campaign (docs/hunt.md).", name, cf.Target)
	md := filepath.Join(dir, "datasheet.md")
	return m.Render(Output{Markdown: md, HTML: filepath.Join(dir, "datasheet.html"), Schedules: dir}, io.Discard)
}

// WriteHTML writes the datasheet as one HTML page to path.
func (m *Sheet) WriteHTML(path string) error {
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

// ShrunkFile is the scenario `jepsen-lite shrink` writes into a failing
// run's directory; a cell whose failing run has one replays it.
const ShrunkFile = "shrunk.yaml"

// The states of a datasheet cell.
const (
	cellSafe       = "safe"
	cellUnsafe     = "unsafe"
	cellUndecided  = "not decided"
	cellNotApplies = "n/a"
)

// Cell is one row's result for one fault kind.
type Cell struct {
	State string
	// Runs, Invalid and Unknown are the row's counts for the kind.
	Runs, Invalid, Unknown int
	Anomalies              []string
	// Why says why the kind does not apply (State cellNotApplies).
	Why string
	// GaveUp, when not empty, says that the kind's runs stopped after
	// hunt.MaxSetupFailures of them in a row failed their setup
	// (hunt.Row.SetupGaveUp): the cell is made of fewer runs, those
	// unknown among them.
	GaveUp string
	// Failing is the directory of the first failing run that shrink
	// reduced, else of the first failing run; Sentence its first anomaly's
	// message and Found the anomaly kinds it found; Schedule the link to
	// its schedule (set by WriteSchedules) and Shrunk whether that is a
	// shrunk scenario.
	Failing  string
	Sentence string
	Found    []string
	Schedule string
	Shrunk   bool
	// Kind is the cell's fault kind and Anchor names its note.
	Kind, Anchor string
}

// Row is one campaign.
type Row struct {
	Name     string
	Campaign *CampaignFile
	Cells    []*Cell
}

// Sheet is the datasheet: rows of campaigns, columns of fault kinds.
type Sheet struct {
	// Title heads the page and Intro says what it is; how to read it
	// follows (matrixReading).
	Title, Intro string
	Kinds        []string
	Rows         []*Row
}

// Build lays the campaigns out: the kinds any of them hunted with, in
// the declarations' order with NoFault first, and one cell per row and kind.
func Build(files []*CampaignFile, names []string) *Sheet {
	seen := map[string]bool{}
	for _, c := range files {
		for _, r := range c.Report.Rows {
			seen[r.Fault] = true
		}
		for _, f := range c.Faults {
			seen[f] = true
		}
	}
	m := &Sheet{Title: "Safety datasheet", Intro: matrixIntro}
	if seen[hunt.NoFault] {
		m.Kinds = append(m.Kinds, hunt.NoFault)
	}
	for _, f := range nemesis.Faults() {
		if name := f.Facts().Name; seen[name] {
			m.Kinds = append(m.Kinds, name)
		}
	}
	for i, c := range files {
		row := &Row{Name: names[i], Campaign: c}
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
func cellOf(c *CampaignFile, kind string) *Cell {
	i := slices.IndexFunc(c.Report.Rows, func(r *hunt.Row) bool { return r.Fault == kind })
	if i < 0 {
		return &Cell{State: cellNotApplies, Why: notDeclared(c, kind)}
	}
	r := c.Report.Rows[i]
	cell := &Cell{Runs: r.Runs, Invalid: r.Invalid, Unknown: r.Unknown, Anomalies: r.Anomalies, GaveUp: r.SetupGaveUp}
	switch {
	case r.Runs == 0 && r.NotApplicable != "":
		cell.State, cell.Why = cellNotApplies, r.NotApplicable
	case r.Invalid > 0:
		cell.State = cellUnsafe
		if len(r.Failing) > 0 {
			// The run that shrink reduced (its store's shrunk.yaml, or
			// the campaign file's word when the store is gone), or else
			// the first failing run.
			at := max(slices.Index(r.Failing, r.Shrunk), 0)
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
func notDeclared(c *CampaignFile, kind string) string {
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

// WriteSchedules writes each unsafe cell's schedule into dir, as
// <row>-<fault>.yaml, and links it relative to the page at out: the
// failing run's shrunk.yaml when there is one, else its stored scenario
// with the expectation of the anomalies the row found.
func (m *Sheet) WriteSchedules(dir, out string) error {
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
func failingSchedule(row *Row, cell *Cell) ([]byte, bool, error) {
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
invalid; runs whose setup failed, whose fault failed, whose check ran out of time or whose
lock client answered none of some worker's calls are counted as unknown), not decided (every run unknown), or n/a (with why).
A cell marked "fewer runs" is of a kind whose runs stopped after their setups failed in a row (its note says how many and why).
A safe cell is what n runs showed, not a proof. What each fault kind does
is in ` + "`jepsen-lite list --faults`" + `; a client-pause is drawn with its worker's
links cut for the pause (option isolate: a stop-the-world pause of the
whole client, whose library's heartbeats and keep-alives stop reaching the
servers too) or without (a built-in Go lock's worker stops its calls while
its library's background work goes on); an external client's pause
stops its whole process either way.`

// Markdown is the datasheet as Markdown.
func (m *Sheet) Markdown() string {
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
		fmt.Fprintf(&b, "- **%s**: %s on %s (%s, %d node%s), %d workers, %v lease, %v runs; `jepsen-lite hunt %s`, seeds %d.., %s, %s backend; %d runs in %v%s%s.\n",
			row.Name, lock, c.System, cmp.Or(c.Topology, "default topology"), c.Nodes, plural(c.Nodes), c.Workers, c.TTL, c.Duration, c.Target, c.Seed, how, c.Backend, c.Report.Runs, c.Report.Elapsed.Round(time.Second), made(c), finished(c.Finished))
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
				if cell.GaveUp != "" {
					s += " " + cell.GaveUpText()
				}
				notes = append(notes, s)
			case cellNotApplies:
				notes = append(notes, fmt.Sprintf("<a id=\"%s\"></a>**%s × %s**: not applicable: %s.", cell.Anchor, row.Name, m.Kinds[k], strings.TrimSuffix(cell.Why, ".")))
			default:
				if cell.GaveUp != "" {
					notes = append(notes, fmt.Sprintf("<a id=\"%s\"></a>**%s × %s**: %s", cell.Anchor, row.Name, m.Kinds[k], cell.GaveUpText()))
				}
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

// GaveUpText is the sentence of a cell whose kind's runs stopped after
// failed setups (GaveUp).
func (c *Cell) GaveUpText() string {
	return fmt.Sprintf("Its runs after these %d were not made: %s.", c.Runs, strings.TrimSuffix(c.GaveUp, "."))
}

// short is the cell's text in the table, with a link to its note when
// its kind's runs stopped after failed setups (GaveUp).
func (c *Cell) short() string {
	s := c.state()
	if c.GaveUp != "" && c.State != cellNotApplies {
		s += fmt.Sprintf(" ([fewer runs](#%s))", c.Anchor)
	}
	return s
}

// state is the cell's state and counts in the table.
func (c *Cell) state() string {
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

// made says how the campaign was made when not in one piece to its end,
// after its time: " (the sum of its 4 parts' times, merged)", " (ended
// early: interrupted)"; empty otherwise.
func made(c *CampaignFile) string {
	var s []string
	if c.MergedParts > 0 {
		s = append(s, fmt.Sprintf("the sum of its %d parts' times, merged", c.MergedParts))
	}
	if c.EndedEarly != "" {
		s = append(s, "ended early: "+c.EndedEarly)
	}
	if len(s) == 0 {
		return ""
	}
	return " (" + strings.Join(s, "; ") + ")"
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
{{range .Rows}}<tr><th>{{.Name}}</th>{{range .Cells}}{{if eq .State "unsafe"}}<td class="unsafe"><a href="#{{.Anchor}}">unsafe {{.Invalid}}/{{.Runs}}</a><br>{{join .Anomalies ", "}}</td>{{else if eq .State "safe"}}<td class="safe">safe 0/{{.Runs}}{{if .Unknown}} ({{.Unknown}} unknown){{end}}{{if .GaveUp}} (<a href="#{{.Anchor}}">fewer runs</a>){{end}}</td>{{else if eq .State "not decided"}}<td class="undecided">not decided: {{.Unknown}}/{{.Runs}} unknown{{if .GaveUp}} (<a href="#{{.Anchor}}">fewer runs</a>){{end}}</td>{{else}}<td class="na" title="{{.Why}}">n/a</td>{{end}}{{end}}</tr>
{{end}}</table>
<ul>
{{range .Rows}}{{$row := .}}{{range .Cells}}{{if eq .State "unsafe"}}<li id="{{.Anchor}}"><b>{{$row.Name}} × {{.Kind}}</b>: unsafe in {{.Invalid}} of {{.Runs}} runs ({{join .Anomalies ", "}}). {{.Sentence}}{{if .Schedule}} Schedule: <a href="{{.Schedule}}">{{.Schedule}}</a>{{end}}{{if .GaveUp}} {{.GaveUpText}}{{end}}</li>
{{else if eq .State "n/a"}}<li id="{{.Anchor}}"><b>{{$row.Name}} × {{.Kind}}</b>: not applicable: {{.Why}}</li>
{{else if .GaveUp}}<li id="{{.Anchor}}"><b>{{$row.Name}} × {{.Kind}}</b>: {{.GaveUpText}}</li>
{{end}}{{end}}{{end}}</ul>
</body></html>
`))
