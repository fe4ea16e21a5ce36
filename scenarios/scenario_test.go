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

// TestParseTCP decodes the tcp block: what is given is kept, what is left
// out is zero (the clients' own), and a value the kernel would refuse or
// round is an error naming the file, the line and the field.
func TestParseTCP(t *testing.T) {
	tests := []struct {
		name string
		tcp  string // the block, appended to the valid scenario
		want TCP
		err  []string // substrings of the error; nil when valid
	}{
		{"absent", "", TCP{}, nil},
		{"empty", "tcp: {}\n", TCP{}, nil},
		{"every field", "tcp:\n  keepalive-idle: 5s\n  keepalive-interval: 2s\n  keepalive-count: 3\n  user-timeout: 1500ms\n",
			TCP{KeepAliveIdle: 5 * time.Second, KeepAliveInterval: 2 * time.Second, KeepAliveCount: 3, UserTimeout: 1500 * time.Millisecond}, nil},
		{"user timeout only", "tcp: {user-timeout: 2s}\n", TCP{UserTimeout: 2 * time.Second}, nil},
		{"the kernel's largest", "tcp: {keepalive-idle: 32767s, keepalive-interval: 32767s, keepalive-count: 127, user-timeout: 596h31m23.647s}\n",
			TCP{KeepAliveIdle: MaxKeepAlive, KeepAliveInterval: MaxKeepAlive, KeepAliveCount: MaxKeepAliveCount, UserTimeout: MaxUserTimeout}, nil},
		{"idle below a second", "tcp:\n  keepalive-idle: 500ms\n", TCP{}, []string{"t.yaml:21", "tcp.keepalive-idle", "whole number of seconds"}},
		{"idle not whole seconds", "tcp:\n  keepalive-idle: 1500ms\n", TCP{}, []string{"t.yaml:21", "tcp.keepalive-idle", "whole number of seconds"}},
		{"idle given as zero", "tcp:\n  keepalive-idle: 0s\n", TCP{}, []string{"t.yaml:21", "tcp.keepalive-idle", "leave it out"}},
		{"idle too long", "tcp:\n  keepalive-idle: 10h\n", TCP{}, []string{"t.yaml:21", "tcp.keepalive-idle", "32767s"}},
		{"negative interval", "tcp:\n  keepalive-interval: -1s\n", TCP{}, []string{"t.yaml:21", "tcp.keepalive-interval"}},
		{"zero count", "tcp:\n  keepalive-count: 0\n", TCP{}, []string{"t.yaml:21", "tcp.keepalive-count", "from 1 to 127"}},
		{"count too large", "tcp:\n  keepalive-count: 128\n", TCP{}, []string{"t.yaml:21", "tcp.keepalive-count", "from 1 to 127"}},
		{"user timeout below a millisecond", "tcp:\n  user-timeout: 500us\n", TCP{}, []string{"t.yaml:21", "tcp.user-timeout", "whole number of milliseconds"}},
		{"user timeout too long", "tcp:\n  user-timeout: 600h\n", TCP{}, []string{"t.yaml:21", "tcp.user-timeout"}},
		{"user timeout not a duration", "tcp:\n  user-timeout: 2\n", TCP{}, []string{"t.yaml", "line 21", "time.Duration"}},
		{"unknown field", "tcp:\n  keepalive: 5s\n", TCP{}, []string{"t.yaml", "line 21", "keepalive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse([]byte(valid+tt.tcp), "t.yaml", testNames)
			if tt.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				if s.TCP != tt.want {
					t.Errorf("tcp %+v, want %+v", s.TCP, tt.want)
				}
				data, err := Marshal(s)
				if err != nil {
					t.Fatal(err)
				}
				again, err := Parse(data, "again.yaml", testNames)
				if err != nil || again.TCP != tt.want {
					t.Errorf("stored and read again: tcp %+v, %v; want %+v\n%s", again.TCP, err, tt.want, data)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			for _, w := range tt.err {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
