package scenarios_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// boundsBase is a valid scenario that each case of TestBounds changes in
// one place; its line numbers are those the cases expect.
const boundsBase = `name: bounds
system:
  name: redis
  topology: masters
  nodes: 3
lock:
  algorithm: redis-single
  ttl: 1s
workers: 4
duration: 20s
nemesis:
  steps:
    - {at: 1s, fault: kill, targets: [n1], duration: 1s, options: {restart-after: 500ms}}
  random:
    faults: [partition]
    interval: 2s
    min-duration: 500ms
`

// TestBounds changes one size or duration of a valid scenario at a time:
// up to its bound it parses, and past it Parse refuses it naming the file,
// the line, the field and the bound.
func TestBounds(t *testing.T) {
	keys := func(n int) string {
		ks := make([]string, n)
		for i := range ks {
			ks[i] = fmt.Sprintf("k%d", i)
		}
		return "ttl: 1s\n  keys: [" + strings.Join(ks, ", ") + "]"
	}
	tests := []struct {
		name          string
		replace, with string
		want          []string // nil: the scenario parses
	}{
		{"workers at the bound", "workers: 4", fmt.Sprintf("workers: %d", scenarios.MaxWorkers), nil},
		{"workers past the bound", "workers: 4", fmt.Sprintf("workers: %d", scenarios.MaxWorkers+1), []string{"b.yaml:9: workers:", fmt.Sprint(scenarios.MaxWorkers)}},
		{"keys at the bound", "ttl: 1s", keys(scenarios.MaxKeys), nil},
		{"keys past the bound", "ttl: 1s", keys(scenarios.MaxKeys + 1), []string{"b.yaml:9: lock.keys:", fmt.Sprint(scenarios.MaxKeys)}},
		{"nodes past the bound", "nodes: 3", fmt.Sprintf("nodes: %d", scenarios.MaxNodes+1), []string{"b.yaml:5: system.nodes:", fmt.Sprint(scenarios.MaxNodes)}},
		{"a run of the longest duration", "duration: 20s\nnemesis:", "duration: 24h\nnemesis:", []string{"b.yaml:16: nemesis.random.interval:", "over the run's 24h0m0s this random spec can draw up to 57599 steps"}},
		{"a run of the longest duration with sparser faults", "interval: 2s\n    min-duration: 500ms", "interval: 20s\n    min-duration: 500ms\n    start: 24h", nil},
		{"a run past the longest duration", "duration: 20s", "duration: 24h1ms", []string{"b.yaml:10: duration:", "24h"}},
		{"a ttl past the longest duration", "ttl: 1s", "ttl: 25h", []string{"b.yaml:8: lock.ttl:", "24h"}},
		{"a quiet period past the longest duration", "workers: 4", "workers: 4\nquiet: 100h", []string{"b.yaml:10: quiet:", "24h"}},
		{"a step's length past the longest duration", "duration: 1s, options", "duration: 25h, options", []string{"b.yaml:13: nemesis.steps.0.duration:", "24h"}},
		{"a step's duration option past the longest duration", "restart-after: 500ms", "restart-after: 25h", []string{"b.yaml:13: nemesis.steps.0.options.restart-after:", "24h"}},
		{"a clock offset past the longest duration", "{at: 1s, fault: kill, targets: [n1], duration: 1s, options: {restart-after: 500ms}}", "{at: 1s, fault: clock-bump, targets: [n1], offset: -25h, duration: 1s}", []string{"b.yaml:13: nemesis.steps.0.offset:", "-25h"}},
		{"a random interval of 1ns", "interval: 2s\n    min-duration: 500ms", "interval: 1ns\n    min-duration: 1ns\n    max-duration: 1ns", []string{"b.yaml:16: nemesis.random.interval:", "at least 2ms"}},
		{"a random interval of 600µs", "interval: 2s", "interval: 600us", []string{"b.yaml:16: nemesis.random.interval:", "at least 2ms"}},
		{"a random interval at the smallest", "interval: 2s\n    min-duration: 500ms", "interval: 2ms\n    min-duration: 1ms\n    max-duration: 1ms", nil},
		{"a random min-duration of 1ns", "min-duration: 500ms", "min-duration: 1ns", []string{"b.yaml:17: nemesis.random.min-duration:", "at least 1ms"}},
		{"a random max-duration below 1ms", "min-duration: 500ms", "max-duration: 999us", []string{"b.yaml:17: nemesis.random.max-duration:", "at least 1ms"}},
		{"a random interval past the longest duration", "interval: 2s", "interval: 25h", []string{"b.yaml:16: nemesis.random.interval:", "24h"}},
		// 2ms steps from 2ms to 20s: 9999 steps, and one scripted step.
		{"random steps up to the bound with a scripted step", "interval: 2s\n    min-duration: 500ms", "interval: 2ms\n    min-duration: 1ms\n    max-duration: 1ms", nil},
		{"random steps past the bound with two scripted steps", "  random:\n    faults: [partition]\n    interval: 2s\n    min-duration: 500ms",
			"    - {at: 2s, fault: kill, targets: [n2]}\n  random:\n    faults: [partition]\n    interval: 2ms\n    min-duration: 1ms\n    max-duration: 1ms",
			[]string{"b.yaml:17: nemesis.random.interval:", "up to 9999 steps", fmt.Sprintf("at most %d with its 2 scripted steps", nemesis.MaxSteps)}},
		// A soak of five hours at the rate of the catalog's hour-long
		// soaks (a fault of at least 500ms after a gap of at least 2.5s).
		{"random steps of a long soak", "duration: 20s\nnemesis:\n  steps:\n    - {at: 1s, fault: kill, targets: [n1], duration: 1s, options: {restart-after: 500ms}}\n  random:\n    faults: [partition]\n    interval: 2s",
			"duration: 5h\nnemesis:\n  random:\n    faults: [partition]\n    interval: 5s", nil},
		{"random steps past the bound over a day", "duration: 20s\nnemesis:\n  steps:\n    - {at: 1s, fault: kill, targets: [n1], duration: 1s, options: {restart-after: 500ms}}\n  random:\n    faults: [partition]\n    interval: 2s\n    min-duration: 500ms",
			"duration: 24h\nnemesis:\n  random:\n    faults: [partition]\n    interval: 200ms\n    min-duration: 10ms", []string{"b.yaml:14: nemesis.random.interval:", "over the run's 24h0m0s", "lengthen the interval"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(boundsBase, tc.replace, tc.with, 1)
			if src == boundsBase {
				t.Fatalf("%q is not in the scenario", tc.replace)
			}
			_, err := scenarios.Parse([]byte(src), "b.yaml", realNames())
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Parse = %v, want the scenario", err)
				}
				return
			}
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse = %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// TestQueueBounds changes one size of a valid queue scenario at a time:
// past its bound, or below what it must be, Parse refuses it naming the
// file, the line and the field.
func TestQueueBounds(t *testing.T) {
	const base = `name: queue-bounds
system: {name: postgres}
lock: {algorithm: pg-queue, ttl: 1s}
workload: queue
queue:
  tasks: 50
  limit: 3
  budget: 2
  reaper: {interval: 200ms, timeout: 1s}
workers: 4
duration: 5s
`
	tests := []struct {
		name          string
		replace, with string
		want          string // "": the scenario parses
	}{
		{"tasks at the bound", "tasks: 50", fmt.Sprintf("tasks: %d", scenarios.MaxQueueTasks), ""},
		{"tasks past the bound", "tasks: 50", fmt.Sprintf("tasks: %d", scenarios.MaxQueueTasks+1), "q.yaml:6: queue.tasks:"},
		{"a capture past the bound", "limit: 3", fmt.Sprintf("limit: %d", scenarios.MaxQueueTasks+1), "q.yaml:7: queue.limit:"},
		{"a budget past the bound", "budget: 2", fmt.Sprintf("budget: %d", scenarios.MaxQueueBudget+1), "q.yaml:8: queue.budget:"},
		{"a reaper past the longest duration", "timeout: 1s", "timeout: 48h", "q.yaml:9: queue.reaper.timeout:"},
		{"more queues than tasks", "limit: 3", "limit: 3\n  queues: 51", "q.yaml:8: queue.queues: must be at least 1 and at most the number of tasks"},
		{"a negative budget", "budget: 2", "budget: -1", "q.yaml:8: queue.budget: must not be negative"},
		{"a reaper without an interval", "interval: 200ms", "interval: 0s", "q.yaml:9: queue.reaper.interval: must be a positive duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(base, tc.replace, tc.with, 1)
			if src == base {
				t.Fatalf("%q is not in the scenario", tc.replace)
			}
			_, err := scenarios.Parse([]byte(src), "q.yaml", realNames())
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Parse = %v, want the scenario", err)
			case tc.want != "" && (!errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Parse = %v, want ErrInvalid naming %q", err, tc.want)
			}
		})
	}
}

// stepsScenario returns a scenario file of n scripted steps, one a line.
func stepsScenario(n int) []byte {
	var b strings.Builder
	b.WriteString("name: many-steps\nsystem: {name: redis, nodes: 3}\nlock: {algorithm: redis-single, ttl: 1s}\nworkers: 2\nduration: 1h\nnemesis:\n  steps:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {at: %dms, fault: kill, targets: [n%d]}\n", i, 1+i%3)
	}
	return []byte(b.String())
}

// TestScheduleSizeBounds refuses a schedule of a million scripted steps
// (the file is past its bound) and one of a step more than
// nemesis.MaxSteps (the steps are), and accepts nemesis.MaxSteps steps.
func TestScheduleSizeBounds(t *testing.T) {
	tests := []struct {
		name  string
		steps int
		want  []string // nil: the scenario parses
	}{
		{"a million steps", 1_000_000, []string{"s.yaml: the file is larger than 2 MiB"}},
		{"a step past the bound", nemesis.MaxSteps + 1, []string{"s.yaml:7: nemesis.steps:", fmt.Sprintf("%d steps; a schedule has at most %d", nemesis.MaxSteps+1, nemesis.MaxSteps)}},
		{"steps up to the bound", nemesis.MaxSteps, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scenarios.Parse(stepsScenario(tc.steps), "s.yaml", realNames())
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Parse = %v, want the scenario", err)
				}
				return
			}
			if !errors.Is(err, scenarios.ErrInvalid) {
				t.Fatalf("Parse = %v, want ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Parse = %v, want it to say %q", err, w)
				}
			}
		})
	}
	// A scenario built in code, which no file bounds, is refused by
	// CheckBounds all the same.
	sc, err := scenarios.Parse(stepsScenario(1), "s.yaml", realNames())
	if err != nil {
		t.Fatal(err)
	}
	sc.Nemesis.Steps = make(nemesis.Schedule, 1_000_000)
	if err := sc.CheckBounds(); !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), "nemesis.steps: 1000000 steps") {
		t.Fatalf("CheckBounds = %v, want ErrInvalid naming nemesis.steps", err)
	}
}

// TestFileBounds refuses a file past MaxFileSize, a line past
// MaxLineLength and an endless file, each naming the file (and the line),
// and reads a line of MaxLineLength bytes.
func TestFileBounds(t *testing.T) {
	withDescription := func(n int) []byte {
		// "description: " and the value make a line of n bytes.
		return []byte("name: long\ndescription: " + strings.Repeat("x", n-len("description: ")) + "\n" + boundsBase[len("name: bounds\n"):])
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, stepsScenario(100_000), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		load func() error
		want string // "": the scenario parses
	}{
		{"a line of the longest length", func() error {
			_, err := scenarios.Parse(withDescription(scenarios.MaxLineLength), "l.yaml", realNames())
			return err
		}, ""},
		{"a line past the longest length", func() error {
			_, err := scenarios.Parse(withDescription(scenarios.MaxLineLength+1), "l.yaml", realNames())
			return err
		}, fmt.Sprintf("l.yaml:2: the line is %d bytes long; a line of a scenario file is at most 64 KiB", scenarios.MaxLineLength+1)},
		{"a file past the largest size", func() error {
			_, err := scenarios.Load(big, realNames())
			return err
		}, big + ": the file is larger than 2 MiB"},
		{"an endless file", func() error {
			_, err := scenarios.Load("/dev/zero", realNames())
			return err
		}, "/dev/zero: the file is larger than 2 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.load()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want the scenario", err)
			case tc.want != "" && (!errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
}

// TestStoredScheduleOfMaxSteps resolves a random schedule of
// nemesis.MaxSteps steps of the most detailed kind a hunt draws (a target,
// a pause point and an option each), stores the scenario as a run does and
// parses it back: the largest schedule a scenario may have must replay.
// A schedule of fewer steps that carry more than the file can hold is
// refused by CheckStored before the run.
func TestStoredScheduleOfMaxSteps(t *testing.T) {
	sc, err := scenarios.Parse([]byte(boundsBase), "b.yaml", realNames())
	if err != nil {
		t.Fatal(err)
	}
	sc.Duration = scenarios.MaxDuration
	spec := nemesis.RandomSpec{Faults: []string{"client-pause"}, Interval: time.Second, MinDuration: 200 * time.Millisecond, MaxDuration: 3 * time.Second,
		Workers: []string{"one", "w0", "w1", "w2"}, Points: []string{nemesis.BeforeWrite, nemesis.AfterResponse},
		Choices: map[string]map[string][]string{"client-pause": {"isolate": {"false", "true"}}}}
	sc.Nemesis = scenarios.Nemesis{Steps: nemesis.Resolve(nil, &spec, 1, sc.Duration)}
	if len(sc.Nemesis.Steps) != nemesis.MaxSteps {
		t.Fatalf("resolved %d steps, want %d", len(sc.Nemesis.Steps), nemesis.MaxSteps)
	}
	if err := sc.CheckStored(); err != nil {
		t.Fatalf("CheckStored = %v", err)
	}
	data, err := scenarios.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	back, err := scenarios.Parse(data, "scenario.yaml", realNames())
	if err != nil {
		t.Fatalf("the stored scenario of %d bytes does not parse: %v", len(data), err)
	}
	if len(back.Nemesis.Steps) != nemesis.MaxSteps {
		t.Fatalf("read back %d steps, want %d", len(back.Nemesis.Steps), nemesis.MaxSteps)
	}
	sc.Nemesis.Steps = sc.Nemesis.Steps[:nemesis.MaxSteps/4]
	for i := range sc.Nemesis.Steps {
		sc.Nemesis.Steps[i].Options["nodes"] = strings.Repeat("n1,", 300) + "n1"
	}
	if err := sc.CheckStored(); !errors.Is(err, scenarios.ErrInvalid) || !strings.Contains(err.Error(), "would not be read back by a replay") {
		t.Fatalf("CheckStored = %v, want ErrInvalid saying a replay could not read it", err)
	}
}

// TestHuntDrawsWithinBounds requires every schedule and workload a hunt
// draws, for every catalog scenario and every fault kind of its system,
// to be within the bounds, over the scenario's own duration and over an
// hour (hunt --time-limit 1h).
func TestHuntDrawsWithinBounds(t *testing.T) {
	cat, err := scenarios.Catalog(realNames())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, base := range cat {
		kinds, err := hunt.Kinds(base.System.Name, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []time.Duration{base.Duration, time.Hour} {
			long := *base
			long.Duration = d
			for _, kind := range kinds {
				v := hunt.Variant(&long, kind, rng.Uint64(), hunt.Lease{}, nil)
				if err := v.CheckBounds(); err != nil {
					t.Errorf("%s over %v, %s: %v", base.Name, d, kind, err)
				}
			}
		}
	}
}

// TestScheduleHandlingMemory parses, bounds and resolves the largest
// inputs the bounds let in, of the shapes that cost the most memory, and
// requires each to allocate less than 1 GB in all, so that its heap never
// reaches 1 GB: a file of MaxFileSize bytes of one-byte values (refused
// after it is parsed), the largest scripted schedule, and the densest
// random spec over the longest run.
func TestScheduleHandlingMemory(t *testing.T) {
	const limit = 1 << 30
	oneByteValues := func() []byte {
		var b strings.Builder
		b.WriteString("name: values\nsystem: {name: redis}\nlock:\n  algorithm: redis-single\n  ttl: 1s\n  keys: [")
		for b.Len() < scenarios.MaxFileSize-8 {
			b.WriteString("k,\n")
		}
		b.WriteString("k]\n")
		return []byte(b.String())
	}
	tests := []struct {
		name  string
		data  []byte
		steps int // the steps resolved; -1: refused
	}{
		{"a file of one-byte values", oneByteValues(), -1},
		{"the largest scripted schedule", stepsScenario(nemesis.MaxSteps), nemesis.MaxSteps},
		// Faults of 0 to 1ms after gaps of 1 to 3ms, over the last 10s
		// of a day: up to one step a millisecond.
		{"the densest random spec over the longest run", []byte(strings.Replace(boundsBase, "duration: 20s\nnemesis:\n  steps:\n    - {at: 1s, fault: kill, targets: [n1], duration: 1s, options: {restart-after: 500ms}}\n  random:\n    faults: [partition]\n    interval: 2s\n    min-duration: 500ms",
			"duration: 24h\nnemesis:\n  random:\n    faults: [partition]\n    start: 23h59m50s\n    interval: 2ms\n    max-duration: 1ms", 1)), 3000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.data) > scenarios.MaxFileSize {
				t.Fatalf("the input is %d bytes, past the bound", len(tc.data))
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			sc, err := scenarios.Parse(tc.data, "m.yaml", realNames())
			steps := 0
			if err == nil {
				steps = len(nemesis.Resolve(sc.Nemesis.Steps, sc.Nemesis.Random, sc.Seed, sc.Duration))
			}
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			if alloc >= limit {
				t.Fatalf("allocated %d MB (Parse: %v; %d steps), not less than %d MB", alloc>>20, err, steps, limit>>20)
			}
			t.Logf("allocated %d MB for %d steps", alloc>>20, steps)
			switch {
			case tc.steps < 0 && err == nil:
				t.Fatalf("Parse accepted the input (%d steps), want it refused", steps)
			case tc.steps >= 0 && err != nil:
				t.Fatalf("Parse = %v, want the scenario", err)
			case steps < tc.steps || steps > nemesis.MaxSteps:
				t.Fatalf("resolved %d steps, want from %d to %d", steps, tc.steps, nemesis.MaxSteps)
			}
		})
	}
}
