package scenarios

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/nemesis"
)

var nemesisNames = Names{Algorithms: []string{"redis-single"}, Systems: []string{"redis", "etcd"}, Faults: nemesis.Names()}

const randomScenario = `name: random-faults
system:
  name: redis
  topology: masters
  nodes: 5
lock:
  algorithm: redis-single
  ttl: 2s
workers: 4
duration: 30s
seed: 17
nemesis:
  steps:
    - at: 1s
      fault: clock-bump
      targets: [n3]
      offset: +20s
      duration: 2s
    - at: 4s
      fault: partition
      targets: [w0]
      options: {nodes: "n4,n5"}
  random:
    faults: [partition, kill, clock-bump, latency, client-pause]
    interval: 2s
    min-duration: 500ms
    max-duration: 2500ms
    targets: [one, minority]
    offsets: [20s, -5s]
    options:
      kill: {restart-after: 2s}
      latency: {delay: 200ms, jitter: 20ms}
`

// TestStoredScheduleReplaysExactly resolves a scenario's schedule as a run
// does, stores the resolved scenario, reads it back, and checks that the
// stored one gives the same schedule, with any seed.
func TestStoredScheduleReplaysExactly(t *testing.T) {
	s, err := Parse([]byte(randomScenario), "random.yaml", nemesisNames)
	if err != nil {
		t.Fatal(err)
	}
	steps := nemesis.Resolve(s.Nemesis.Steps, s.Nemesis.Random, s.Seed, s.Duration)
	if len(steps) < 6 {
		t.Fatalf("resolved only %d steps: %v", len(steps), steps)
	}
	if again := nemesis.Resolve(s.Nemesis.Steps, s.Nemesis.Random, s.Seed, s.Duration); !reflect.DeepEqual(steps, again) {
		t.Fatal("the same scenario and seed resolved to different schedules")
	}
	other := nemesis.Resolve(s.Nemesis.Steps, s.Nemesis.Random, s.Seed+1, s.Duration)
	if reflect.DeepEqual(steps, other) {
		t.Fatal("seeds 17 and 18 resolved to the same schedule")
	}

	stored := *s
	stored.Nemesis = Nemesis{Steps: steps}
	data, err := Marshal(&stored)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "random:") {
		t.Fatalf("the stored scenario still has a random spec:\n%s", data)
	}
	replay, err := Parse(data, "store/scenario.yaml", nemesisNames)
	if err != nil {
		t.Fatalf("the stored scenario does not parse: %v\n%s", err, data)
	}
	if !reflect.DeepEqual(replay.Nemesis.Steps, steps) {
		t.Fatalf("stored steps changed in the round trip:\nwant %v\ngot  %v", steps, replay.Nemesis.Steps)
	}
	for _, seed := range []uint64{replay.Seed, 99} {
		if got := nemesis.Resolve(replay.Nemesis.Steps, replay.Nemesis.Random, seed, replay.Duration); !reflect.DeepEqual(got, steps) {
			t.Fatalf("replay with seed %d resolved to\n%v\nwant\n%v", seed, got, steps)
		}
	}
}

func TestNemesisValidation(t *testing.T) {
	tests := []struct {
		name, replace, with, want string
	}{
		{"unknown step option", `options: {nodes: "n4,n5"}`, `options: {speed: fast}`, `random.yaml:19: nemesis.steps.1`},
		{"clock-bump without offset", `offset: +20s`, ``, `random.yaml:14: nemesis.steps.0`},
		{"unknown random fault", `faults: [partition, kill`, `faults: [meteor, kill`, `random.yaml:23: nemesis.random`},
		{"random without interval", `interval: 2s`, ``, `random.yaml:23: nemesis.random.interval: must be at least 2ms`},
		{"bad random option", `restart-after: 2s`, `restart-after: soon`, `restart-after`},
		{"a step the system cannot take", "  name: redis\n  topology: masters", "  name: etcd", `random.yaml:14: nemesis.steps.0.fault: nemesis: the system cannot take the fault: clock-bump cannot act on etcd nodes`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(randomScenario, tc.replace, tc.with, 1)
			if src == randomScenario {
				t.Fatalf("%q is not in the scenario", tc.replace)
			}
			_, err := Parse([]byte(src), "random.yaml", nemesisNames)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := Parse([]byte(randomScenario), "random.yaml", nemesisNames); err != nil {
		t.Fatalf("the valid scenario is rejected: %v", err)
	}
}

// TestFaultsAgainstTheSystem checks the faults of a scenario against the
// systems each can act on (nemesis.Facts.Systems): a clock fault on etcd is
// refused, in a step and in the random mix, unless the step expects its
// failure.
func TestFaultsAgainstTheSystem(t *testing.T) {
	etcd := strings.Replace(randomScenario, "  name: redis\n  topology: masters", "  name: etcd", 1)
	expected := strings.Replace(etcd, "offset: +20s", "offset: +20s\n      expect-failure: true", 1)
	tests := []struct {
		name, src, want string
	}{
		{"a step", etcd, `random.yaml:14: nemesis.steps.0.fault: nemesis: the system cannot take the fault: clock-bump cannot act on etcd nodes`},
		{"in the random mix, after a step that expects it", expected, `nemesis.random.faults.2: nemesis: the system cannot take the fault: clock-bump cannot act on etcd nodes`},
		{"neither", strings.Replace(expected, "clock-bump, latency", "latency", 1), ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src), "random.yaml", nemesisNames)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Parse = %v, want no error", err)
			case tc.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Parse = %v, want ErrInvalid mentioning %q", err, tc.want)
			}
		})
	}
}
