package nemesis_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
)

// TestBehaviourClientPause pauses w0 of a real Redis lock run for two
// seconds and checks, from the ops' times, that w0 really did not act
// during its pause while w1 went on, that the pause lasted at least its
// duration, and that w0 acted again after it.
func TestBehaviourClientPause(t *testing.T) {
	const d = 2 * time.Second
	steps := nemesis.Schedule{{At: time.Second, Fault: "client-pause", Targets: []string{"w0"}, Duration: d}}
	h := runScenario(t, "redis-single-baseline", 2, 5*time.Second, steps, nil)

	began, ended := pauseOf(t, h, 0)
	if ended-began < d {
		t.Fatalf("w0's pause lasted %v, less than its %v", ended-began, d)
	}
	acted := map[int][]time.Duration{} // each worker's op times
	for _, op := range h {
		if !op.IsNemesis() {
			acted[op.Client] = append(acted[op.Client], op.Time)
		}
	}
	during := func(w int) (n int) {
		for _, at := range acted[w] {
			if at > began && at < ended {
				n++
			}
		}
		return n
	}
	if n := during(0); n > 0 {
		t.Fatalf("the paused w0 recorded %d ops during its pause (%v to %v)", n, began, ended)
	}
	if during(1) == 0 {
		t.Fatalf("w1 recorded no op during w0's pause (%v to %v): the run did not go on", began, ended)
	}
	if last := acted[0][len(acted[0])-1]; last <= ended {
		t.Fatalf("w0's last op is at %v, before its pause ended at %v: it did not act again", last, ended)
	}
}

// pauseOf returns the times at which worker w recorded its client pause
// and its resume, failing unless there is exactly one of each.
func pauseOf(t *testing.T, h history.History, w int) (began, ended time.Duration) {
	t.Helper()
	var pauses, resumes []time.Duration
	for _, op := range h {
		var v struct {
			Worker *int `json:"worker"`
		}
		if !op.IsNemesis() || json.Unmarshal(op.Value, &v) != nil || v.Worker == nil || *v.Worker != w {
			continue
		}
		switch op.F {
		case history.FClientPause:
			pauses = append(pauses, op.Time)
		case history.FClientResume:
			resumes = append(resumes, op.Time)
		}
	}
	if len(pauses) != 1 || len(resumes) != 1 {
		t.Fatalf("w%d recorded pauses at %v and resumes at %v, want one of each", w, pauses, resumes)
	}
	return pauses[0], resumes[0]
}
