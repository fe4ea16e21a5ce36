package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
)

var testNames = Names{
	Algorithms: []string{"redis-single", "redis-fenced"},
	Systems:    []string{"redis", "postgres"},
	Faults:     []string{"client-pause", "partition"},
}

const valid = `name: t
system:
  name: redis
  nodes: 1
lock:
  algorithm: redis-single
  ttl: 1s
workers: 2
duration: 3s
nemesis:
  steps:
    - at: 1s
      fault: client-pause
      targets: [w0]
      point: before-write
      duration: 1500ms
expect:
  verdict: invalid
  anomalies: [stale-write]
`

func TestParseValid(t *testing.T) {
	s, err := Parse([]byte(valid), "t.yaml", testNames)
	if err != nil {
		t.Fatal(err)
	}
	if s.Lock.TTL != time.Second || s.Duration != 3*time.Second || s.Workers != 2 {
		t.Errorf("decoded %+v", s)
	}
	if got := s.Nemesis.Steps[0]; got.Duration != 1500*time.Millisecond || got.Point != "before-write" || got.Targets[0] != "w0" {
		t.Errorf("step %+v", got)
	}
	if s.Resource != Unfenced || len(s.Lock.Keys) != 1 || s.Quiet != DefaultQuiet {
		t.Errorf("defaults not applied: %+v", s)
	}
	if s.Expect.Verdict != checker.Invalid {
		t.Errorf("expect %+v", s.Expect)
	}
}

// TestParseErrors requires every bad scenario to fail with ErrInvalid, the
// file and line, and a hint naming what is allowed.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		replace [2]string
		want    []string
	}{
		{"unknown field", [2]string{"workers: 2", "workers: 2\ncolour: red"}, []string{"t.yaml", "line 9", "colour"}},
		{"unknown algorithm", [2]string{"algorithm: redis-single", "algorithm: redis-singel"}, []string{"t.yaml:6", "redis-singel", "redis-single, redis-fenced"}},
		{"unknown system", [2]string{"name: redis", "name: mongo"}, []string{"t.yaml:3", "mongo", "redis, postgres"}},
		{"negative duration", [2]string{"duration: 3s", "duration: -3s"}, []string{"t.yaml:9", "duration", "positive"}},
		{"zero ttl", [2]string{"ttl: 1s", "ttl: 0s"}, []string{"t.yaml:7", "ttl"}},
		{"no workers", [2]string{"workers: 2", "workers: 0"}, []string{"t.yaml:8", "workers"}},
		{"unknown fault", [2]string{"fault: client-pause", "fault: meteor"}, []string{"t.yaml:13", "meteor", "client-pause, partition"}},
		{"step after the end", [2]string{"- at: 1s", "- at: 10s"}, []string{"t.yaml:12", "at"}},
		{"unknown pause point", [2]string{"point: before-write", "point: during-lunch"}, []string{"t.yaml:15", "during-lunch", "after-response"}},
		{"unknown anomaly kind", [2]string{"anomalies: [stale-write]", "anomalies: [stale-wrote]"}, []string{"t.yaml:19", "stale-wrote", "double-hold"}},
		{"unknown verdict", [2]string{"verdict: invalid", "verdict: broken"}, []string{"t.yaml:18", "broken"}},
		{"unknown liveness", [2]string{"verdict: invalid", "verdict: invalid\n  liveness: sluggish"}, []string{"t.yaml", "sluggish", "live, stuck, unavailable"}},
		{"not a duration", [2]string{"ttl: 1s", "ttl: soon"}, []string{"t.yaml", "line 7", "soon"}},
		{"renewal not shorter than the ttl", [2]string{"ttl: 1s", "ttl: 1s\n  renew: 1s"}, []string{"t.yaml", "renew", "less than the ttl"}},
		{"negative renewal", [2]string{"ttl: 1s", "ttl: 1s\n  renew: -1s"}, []string{"t.yaml", "renew"}},
		{"unknown way of acquiring", [2]string{"ttl: 1s", "ttl: 1s\n  acquire: beg"}, []string{"t.yaml", "beg", "try, wait"}},
		{"waiting without a bound", [2]string{"ttl: 1s", "ttl: 1s\n  acquire: wait"}, []string{"t.yaml", "wait", "positive"}},
		{"a bound without waiting", [2]string{"ttl: 1s", "ttl: 1s\n  wait: 2s"}, []string{"t.yaml", "only for acquire: wait"}},
		{"bad yaml", [2]string{"workers: 2", "workers: [2"}, []string{"t.yaml", "line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := strings.Replace(valid, tt.replace[0], tt.replace[1], 1)
			if data == valid {
				t.Fatalf("replacement %q did not apply", tt.replace[0])
			}
			_, err := Parse([]byte(data), "t.yaml", testNames)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	s, err := Parse([]byte(valid), "t.yaml", testNames)
	if err != nil {
		t.Fatal(err)
	}
	s.Seed = 99
	data, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse(data, "again.yaml", testNames)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	data2, err := Marshal(again)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(data2) {
		t.Errorf("round trip changed the scenario:\n%s\n---\n%s", data, data2)
	}
	if again.Seed != 99 || again.Nemesis.Steps[0].Duration != 1500*time.Millisecond {
		t.Errorf("round trip lost values: %+v", again)
	}
}
