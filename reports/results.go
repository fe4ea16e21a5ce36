// Package reports owns what a run leaves behind: the on-disk run store
// (store/<scenario>/<timestamp>/, store/latest), results.json, report.html and
// junit.xml. It reads histories and checker results; it runs nothing.
package reports

import (
	"fmt"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// Stats counts a history's ops: Ops is every line, nemesis ops included;
// OK, Fail and Info count the completions of the workers' operations only
// (Info is how many operations had an unknown outcome and crashed their
// process).
type Stats struct {
	Ops  int `json:"ops"`
	OK   int `json:"ok"`
	Fail int `json:"fail"`
	Info int `json:"info"`
}

// CountStats counts h.
func CountStats(h history.History) Stats {
	s := Stats{Ops: len(h)}
	if len(h) > 0 && h[0].IsHeader() {
		s.Ops--
	}
	for _, op := range h {
		if op.IsNemesis() {
			continue
		}
		switch op.Type {
		case history.OK:
			s.OK++
		case history.Fail:
			s.Fail++
		case history.Info:
			s.Info++
		}
	}
	return s
}

// Results is the document written to results.json and printed by
// `jepsen-lite check --json` (docs/design.md §8).
type Results struct {
	Scenario string `json:"scenario"`
	// Lock names the lock under test: the scenario's algorithm, or the
	// name of a Go Locker of the caller's own (OwnLock).
	Lock string `json:"lock,omitempty"`
	// OwnLock is set when Lock is a Go Locker of the caller's own
	// (runner.WithLockerNamed), which only Go code can run again.
	OwnLock bool   `json:"own_lock,omitempty"`
	Seed    uint64 `json:"seed"`
	// HistoryVersion is the format version of the history checked
	// (history.Version): 1 for histories without a header op.
	HistoryVersion int                  `json:"history_version"`
	Verdict        checker.Verdict      `json:"verdict"`
	Expected       *checker.Expectation `json:"expected,omitempty"`
	ExpectationMet bool                 `json:"expectation_met"`
	Checkers       []checker.Result     `json:"checkers"`
	// Liveness is the liveness verdict (checker.Liveness) with its stuck
	// keys and unavailable windows, apart from Verdict: neither makes a run
	// invalid, and only the expectation's liveness judges them. Absent
	// when the run was interrupted.
	Liveness *checker.LivenessResult `json:"liveness,omitempty"`
	Stats    Stats                   `json:"stats"`
	// Margins are the run's safety margins, one entry per key granted or
	// written (checker.Margins, docs/history.md §4.8): how close it came
	// to a violation, by the checkers' own definitions. Absent when the
	// history was not checked.
	Margins []checker.Margin `json:"margins,omitempty"`
	// Truncated is set when the history ended in an incomplete line that was
	// left out of the check.
	Truncated bool `json:"truncated,omitempty"`
	// FailedFaults lists every fault and heal of the run that failed, in
	// whole or in part (docs/history.md §1, "Faults that failed"). One
	// that its scenario step did not expect makes the run's outcome
	// unknown: the run did not do what its scenario said.
	FailedFaults []FailedFault `json:"failed_faults,omitempty"`
	// StepIssues lists every step of the run's schedule that did not run
	// as written (docs/history.md §1, "Steps that did not run as
	// written"): never reached, or carried out late. One that its step did
	// not allow (expect-failure) makes the run's outcome unknown, as a
	// failed fault does.
	StepIssues []StepIssue `json:"step_issues,omitempty"`
	// HostEvents lists what the history's host records say (docs/history.md
	// §1, "The host records"): each step of the host's wall clock against
	// its monotonic clock, and each stall of the harness, seen while the run
	// drove its workload, at most MaxHostEvents of them (HostEventsLeftOut
	// counts the others). They change no verdict; a finding whose window
	// one overlaps says so (checker.Anomaly.Host).
	HostEvents        []HostEvent `json:"host_events,omitempty"`
	HostEventsLeftOut int         `json:"host_events_left_out,omitempty"`
	// SetupError is set when the run could not start (a server would not
	// start, a lock client could not connect): the run recorded nothing to
	// judge, its verdict is unknown, and `check` refuses its directory with
	// this reason.
	SetupError string `json:"setup_error,omitempty"`
	// LockClient names the external lock client of a run of the exec
	// algorithm (docs/lock-protocol.md); absent for the built-in locks.
	LockClient *LockClient `json:"lock_client,omitempty"`
}

// HostEvent is one host record of a run's history: a clock step or a
// stall (history.HostEvent).
type HostEvent = history.HostEvent

// MaxHostEvents is how many host events results.json lists; a history may
// hold more.
const MaxHostEvents = 1000

// SetHostEvents lists events in r, at most MaxHostEvents of them, and
// counts the others.
func (r *Results) SetHostEvents(events []history.HostEvent) {
	r.HostEvents, r.HostEventsLeftOut = events, 0
	if len(events) > MaxHostEvents {
		r.HostEvents, r.HostEventsLeftOut = events[:MaxHostEvents], len(events)-MaxHostEvents
	}
}

// LockClient is an external lock client: its command and the name it gave
// itself in its init_ok (library, version, lock, language).
type LockClient struct {
	Command string `json:"command"`
	Name    string `json:"name"`
}

// FailedFault is one fault or heal that failed during a run.
type FailedFault struct {
	Step     string `json:"step"`           // the schedule's step, in one line
	Heal     bool   `json:"heal,omitempty"` // its heal failed (the fault stayed in force)
	Error    string `json:"error"`
	Expected bool   `json:"expected,omitempty"` // the step said it may fail (expect-failure)
}

// The issues of a StepIssue.
const (
	// StepNotRun is a step never reached before the run ended.
	StepNotRun = "not-run"
	// StepLate is a step carried out later than the nemesis's tolerance
	// (nemesis.StepTolerance), by LateNS.
	StepLate = "late"
)

// StepIssue is one step of a run's schedule that did not run as written.
type StepIssue struct {
	Step  string `json:"step"`  // the schedule's step, in one line
	Issue string `json:"issue"` // StepNotRun or StepLate
	// LateNS is how late a StepLate step began to act, in ns, not counting
	// the time it waited for the nemesis's other faults and heals; 0 for a
	// step not run.
	LateNS int64 `json:"late_ns"`
	// Heal is set when what was late is the heal that ends the step's
	// fault after its duration.
	Heal bool `json:"heal,omitempty"`
	// Expected is set when the step allowed it (expect-failure: the step
	// may not take effect as written).
	Expected bool `json:"expected,omitempty"`
}

// describe says in a few words which step the issue is about and, for a late
// one, by how much: "at 2s kill n1 by 400ms".
func (s StepIssue) describe() string {
	what := s.Step
	if s.Heal {
		what = "the heal of " + s.Step
	}
	if s.Issue == StepLate {
		what += " by " + time.Duration(s.LateNS).Round(time.Millisecond).String()
	}
	return what
}

// stepIssuesNamed is how many steps of each issue a note names; results.json
// lists them all.
const stepIssuesNamed = 3

// stepIssueNotes returns a note for each issue of the steps that did not run
// as written and did not allow it (not Expected), naming the first few.
func stepIssueNotes(issues []StepIssue) []string {
	var notes []string
	for _, kind := range []struct{ issue, one, many string }{
		{StepNotRun, "1 step did not run (the run ended before its time)", "%d steps did not run (the run ended before their time)"},
		{StepLate, "1 step was late", "%d steps were late"},
	} {
		var named []string
		n := 0
		for _, s := range issues {
			if s.Expected || s.Issue != kind.issue {
				continue
			}
			n++
			if len(named) < stepIssuesNamed {
				named = append(named, s.describe())
			}
		}
		if n == 0 {
			continue
		}
		head := kind.one
		if n > 1 {
			head = fmt.Sprintf(kind.many, n)
		}
		if n > len(named) {
			named = append(named, fmt.Sprintf("and %d more (see results.json)", n-len(named)))
		}
		notes = append(notes, head+": "+strings.Join(named, "; "))
	}
	return notes
}

// JudgeFailedFaults judges the run by its FailedFaults, by its StepIssues and
// by the steps that expected a failure that did not come (missing, each a
// step in one line). A failure its step did not expect, and a step that did
// not run as written and did not allow it, mean the run did not do what its
// scenario said: a "nemesis" result of verdict unknown says which and why,
// the verdict becomes unknown unless a checker proved a violation, and the
// expectation is not met. A missing failure leaves the expectation unmet
// too, with a note. It does nothing when none of them happened.
func (r *Results) JudgeFailedFaults(missing []string) {
	var unexpected []string
	for _, f := range r.FailedFaults {
		if f.Expected {
			continue
		}
		what := "the fault " + f.Step
		if f.Heal {
			what = "the heal of " + f.Step
		}
		unexpected = append(unexpected, fmt.Sprintf("%s failed: %s", what, f.Error))
	}
	unexpected = append(unexpected, stepIssueNotes(r.StepIssues)...)
	if len(unexpected) == 0 && len(missing) == 0 {
		return
	}
	var notes []string
	v := checker.Valid
	if len(unexpected) > 0 {
		v = checker.Unknown
		notes = append(notes, "the run did not do what its scenario said, so its outcome is unknown: "+strings.Join(unexpected, "; "))
	}
	if len(missing) > 0 {
		notes = append(notes, "expected to fail but did not: "+strings.Join(missing, "; "))
	}
	r.Checkers = append(r.Checkers, checker.Result{Name: "nemesis", Verdict: v, Note: strings.Join(notes, "; ")})
	r.Verdict = checker.Overall(r.Checkers)
	r.ExpectationMet = false
}

// FaultsFailed reports whether the run did not do what its scenario said: a
// fault or heal failed that its scenario step did not expect, or a step did
// not run as written (StepIssues) that did not allow it. The run's outcome
// is then unknown (exit 2), whatever its verdict.
func (r *Results) FaultsFailed() bool {
	for _, f := range r.FailedFaults {
		if !f.Expected {
			return true
		}
	}
	for _, s := range r.StepIssues {
		if !s.Expected {
			return true
		}
	}
	return false
}

// Undecided reports whether the run's outcome is unknown, and why: its
// verdict is unknown (a check out of its time budget, an interrupted check,
// a lock client that broke its protocol or never answered, a history that
// could not be read back), or it did not do what its scenario said
// (FaultsFailed), whatever its verdict. why is the first checker result of
// verdict unknown, "name: note", else "verdict unknown"; empty for a run
// whose outcome is known. Such a run neither passed nor failed: no count
// takes it for either.
func (r *Results) Undecided() (why string, undecided bool) {
	if r.Verdict != checker.Unknown && !r.FaultsFailed() {
		return "", false
	}
	for _, c := range r.Checkers {
		if c.Verdict == checker.Unknown {
			if c.Note == "" {
				return c.Name + ": verdict unknown", true
			}
			return c.Name + ": " + c.Note, true
		}
	}
	return "verdict unknown", true
}
