package scenarios

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/jepsen-lite/jepsen-lite/nemesis"
)

// MaxFileSize is the largest scenario file read, in bytes. A file of
// nemesis.MaxSteps steps, as the store writes a resolved random schedule,
// takes 1.3 to 1.7 MB; parsing a file of this size, whatever its shape,
// stays well under the 1 GB that handling a schedule may take
// (TestScheduleHandlingMemory).
const MaxFileSize = 2 << 20

// MaxLineLength is the longest line of a scenario file, in bytes. The
// catalog's longest line is about 1 KB; the store writes a description as
// one line, and so does shrink, which counts the changes past its first
// ones rather than listing them.
const MaxLineLength = 64 << 10

// MaxWorkers is the most workers a run has: each is a process of the
// workload with its own lock client, connections and, for an external
// client, a program of its own.
const MaxWorkers = 512

// MaxKeys is the most keys a scenario's lock workload contends for.
const MaxKeys = 1024

// MaxNodes is the most nodes a scenario's cluster has (system.nodes): each
// is a server of its own.
const MaxNodes = 15

// MaxDuration bounds every duration a scenario gives: the run's length, the
// quiet period, think and hold times, the lock's ttl, drift, renewal and
// wait, the reaper's times, and every time of its fault schedule (each
// step's start, length, clock offset and duration option, and each time of
// its random spec). A clock offset may be negative; its size is bounded.
const MaxDuration = 24 * time.Hour

// MaxQueueTasks bounds the queue workload's sizes: its tasks (each a row or
// member set up before the run), and so its queues, and the tasks one
// capture asks for (queue.limit).
const MaxQueueTasks = 10_000

// MaxQueueBudget is the largest retry budget of a queue's task, well
// within the 32-bit integer the database seeds keep it in.
const MaxQueueBudget = 1_000_000

// CheckFile checks the text of a scenario file, before it is parsed: at
// most MaxFileSize bytes, and no line longer than MaxLineLength bytes.
// Errors name the file and the line; they wrap ErrInvalid.
func CheckFile(data []byte, file string) error {
	if len(data) > MaxFileSize {
		return fmt.Errorf("%w: %s: the file is larger than %s, the bound of a scenario file", ErrInvalid, file, sizeText(MaxFileSize))
	}
	for line, rest := 1, data; len(rest) > 0; line++ {
		n := bytes.IndexByte(rest, '\n')
		if n < 0 {
			n = len(rest)
		}
		if n > MaxLineLength {
			return fmt.Errorf("%w: %s:%d: the line is %d bytes long; a line of a scenario file is at most %s", ErrInvalid, file, line, n, sizeText(MaxLineLength))
		}
		rest = rest[min(n+1, len(rest)):]
	}
	return nil
}

// readFile reads a scenario file, at most one byte more than MaxFileSize of
// it, so that neither a huge file nor an endless one (a device, a pipe) is
// read whole; CheckFile refuses what is too long.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	return data, nil
}

// sizeText writes a size in bytes as its unit does: "2 MiB", "64 KiB".
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// CheckBounds checks every size and duration of the scenario as it will
// run against its bound: its workers, keys, nodes and queue sizes, every
// duration against MaxDuration, and its fault schedule against
// nemesis.MaxSteps: its scripted steps and the steps its random spec can
// draw over the run's duration (nemesis.RandomSpec.StepBound) together.
// Errors name the file, the line for a scenario read from a file, and the
// field; they wrap ErrInvalid. Parse calls it before any other check of
// values, and a runner again after its overrides, before the schedule is
// resolved.
func (s *Scenario) CheckBounds() error {
	root := s.root
	if root == nil {
		root = &yaml.Node{}
	}
	fail := s.failer(root)
	switch {
	case s.Workers > MaxWorkers:
		return fail(fmt.Sprintf("%d workers; a run has at most %d", s.Workers, MaxWorkers), "workers")
	case len(s.Lock.Keys) > MaxKeys:
		return fail(fmt.Sprintf("%d keys; a scenario has at most %d", len(s.Lock.Keys), MaxKeys), "lock", "keys")
	case s.System.Nodes > MaxNodes:
		return fail(fmt.Sprintf("%d nodes; a cluster has at most %d", s.System.Nodes, MaxNodes), "system", "nodes")
	}
	if q := s.Queue; q != nil {
		switch {
		case q.Tasks > MaxQueueTasks:
			return fail(fmt.Sprintf("%d tasks; a queue workload has at most %d", q.Tasks, MaxQueueTasks), "queue", "tasks")
		case q.Limit > MaxQueueTasks:
			return fail(fmt.Sprintf("%d tasks a capture; at most %d, the most tasks a queue workload has", q.Limit, MaxQueueTasks), "queue", "limit")
		case q.Budget != nil && *q.Budget > MaxQueueBudget:
			return fail(fmt.Sprintf("a budget of %d captures; at most %d", *q.Budget, MaxQueueBudget), "queue", "budget")
		}
	}
	scripted := len(s.Nemesis.Steps)
	if scripted > nemesis.MaxSteps {
		return fail(fmt.Sprintf("%d steps; a schedule has at most %d", scripted, nemesis.MaxSteps), "nemesis", "steps")
	}
	for _, d := range s.durations() {
		if d.value > MaxDuration || d.value < -MaxDuration {
			return fail(fmt.Sprintf("%v is beyond %v, the bound of every duration of a scenario", d.value, MaxDuration), d.path...)
		}
	}
	return s.checkRandom(fail)
}

// checkRandom checks the random spec: times that a draw in whole
// nemesis.Resolutions does not round to nothing (RandomSpec.CheckTimes),
// and room beside the scripted steps, within nemesis.MaxSteps, for every
// step it can draw over the run.
func (s *Scenario) checkRandom(fail func(hint string, path ...string) error) error {
	scripted := len(s.Nemesis.Steps)
	r := s.Nemesis.Random
	if r == nil {
		return nil
	}
	if err := r.CheckTimes(); err != nil {
		return randomFail(fail, err)
	}
	if drawn := r.StepBound(s.Duration); drawn > int64(nemesis.MaxSteps-scripted) {
		beside := ""
		if scripted > 0 {
			beside = fmt.Sprintf(" with its %d scripted steps", scripted)
		}
		return fail(fmt.Sprintf("over the run's %v this random spec can draw up to %d steps, and a schedule has at most %d%s: lengthen the interval or min-duration, or shorten the run",
			s.Duration, drawn, nemesis.MaxSteps, beside), "nemesis", "random", "interval")
	}
	return nil
}

// randomFail returns the error of the random spec's err: at the line of its
// field when it names one (nemesis.FieldError).
func randomFail(fail func(hint string, path ...string) error, err error) error {
	var field *nemesis.FieldError
	if errors.As(err, &field) {
		return fail(field.Hint, "nemesis", "random", field.Field)
	}
	return fail(err.Error(), "nemesis", "random")
}

// timed is one duration of a scenario, with its path in the file.
type timed struct {
	path  []string
	value time.Duration
}

// durations lists every duration of the scenario with its path: its own,
// its lock's and queue's, and those of its fault schedule, the options
// that hold a duration included.
func (s *Scenario) durations() []timed {
	out := []timed{
		{[]string{"duration"}, s.Duration}, {[]string{"quiet"}, s.Quiet}, {[]string{"think"}, s.Think}, {[]string{"hold"}, s.Hold},
		{[]string{"lock", "ttl"}, s.Lock.TTL}, {[]string{"lock", "drift"}, s.Lock.Drift},
		{[]string{"lock", "renew"}, s.Lock.Renew}, {[]string{"lock", "wait"}, s.Lock.Wait},
	}
	if q := s.Queue; q != nil && q.Reaper != nil {
		out = append(out, timed{[]string{"queue", "reaper", "interval"}, q.Reaper.Interval}, timed{[]string{"queue", "reaper", "timeout"}, q.Reaper.Timeout})
	}
	for i, st := range s.Nemesis.Steps {
		at := []string{"nemesis", "steps", fmt.Sprint(i)}
		out = append(out, timed{append(at, "at"), st.At}, timed{append(at, "duration"), st.Duration}, timed{append(at, "offset"), st.Offset})
		out = append(out, optionDurations(st.Options, append(at, "options"))...)
	}
	r := s.Nemesis.Random
	if r == nil {
		return out
	}
	at := []string{"nemesis", "random"}
	out = append(out, timed{append(at, "start"), r.Start}, timed{append(at, "interval"), r.Interval},
		timed{append(at, "min-duration"), r.MinDuration}, timed{append(at, "max-duration"), r.MaxDuration})
	for i, o := range r.Offsets {
		out = append(out, timed{append(at, "offsets", fmt.Sprint(i)), o})
	}
	for _, f := range slices.Sorted(maps.Keys(r.Options)) {
		out = append(out, optionDurations(r.Options[f], append(at, "options", f))...)
	}
	for _, f := range slices.Sorted(maps.Keys(r.Choices)) {
		for _, k := range slices.Sorted(maps.Keys(r.Choices[f])) {
			for j, v := range r.Choices[f][k] {
				out = append(out, optionDurations(map[string]string{fmt.Sprint(j): v}, append(at, "choices", f, k))...)
			}
		}
	}
	return out
}

// optionDurations lists the fault options that hold a duration, each with
// its path below path; options of other values are the faults' to check.
func optionDurations(options map[string]string, path []string) []timed {
	var out []timed
	for _, k := range slices.Sorted(maps.Keys(options)) {
		if d, err := time.ParseDuration(options[k]); err == nil {
			out = append(out, timed{append(path[:len(path):len(path)], k), d})
		}
	}
	return out
}

// CheckStored checks that the scenario, written as the store writes it
// (Marshal), is a file that Parse reads back: a run whose resolved
// schedule makes its scenario.yaml too large to replay is refused before
// it starts. Errors name the file and wrap ErrInvalid.
func (s *Scenario) CheckStored() error {
	data, err := Marshal(s)
	if err != nil {
		return err
	}
	if err := CheckFile(data, "scenario.yaml"); err != nil {
		return fmt.Errorf("%w: %s: as the store writes it, with its schedule of %d steps, the scenario would not be read back by a replay: %v",
			ErrInvalid, cmp.Or(s.File, s.Name), len(s.Nemesis.Steps), strings.TrimPrefix(err.Error(), ErrInvalid.Error()+": "))
	}
	return nil
}
