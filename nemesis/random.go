package nemesis

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// ErrRandomSpec reports a random schedule spec with an impossible value.
var ErrRandomSpec = errors.New("nemesis: bad random schedule")

// Resolution is the unit of a random schedule's time: Generate draws each
// fault's duration and each quiet gap in whole milliseconds, rounding down,
// and moves the schedule on by at least one Resolution per step.
const Resolution = time.Millisecond

// MinInterval is the shortest mean quiet gap (RandomSpec.Interval) a random
// spec may ask for: two Resolutions, so that its shortest gap, half the
// interval, is a whole Resolution and never rounds to nothing.
const MinInterval = 2 * Resolution

// MaxSteps is the most steps a run's schedule may have: its scripted steps
// and the steps its random spec can draw over the run (StepBound) together.
// Scenario validation refuses a schedule that could have more; Generate and
// Resolve never return more, whatever they are given.
const MaxSteps = 10_000

// FieldError is a random spec's field with an impossible value: Field names
// it as a scenario file does (interval, min-duration, ...), and Hint says
// what it must be.
type FieldError struct {
	Field, Hint string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s: %s", ErrRandomSpec, e.Field, e.Hint)
}

// Unwrap returns ErrRandomSpec.
func (e *FieldError) Unwrap() error { return ErrRandomSpec }

// RandomSpec describes a seeded random schedule: one fault at a time, drawn
// from a mix of kinds, with random quiet gaps, durations, targets and
// offsets. Generate expands it into steps; the same spec, duration and seed
// always give the same steps.
type RandomSpec struct {
	// Faults is the mix of fault kinds; a kind listed twice is drawn twice
	// as often.
	Faults []string `yaml:"faults" json:"faults"`
	// Start is when the first fault may begin; default Interval.
	Start time.Duration `yaml:"start,omitempty" json:"start,omitempty"`
	// Interval is the mean quiet gap between one fault's heal and the next
	// fault; each gap is drawn uniformly from [Interval/2, 3*Interval/2].
	Interval time.Duration `yaml:"interval" json:"interval"`
	// MinDuration and MaxDuration bound each fault's duration, drawn
	// uniformly in milliseconds; both default to Interval.
	MinDuration time.Duration `yaml:"min-duration,omitempty" json:"min-duration,omitempty"`
	MaxDuration time.Duration `yaml:"max-duration,omitempty" json:"max-duration,omitempty"`
	// Targets are the node target specs drawn from for node faults
	// (default [one]); halves and worker names (w0: the worker's links to
	// every node, a client-specific cut) are drawn only for network
	// faults; failover steps get no targets.
	Targets []string `yaml:"targets,omitempty" json:"targets,omitempty"`
	// Workers are the worker target specs drawn from for client faults
	// (default [one]).
	Workers []string `yaml:"workers,omitempty" json:"workers,omitempty"`
	// Offsets are the clock offsets drawn from for clock faults (default
	// [+30s]).
	Offsets []time.Duration `yaml:"offsets,omitempty" json:"offsets,omitempty"`
	// Options are per fault kind options copied into its steps, for
	// instance {latency: {delay: 200ms}}.
	Options map[string]map[string]string `yaml:"options,omitempty" json:"options,omitempty"`
	// Choices are per fault kind options drawn for each step from a list
	// of values, for instance {partition: {direction: [both, inbound,
	// outbound]}}; an option is either fixed (Options) or drawn, not both.
	Choices map[string]map[string][]string `yaml:"choices,omitempty" json:"choices,omitempty"`
	// Points are the pause points drawn for the steps of a fault that
	// takes one (client-pause: PausePoints); none by default, so that the
	// fault's own default applies.
	Points []string `yaml:"points,omitempty" json:"points,omitempty"`
}

// DefaultRandomOffset is the clock offset of random clock faults when the
// spec lists none.
const DefaultRandomOffset = 30 * time.Second

// Validate checks the spec against the known fault names.
func (s *RandomSpec) Validate(known []string) error {
	if len(s.Faults) == 0 {
		return fmt.Errorf("%w: faults: list at least one fault kind", ErrRandomSpec)
	}
	for _, f := range s.Faults {
		if !slices.Contains(known, f) {
			return fmt.Errorf("%w: faults: unknown fault %q (known: %s)", ErrRandomSpec, f, strings.Join(known, ", "))
		}
	}
	for _, f := range slices.Sorted(maps.Keys(s.Options)) {
		if !slices.Contains(s.Faults, f) {
			return fmt.Errorf("%w: options: %q is not one of the faults %v", ErrRandomSpec, f, s.Faults)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(s.Choices)) {
		if !slices.Contains(s.Faults, f) {
			return fmt.Errorf("%w: choices: %q is not one of the faults %v", ErrRandomSpec, f, s.Faults)
		}
		for _, k := range slices.Sorted(maps.Keys(s.Choices[f])) {
			if len(s.Choices[f][k]) == 0 {
				return fmt.Errorf("%w: choices: %s %s: list at least one value", ErrRandomSpec, f, k)
			}
			if _, fixed := s.Options[f][k]; fixed {
				return fmt.Errorf("%w: choices: %s %s is also a fixed option; give it in one of options and choices", ErrRandomSpec, f, k)
			}
		}
	}
	for _, p := range s.Points {
		if !slices.Contains(PausePoints, p) {
			return fmt.Errorf("%w: points: unknown pause point %q (known: %s)", ErrRandomSpec, p, strings.Join(PausePoints, ", "))
		}
	}
	if err := s.CheckTimes(); err != nil {
		return err
	}
	lo, hi := s.durations()
	if lo > hi {
		return fmt.Errorf("%w: min-duration %v is above max-duration %v", ErrRandomSpec, lo, hi)
	}
	for _, o := range s.Offsets {
		if o == 0 {
			return fmt.Errorf("%w: offsets: a clock offset must not be zero", ErrRandomSpec)
		}
	}
	// Each kind must accept the steps the spec gives it, with every value
	// of its choices and every pause point.
	for _, f := range s.Faults {
		step := s.step(f, 0, lo, nil)
		if err := CheckStep(step); err != nil {
			return fmt.Errorf("%w: %w", ErrRandomSpec, err)
		}
		for _, k := range slices.Sorted(maps.Keys(s.Choices[f])) {
			for _, v := range s.Choices[f][k] {
				st := s.step(f, 0, lo, nil)
				st.Options[k] = v
				if err := CheckStep(st); err != nil {
					return fmt.Errorf("%w: choices: %w", ErrRandomSpec, err)
				}
			}
		}
		if drawsFor(f).point {
			for _, p := range s.Points {
				st := s.step(f, 0, lo, nil)
				st.Point = p
				if err := CheckStep(st); err != nil {
					return fmt.Errorf("%w: points: %w", ErrRandomSpec, err)
				}
			}
		}
	}
	return nil
}

// CheckTimes checks the spec's times against the Resolution: a mean gap of
// at least MinInterval, a start that is not negative, and fault durations
// that are left out (zero) or at least one Resolution, which a draw in
// whole milliseconds cannot round to nothing. Its error is a *FieldError.
// Validate calls it.
func (s *RandomSpec) CheckTimes() error {
	switch {
	case s.Interval < MinInterval:
		return &FieldError{"interval", fmt.Sprintf("must be at least %v, such as 2s (the shortest quiet gap is half the interval, and gaps are drawn in whole %v)", MinInterval, Resolution)}
	case s.Start < 0:
		return &FieldError{"start", "must not be negative"}
	}
	for _, d := range []struct {
		field string
		d     time.Duration
	}{{"min-duration", s.MinDuration}, {"max-duration", s.MaxDuration}} {
		if d.d < 0 || d.d > 0 && d.d < Resolution {
			return &FieldError{d.field, fmt.Sprintf("must be at least %v, such as 500ms, or left out (durations are drawn in whole %v)", Resolution, Resolution)}
		}
	}
	return nil
}

// StepBound returns the most steps Generate can draw from s over a run of
// the given duration: each step moves the schedule on by at least its
// shortest fault and its shortest quiet gap, each rounded down to whole
// Resolutions, and by never less than one Resolution, from the first
// fault's start until the run's end.
func (s *RandomSpec) StepBound(duration time.Duration) int64 {
	start := max(s.start(), 0)
	if len(s.Faults) == 0 || s.Interval <= 0 || start >= duration {
		return 0
	}
	lo, _ := s.durations()
	gapLo, _ := s.gaps()
	whole := func(d time.Duration) time.Duration { return max(d, 0) / Resolution * Resolution }
	step := max(whole(lo)+whole(gapLo), Resolution)
	return int64((duration-start-1)/step) + 1
}

// String describes the spec in one line, with its defaults filled in: the
// fault mix, the mean quiet gap and its range, the duration range, when the
// first fault may begin, and what each kind of fault is drawn against.
func (s RandomSpec) String() string {
	var b strings.Builder
	lo, hi := s.durations()
	gapLo, gapHi := s.gaps()
	fmt.Fprintf(&b, "%s, one at a time from %v, quiet gaps %v–%v, each lasting %v", strings.Join(s.Faults, " or "), s.start(), gapLo, gapHi, lo)
	if hi != lo {
		fmt.Fprintf(&b, "–%v", hi)
	}
	var client, node, clock bool
	for _, f := range s.Faults {
		d := drawsFor(f)
		client, node, clock = client || d.workers, node || d.targets, clock || d.offset
	}
	if client {
		fmt.Fprintf(&b, "; workers %s", strings.Join(orOne(s.Workers), " or "))
	}
	if node {
		fmt.Fprintf(&b, "; targets %s", strings.Join(orOne(s.Targets), " or "))
	}
	if clock {
		var offsets []string
		for _, o := range s.offsets() {
			offsets = append(offsets, signed(o))
		}
		fmt.Fprintf(&b, "; offsets %s", strings.Join(offsets, " or "))
	}
	if len(s.Points) > 0 && slices.ContainsFunc(s.Faults, func(f string) bool { return drawsFor(f).point }) {
		fmt.Fprintf(&b, "; points %s", strings.Join(s.Points, " or "))
	}
	for _, f := range slices.Sorted(maps.Keys(s.Options)) {
		for _, k := range slices.Sorted(maps.Keys(s.Options[f])) {
			fmt.Fprintf(&b, "; %s %s=%s", f, k, s.Options[f][k])
		}
	}
	for _, f := range slices.Sorted(maps.Keys(s.Choices)) {
		for _, k := range slices.Sorted(maps.Keys(s.Choices[f])) {
			fmt.Fprintf(&b, "; %s %s %s", f, k, strings.Join(s.Choices[f][k], " or "))
		}
	}
	return b.String()
}

// start is when the first fault may begin: Start, or Interval when unset.
func (s *RandomSpec) start() time.Duration {
	if s.Start == 0 {
		return s.Interval
	}
	return s.Start
}

// gaps bounds the quiet gap between one fault's heal and the next fault.
func (s *RandomSpec) gaps() (lo, hi time.Duration) {
	return s.Interval / 2, s.Interval * 3 / 2
}

// offsets are the clock offsets drawn from: Offsets, or DefaultRandomOffset.
func (s *RandomSpec) offsets() []time.Duration {
	if len(s.Offsets) == 0 {
		return []time.Duration{DefaultRandomOffset}
	}
	return s.Offsets
}

// orOne returns specs, or [one] when there are none.
func orOne(specs []string) []string {
	if len(specs) == 0 {
		return []string{TargetOne}
	}
	return specs
}

// draws says what a random step of one fault kind is drawn against.
type draws struct {
	workers bool // a worker target spec (client faults)
	targets bool // a node target spec (node and network faults)
	offset  bool // a clock offset (clock faults)
	point   bool // a pause point (client-pause)
}

// drawsFor returns what a random step of fault is drawn against, by its
// facts: faults that target workers draw workers, faults that target nodes
// or links draw node targets, the others (failovers) nothing; faults that
// take an offset also draw one, and faults that take a pause point a point.
func drawsFor(fault string) draws {
	f, _ := FactsOf(fault)
	return draws{
		workers: f.Targets == TargetsWorkers,
		targets: f.Targets == TargetsNodes || f.Targets == TargetsLinks,
		offset:  f.Offset,
		point:   f.Point,
	}
}

func (s *RandomSpec) durations() (lo, hi time.Duration) {
	lo, hi = s.MinDuration, s.MaxDuration
	if lo == 0 && hi == 0 {
		return s.Interval, s.Interval
	}
	if hi == 0 {
		hi = max(lo, s.Interval)
	}
	return lo, hi
}

// step builds the step of fault at at lasting d (a moment lasts no time),
// drawing targets and offsets from rng (the first choice when rng is nil).
func (s *RandomSpec) step(fault string, at, d time.Duration, rng *rand.Rand) Step {
	pick := func(n int) int {
		if rng == nil || n <= 1 {
			return 0
		}
		return rng.IntN(n)
	}
	st := Step{At: at, Fault: fault, Duration: d}
	if f, _ := FactsOf(fault); f.Moment {
		st.Duration = 0 // a moment has no heal; d still spaces the schedule
	}
	draw := drawsFor(fault)
	switch {
	case draw.workers:
		ws := orOne(s.Workers)
		st.Targets = []string{ws[pick(len(ws))]}
	case draw.targets:
		var ts []string
		for _, t := range s.Targets {
			// halves and workers are shapes of the network faults only.
			if (t != TargetHalves && !IsWorkerTarget(t)) || networkFault(fault) {
				ts = append(ts, t)
			}
		}
		ts = orOne(ts)
		st.Targets = []string{ts[pick(len(ts))]}
	}
	if draw.offset {
		os := s.offsets()
		st.Offset = os[pick(len(os))]
	}
	if draw.point && len(s.Points) > 0 {
		st.Point = s.Points[pick(len(s.Points))]
	}
	if o := s.Options[fault]; len(o) > 0 {
		st.Options = maps.Clone(o)
	}
	if c := s.Choices[fault]; len(c) > 0 {
		if st.Options == nil {
			st.Options = map[string]string{}
		}
		for _, k := range slices.Sorted(maps.Keys(c)) {
			st.Options[k] = c[k][pick(len(c[k]))]
		}
	}
	return st
}

// Generate expands spec into the steps of a run of the given duration: one
// fault at a time, each starting after a random quiet gap and healed after
// its random duration. Every choice is drawn from rng, in a fixed order, so
// the same seed always gives the same schedule. Durations are whole
// Resolutions. Whatever the spec, the schedule moves on by at least one
// Resolution per step and ends at MaxSteps steps, so that generation is
// bounded in time and memory even for a spec no validation has seen.
func Generate(rng *rand.Rand, duration time.Duration, spec RandomSpec) Schedule {
	return generate(rng, duration, spec, MaxSteps)
}

// generate is Generate drawing at most limit steps.
func generate(rng *rand.Rand, duration time.Duration, spec RandomSpec, limit int) Schedule {
	if len(spec.Faults) == 0 || spec.Interval <= 0 || limit <= 0 {
		return nil
	}
	lo, hi := spec.durations()
	// whole draws a whole number of Resolutions in [lo, hi], at least 0.
	whole := func(lo, hi time.Duration) time.Duration {
		a, b := max(lo/Resolution, 0), hi/Resolution
		if b <= a {
			return a * Resolution
		}
		return (a + time.Duration(rng.Int64N(int64(b-a)+1))) * Resolution
	}
	at := max(spec.start(), 0)
	gapLo, gapHi := spec.gaps()
	var out Schedule
	for at < duration && len(out) < limit {
		fault := spec.Faults[rng.IntN(len(spec.Faults))]
		d := whole(lo, hi)
		out = append(out, spec.step(fault, at, d, rng))
		left := duration - at
		if d >= left {
			break
		}
		gap := whole(gapLo, gapHi)
		if gap >= left-d {
			break
		}
		at += max(d+gap, min(Resolution, left))
	}
	return out
}

// Merge returns the steps of both schedules ordered by time; at equal times
// the steps of a come first.
func Merge(a, b Schedule) Schedule {
	return append(append(Schedule(nil), a...), b...).Sorted()
}

// scheduleStream distinguishes the random stream of schedule generation
// from the run's other streams derived from the same seed.
const scheduleStream = 0x6e656d65736973 // "nemesis"

// Resolve returns the exact schedule of a run: the scripted steps that start
// within duration, merged with random expanded by a source derived from seed
// alone (nil random adds nothing). Stored in place of the spec, the result
// replays the run's faults exactly. The random steps fill at most what the
// scripted ones leave of MaxSteps, so the result has no more steps than
// MaxSteps or the scripted ones given.
func Resolve(scripted Schedule, random *RandomSpec, seed uint64, duration time.Duration) Schedule {
	var out Schedule
	for _, st := range scripted {
		if st.At <= duration {
			out = append(out, st)
		}
	}
	if random != nil {
		out = Merge(out, generate(rand.New(rand.NewPCG(seed, scheduleStream)), duration, *random, MaxSteps-len(out)))
	}
	return out.Sorted()
}

// TargetRand returns the source that resolves a run's random target specs
// (Env.Rand), derived from the run's seed alone, so a replay with the same
// seed resolves every target the same way.
func TargetRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, scheduleStream+1))
}

// WriteSchedule writes s as JSON Lines, one step per line (durations in
// nanoseconds).
func WriteSchedule(w io.Writer, s Schedule) error {
	enc := json.NewEncoder(w)
	for _, st := range s {
		if err := enc.Encode(st); err != nil {
			return fmt.Errorf("nemesis: writing schedule: %w", err)
		}
	}
	return nil
}

// ReadSchedule reads a schedule written by WriteSchedule; a schedule of
// more than MaxSteps steps is an error.
func ReadSchedule(r io.Reader) (Schedule, error) {
	var out Schedule
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		if len(out) == MaxSteps {
			return nil, fmt.Errorf("nemesis: schedule line %d: more than %d steps, the most a schedule has", line, MaxSteps)
		}
		var st Step
		if err := json.Unmarshal(sc.Bytes(), &st); err != nil {
			return nil, fmt.Errorf("nemesis: schedule line %d: %w", line, err)
		}
		out = append(out, st)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("nemesis: reading schedule: %w", err)
	}
	return out, nil
}

// networkFault reports whether fault targets links, whose targets may also
// be TargetHalves.
func networkFault(fault string) bool {
	f, _ := FactsOf(fault)
	return f.Targets == TargetsLinks
}
