package nemesis

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func mixSpec() RandomSpec {
	return RandomSpec{
		Faults:      []string{"partition", "partition", "kill", "clock-bump", "client-pause", "failover"},
		Interval:    2 * time.Second,
		MinDuration: 500 * time.Millisecond,
		MaxDuration: 3 * time.Second,
		Targets:     []string{"one", "minority", "n1", "halves"},
		Workers:     []string{"w0", "one"},
		Offsets:     []time.Duration{20 * time.Second, -5 * time.Second},
		Options:     map[string]map[string]string{"kill": {"restart-after": "1s"}},
	}
}

func TestGenerateSameSeedSameSchedule(t *testing.T) {
	spec := mixSpec()
	a := Generate(rand.New(rand.NewPCG(42, 1)), time.Minute, spec)
	b := Generate(rand.New(rand.NewPCG(42, 1)), time.Minute, spec)
	c := Generate(rand.New(rand.NewPCG(43, 1)), time.Minute, spec)
	if len(a) < 5 {
		t.Fatalf("a minute at a 2s interval gave only %d steps: %v", len(a), a)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different schedules:\n%v\n%v", a, b)
	}
	if reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 42 and 43 gave the same schedule %v", a)
	}
}

func TestGenerateFollowsSpec(t *testing.T) {
	spec := mixSpec()
	s := Generate(rand.New(rand.NewPCG(9, 9)), 2*time.Minute, spec)
	kinds := map[string]bool{}
	var end time.Duration
	for i, st := range s {
		kinds[st.Fault] = true
		if st.At < spec.Interval || st.At >= 2*time.Minute {
			t.Errorf("step %d at %v, outside [interval, duration)", i, st.At)
		}
		if st.At < end+spec.Interval/2 {
			t.Errorf("step %d at %v overlaps the previous fault (healed at %v) or its quiet gap", i, st.At, end)
		}
		end = st.At + st.Duration
		if st.Duration < spec.MinDuration || st.Duration > spec.MaxDuration || st.Duration%time.Millisecond != 0 {
			t.Errorf("step %d lasts %v, want whole ms in [%v, %v]", i, st.Duration, spec.MinDuration, spec.MaxDuration)
		}
		switch st.Fault {
		case "client-pause":
			if len(st.Targets) != 1 || !slices.Contains(spec.Workers, st.Targets[0]) {
				t.Errorf("step %d: client-pause targets %v, want one of %v", i, st.Targets, spec.Workers)
			}
		case "failover":
			if len(st.Targets) != 0 {
				t.Errorf("step %d: failover with targets %v", i, st.Targets)
			}
		default:
			if len(st.Targets) != 1 || !slices.Contains(spec.Targets, st.Targets[0]) {
				t.Errorf("step %d: %s targets %v, want one of %v", i, st.Fault, st.Targets, spec.Targets)
			}
			if st.Targets[0] == TargetHalves && !networkFault(st.Fault) {
				t.Errorf("step %d: %s drew halves, a shape of network faults only", i, st.Fault)
			}
		}
		if st.Fault == "clock-bump" && !slices.Contains(spec.Offsets, st.Offset) {
			t.Errorf("step %d: offset %v, want one of %v", i, st.Offset, spec.Offsets)
		}
		if st.Fault == "kill" && st.Options["restart-after"] != "1s" {
			t.Errorf("step %d: kill options %v, want restart-after 1s", i, st.Options)
		}
		if err := CheckStep(st); err != nil {
			t.Errorf("step %d: %v", i, err)
		}
	}
	for _, f := range spec.Faults {
		if !kinds[f] {
			t.Errorf("two minutes of the mix never drew %s: %v", f, s)
		}
	}
}

func TestRandomSpecValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*RandomSpec)
	}{
		{"no faults", func(s *RandomSpec) { s.Faults = nil }},
		{"unknown fault", func(s *RandomSpec) { s.Faults = []string{"meteor"} }},
		{"no interval", func(s *RandomSpec) { s.Interval = 0 }},
		{"min above max", func(s *RandomSpec) { s.MinDuration = 5 * time.Second }},
		{"zero offset", func(s *RandomSpec) { s.Offsets = []time.Duration{0} }},
		{"options of a fault not in the mix", func(s *RandomSpec) { s.Options = map[string]map[string]string{"latency": {"delay": "1s"}} }},
		{"option the fault does not know", func(s *RandomSpec) { s.Options = map[string]map[string]string{"kill": {"delay": "1s"}} }},
		{"choices of a fault not in the mix", func(s *RandomSpec) { s.Choices = map[string]map[string][]string{"reset": {"links": {"all"}}} }},
		{"a choice without values", func(s *RandomSpec) { s.Choices = map[string]map[string][]string{"partition": {"direction": nil}} }},
		{"a choice value the fault refuses", func(s *RandomSpec) {
			s.Choices = map[string]map[string][]string{"partition": {"direction": {"both", "sideways"}}}
		}},
		{"an option both fixed and drawn", func(s *RandomSpec) {
			s.Choices = map[string]map[string][]string{"kill": {"restart-after": {"1s", "2s"}}}
		}},
		{"an unknown pause point", func(s *RandomSpec) { s.Points = []string{"before-write", "mid-air"} }},
	}
	known := Names()
	good := mixSpec()
	if err := good.Validate(known); err != nil {
		t.Fatalf("valid spec rejected: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mixSpec()
			tc.change(&s)
			if err := s.Validate(known); !errors.Is(err, ErrRandomSpec) {
				t.Fatalf("Validate = %v, want ErrRandomSpec", err)
			}
		})
	}
}

// TestRandomSpecValidateResolution requires Validate to refuse, naming the
// field, every time that a draw in whole Resolutions would round to
// nothing or that is below its stated minimum, and to accept the smallest
// times that are not.
func TestRandomSpecValidateResolution(t *testing.T) {
	tests := []struct {
		name   string
		change func(*RandomSpec)
		field  string // "" when the spec is valid
	}{
		{"interval of 1ns", func(s *RandomSpec) { s.Interval, s.MinDuration, s.MaxDuration = 1, 1, 1 }, "interval"},
		{"interval of 600µs", func(s *RandomSpec) { s.Interval = 600 * time.Microsecond }, "interval"},
		{"interval just below the minimum", func(s *RandomSpec) { s.Interval = MinInterval - 1 }, "interval"},
		{"interval at the minimum", func(s *RandomSpec) { s.Interval, s.MinDuration, s.MaxDuration = MinInterval, 0, 0 }, ""},
		{"no interval", func(s *RandomSpec) { s.Interval = 0 }, "interval"},
		{"negative start", func(s *RandomSpec) { s.Start = -time.Second }, "start"},
		{"min-duration of 1ns", func(s *RandomSpec) { s.MinDuration = 1 }, "min-duration"},
		{"max-duration below the resolution", func(s *RandomSpec) { s.MinDuration, s.MaxDuration = 0, Resolution-1 }, "max-duration"},
		{"negative min-duration", func(s *RandomSpec) { s.MinDuration = -time.Second }, "min-duration"},
		{"durations of one resolution", func(s *RandomSpec) { s.MinDuration, s.MaxDuration = Resolution, Resolution }, ""},
		{"min-duration left out", func(s *RandomSpec) { s.MinDuration = 0 }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mixSpec()
			tc.change(&s)
			err := s.Validate(Names())
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate = %v, want nil", err)
			case tc.field == "":
			case !errors.As(err, &fe) || !errors.Is(err, ErrRandomSpec):
				t.Fatalf("Validate = %v, want a FieldError of %s", err, tc.field)
			case fe.Field != tc.field:
				t.Fatalf("Validate names %s (%v), want %s", fe.Field, err, tc.field)
			}
		})
	}
}

// TestGenerateBoundedWhateverItIsGiven gives Generate and Resolve specs no
// validation would accept, each of which once made the loop run for ever
// or overflow, and requires a schedule of at most MaxSteps steps, each
// inside the run, moving on by at least one Resolution, and no more steps
// than StepBound says.
func TestGenerateBoundedWhateverItIsGiven(t *testing.T) {
	const forever = time.Duration(math.MaxInt64)
	tests := []struct {
		name     string
		duration time.Duration
		spec     RandomSpec
	}{
		{"every time 1ns", time.Minute, RandomSpec{Faults: []string{"partition"}, Interval: 1, MinDuration: 1, MaxDuration: 1}},
		{"interval of 600µs", time.Hour, RandomSpec{Faults: []string{"kill"}, Interval: 600 * time.Microsecond}},
		{"the longest run at 1ns", forever, RandomSpec{Faults: []string{"client-pause"}, Interval: 1}},
		{"negative start and durations", time.Minute, RandomSpec{Faults: []string{"partition"}, Start: -time.Hour, Interval: 1, MinDuration: -time.Second, MaxDuration: -time.Millisecond}},
		{"the longest durations", forever, RandomSpec{Faults: []string{"partition"}, Interval: forever, MinDuration: forever, MaxDuration: forever}},
		{"durations from none to the longest", forever, RandomSpec{Faults: []string{"pause"}, Interval: 3, MinDuration: 0, MaxDuration: forever}},
		{"min above max", time.Minute, RandomSpec{Faults: []string{"kill"}, Interval: 1, MinDuration: time.Second, MaxDuration: 1}},
		{"start at the end", time.Minute, RandomSpec{Faults: []string{"kill"}, Start: time.Minute, Interval: time.Second}},
		{"no faults", time.Minute, RandomSpec{Interval: 1}},
		{"negative interval", time.Minute, RandomSpec{Faults: []string{"kill"}, Interval: -time.Second}},
		{"negative run", -time.Minute, RandomSpec{Faults: []string{"kill"}, Interval: time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Generate(rand.New(rand.NewPCG(1, 2)), tc.duration, tc.spec)
			if len(s) > MaxSteps {
				t.Fatalf("%d steps, above MaxSteps %d", len(s), MaxSteps)
			}
			if bound := tc.spec.StepBound(tc.duration); int64(len(s)) > bound {
				t.Fatalf("%d steps, above StepBound %d", len(s), bound)
			}
			for i, st := range s {
				if st.At < 0 || st.At >= tc.duration {
					t.Fatalf("step %d at %v, outside [0, %v)", i, st.At, tc.duration)
				}
				if i > 0 && st.At-s[i-1].At < Resolution {
					t.Fatalf("step %d at %v, less than %v after step %d at %v", i, st.At, Resolution, i-1, s[i-1].At)
				}
			}
			r := Resolve(Schedule{{At: 0, Fault: "kill"}}, &tc.spec, 3, tc.duration)
			if len(r) > MaxSteps {
				t.Fatalf("Resolve gave %d steps, above MaxSteps %d", len(r), MaxSteps)
			}
		})
	}
}

// TestStepBoundHolds draws schedules of valid specs over many seeds and
// requires StepBound never to be below what Generate draws, and to be
// reached by a spec whose every step has the same length.
func TestStepBoundHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 300 {
		spec := mixSpec()
		spec.Interval = MinInterval + time.Duration(rng.Int64N(int64(3*time.Second)))
		spec.Start = time.Duration(rng.Int64N(int64(2 * time.Second)))
		spec.MinDuration = time.Duration(rng.Int64N(int64(time.Second)))
		spec.MaxDuration = spec.MinDuration + time.Duration(rng.Int64N(int64(3*time.Second)))
		spec.MinDuration = max(spec.MinDuration, Resolution)
		duration := time.Duration(rng.Int64N(int64(5 * time.Minute)))
		if err := spec.Validate(Names()); err != nil {
			t.Fatalf("draw %d: %v", i, err)
		}
		s := Generate(rand.New(rand.NewPCG(uint64(i), 1)), duration, spec)
		if bound := spec.StepBound(duration); int64(len(s)) > bound {
			t.Fatalf("draw %d: %d steps over %v, above StepBound %d of %s", i, len(s), duration, bound, spec)
		}
	}
	// Every fault 1ms and every gap 1ms (an interval of 2ms: gaps from
	// 1ms to 3ms, and each draw of 1ms): the bound counts each 2ms.
	spec := RandomSpec{Faults: []string{"kill"}, Start: 10 * time.Millisecond, Interval: MinInterval, MinDuration: Resolution, MaxDuration: Resolution}
	longest := 0
	for seed := range uint64(50) {
		longest = max(longest, len(Generate(rand.New(rand.NewPCG(seed, 1)), 30*time.Millisecond, spec)))
	}
	if bound := spec.StepBound(30 * time.Millisecond); int64(longest) > bound || bound != 10 {
		t.Fatalf("StepBound %d, want 10 (steps at 10, 12, ..., 28ms); Generate drew up to %d", bound, longest)
	}
}

// TestReadScheduleKeepsWithinMaxSteps reads a schedule of MaxSteps steps
// and refuses one of a step more, naming its line.
func TestReadScheduleKeepsWithinMaxSteps(t *testing.T) {
	tests := []struct {
		name  string
		steps int
		want  string // "": read
	}{
		{"steps up to the bound", MaxSteps, ""},
		{"a step past the bound", MaxSteps + 1, fmt.Sprintf("schedule line %d: more than %d steps", MaxSteps+1, MaxSteps)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteSchedule(&buf, make(Schedule, tc.steps)); err != nil {
				t.Fatal(err)
			}
			s, err := ReadSchedule(&buf)
			switch {
			case tc.want == "" && (err != nil || len(s) != tc.steps):
				t.Fatalf("ReadSchedule = %d steps, %v; want %d steps", len(s), err, tc.steps)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("ReadSchedule = %d steps, %v; want an error saying %q", len(s), err, tc.want)
			}
		})
	}
}

// TestResolveKeepsWithinMaxSteps requires the random steps of Resolve to
// fill at most what the scripted steps leave of MaxSteps.
func TestResolveKeepsWithinMaxSteps(t *testing.T) {
	scripted := func(n int) Schedule {
		s := make(Schedule, n)
		for i := range s {
			s[i] = Step{At: time.Duration(i) * time.Millisecond, Fault: "kill", Targets: []string{"n1"}}
		}
		return s
	}
	dense := RandomSpec{Faults: []string{"partition"}, Interval: MinInterval, MinDuration: Resolution, MaxDuration: Resolution}
	tests := []struct {
		name     string
		scripted int
		want     int
	}{
		{"no scripted steps", 0, MaxSteps},
		{"some scripted steps", 10, MaxSteps},
		{"scripted steps up to the bound", MaxSteps, MaxSteps},
		{"scripted steps past the bound", MaxSteps + 5, MaxSteps + 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Resolve(scripted(tc.scripted), &dense, 1, time.Hour)
			if len(got) != tc.want {
				t.Fatalf("%d steps, want %d", len(got), tc.want)
			}
		})
	}
}

// TestGenerateDrawsChoicesAndPoints checks that a spec's choices and pause
// points are drawn per step, every value in time, only for their faults,
// and that worker targets go to network faults only.
func TestGenerateDrawsChoicesAndPoints(t *testing.T) {
	spec := RandomSpec{
		Faults:   []string{"partition", "client-pause", "kill"},
		Interval: time.Second, MinDuration: 200 * time.Millisecond, MaxDuration: time.Second,
		Targets: []string{"one", "w0"},
		Choices: map[string]map[string][]string{
			"partition":    {"direction": {"both", "inbound", "outbound"}},
			"client-pause": {"isolate": {"false", "true"}},
		},
		Points: []string{BeforeWrite, AfterResponse},
	}
	if err := spec.Validate(Names()); err != nil {
		t.Fatalf("valid spec rejected: %v", err)
	}
	s := Generate(rand.New(rand.NewPCG(5, 5)), 10*time.Minute, spec)
	seen := map[string]bool{}
	for i, st := range s {
		if err := CheckStep(st); err != nil {
			t.Errorf("step %d: %v", i, err)
		}
		switch st.Fault {
		case "partition":
			seen["direction "+st.Options["direction"]] = true
			seen["partition "+st.Targets[0]] = true
			if st.Point != "" || st.Options["isolate"] != "" {
				t.Errorf("step %d: a partition with a point or isolate: %v", i, st)
			}
		case "client-pause":
			seen["isolate "+st.Options["isolate"]] = true
			seen["point "+st.Point] = true
			if st.Options["direction"] != "" {
				t.Errorf("step %d: a client pause with a direction: %v", i, st)
			}
		case "kill":
			if st.Targets[0] != "one" || st.Point != "" || len(st.Options) != 0 {
				t.Errorf("step %d: kill drew %v, want target one and nothing else", i, st)
			}
		}
	}
	for _, want := range []string{"direction both", "direction inbound", "direction outbound", "partition one", "partition w0",
		"isolate false", "isolate true", "point before-write", "point after-response"} {
		if !seen[want] {
			t.Errorf("ten minutes of the spec never drew %s: %v", want, s)
		}
	}
	// A spec without choices and points draws what it drew before them:
	// the same seed gives the same steps with or without empty fields.
	plain := mixSpec()
	withEmpty := mixSpec()
	withEmpty.Choices, withEmpty.Points = map[string]map[string][]string{}, nil
	if a, b := Generate(rand.New(rand.NewPCG(3, 3)), time.Minute, plain), Generate(rand.New(rand.NewPCG(3, 3)), time.Minute, withEmpty); !reflect.DeepEqual(a, b) {
		t.Fatalf("empty choices changed the schedule:\n%v\n%v", a, b)
	}
}

func TestResolveMergesAndReplays(t *testing.T) {
	scripted := Schedule{
		{At: 5 * time.Second, Fault: "pause", Targets: []string{"n1"}, Duration: time.Second},
		{At: 90 * time.Second, Fault: "kill", Targets: []string{"n2"}}, // after the run
		{At: 0, Fault: "client-pause", Targets: []string{"w0"}},
	}
	spec := mixSpec()
	a := Resolve(scripted, &spec, 11, time.Minute)
	b := Resolve(scripted, &spec, 11, time.Minute)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different resolved schedules")
	}
	if a[0].Fault != "client-pause" || a[0].At != 0 {
		t.Fatalf("first step %v, want the scripted client-pause at 0", a[0])
	}
	for i, st := range a {
		if st.At > time.Minute {
			t.Fatalf("step %d at %v after the run's minute", i, st.At)
		}
		if i > 0 && st.At < a[i-1].At {
			t.Fatalf("steps out of order at %d: %v", i, a)
		}
	}
	if !slices.ContainsFunc(a, func(s Step) bool { return s.Fault == "pause" && s.At == 5*time.Second }) {
		t.Fatalf("the scripted pause is missing from %v", a)
	}
	if got := Resolve(scripted, nil, 11, time.Minute); len(got) != 2 {
		t.Fatalf("without a random spec: %v, want the 2 scripted steps inside the run", got)
	}

	var buf bytes.Buffer
	if err := WriteSchedule(&buf, a); err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(buf.Bytes(), []byte("\n")); lines != len(a) {
		t.Fatalf("nemesis.jsonl has %d lines for %d steps", lines, len(a))
	}
	back, err := ReadSchedule(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, a) {
		t.Fatalf("JSONL round trip changed the schedule:\n%v\n%v", a, back)
	}
}

func TestStepString(t *testing.T) {
	st := Step{At: time.Second, Fault: "partition", Targets: []string{"w0"}, Duration: 2 * time.Second,
		Options: map[string]string{"nodes": "n4,n5", "links": "clients"}}
	if got, want := st.String(), "at 1s partition w0 for 2s links=clients nodes=n4,n5"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestRandomSpecString(t *testing.T) {
	tests := []struct {
		name string
		spec RandomSpec
		want string
	}{
		{
			name: "defaults filled in",
			spec: RandomSpec{Faults: []string{"partition"}, Interval: 2 * time.Second},
			want: "partition, one at a time from 2s, quiet gaps 1s–3s, each lasting 2s; targets one",
		},
		{
			name: "client faults name their workers",
			spec: RandomSpec{Faults: []string{"client-pause"}, Start: 500 * time.Millisecond, Interval: time.Second,
				MinDuration: 200 * time.Millisecond, MaxDuration: 3 * time.Second, Workers: []string{"one"}},
			want: "client-pause, one at a time from 500ms, quiet gaps 500ms–1.5s, each lasting 200ms–3s; workers one",
		},
		{
			name: "node faults with options",
			spec: RandomSpec{Faults: []string{"kill"}, Start: time.Second, Interval: time.Second,
				MinDuration: 2500 * time.Millisecond, MaxDuration: 4 * time.Second, Targets: []string{"one", "minority"},
				Options: map[string]map[string]string{"kill": {"restart-after": "2500ms"}}},
			want: "kill, one at a time from 1s, quiet gaps 500ms–1.5s, each lasting 2.5s–4s; targets one or minority; kill restart-after=2500ms",
		},
		{
			name: "clock faults name their offsets",
			spec: RandomSpec{Faults: []string{"clock-bump", "failover"}, Interval: time.Second,
				Offsets: []time.Duration{-5 * time.Second, 20 * time.Second}},
			want: "clock-bump or failover, one at a time from 1s, quiet gaps 500ms–1.5s, each lasting 1s; targets one; offsets -5s or +20s",
		},
		{
			name: "drawn points and options",
			spec: RandomSpec{Faults: []string{"client-pause"}, Interval: time.Second, Workers: []string{"one"},
				Points:  []string{BeforeWrite, AfterResponse},
				Choices: map[string]map[string][]string{"client-pause": {"isolate": {"false", "true"}}}},
			want: "client-pause, one at a time from 1s, quiet gaps 500ms–1.5s, each lasting 1s; workers one; points before-write or after-response; client-pause isolate false or true",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.spec.String(); got != tc.want {
				t.Fatalf("String() =\n %q\nwant\n %q", got, tc.want)
			}
		})
	}
}
