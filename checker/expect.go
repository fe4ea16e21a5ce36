package checker

import "github.com/jepsen-lite/jepsen-lite/checker/anomaly"

// Expectation is what a scenario expects of its run: a verdict, the anomaly
// kinds that must all be found and the kinds that must not be found (for
// instance: two workers believed they held the lock, but fencing kept the
// resource exact, so no stale-write and no lost-update), and, apart from
// them, its liveness.
type Expectation struct {
	Verdict   Verdict  `json:"verdict" yaml:"verdict"`
	Anomalies []string `json:"anomalies,omitempty" yaml:"anomalies,omitempty"`
	Absent    []string `json:"absent,omitempty" yaml:"absent,omitempty"`
	// Liveness is ExpectStuck, ExpectUnavailable or ExpectLostTask (the
	// liveness report must find an anomaly of that kind; it may find the
	// others too),
	// ExpectLive (the liveness verdict must be valid: judged, and neither
	// stuck nor unavailable) or empty (not expected either way).
	Liveness string `json:"liveness,omitempty" yaml:"liveness,omitempty"`
}

// The liveness expectations.
const (
	ExpectStuck       = Stuck
	ExpectUnavailable = Unavailable
	ExpectLostTask    = LostTask
	ExpectLive        = "live"
)

// LivenessExpectations returns the values Expectation.Liveness may take
// besides empty.
func LivenessExpectations() []string {
	return []string{ExpectLive, ExpectStuck, ExpectUnavailable, ExpectLostTask}
}

// Met reports whether results satisfy e: the overall verdict equals
// e.Verdict, every kind in e.Anomalies was found by some checker, no kind
// in e.Absent was, and live (nil when the run was not checked for it) is
// what e.Liveness asks. A zero Expectation expects a valid verdict.
func (e Expectation) Met(verdict Verdict, results []Result, live *LivenessResult) bool {
	want := e.Verdict
	if want == "" {
		want = Valid
	}
	if verdict != want {
		return false
	}
	switch e.Liveness {
	case ExpectStuck, ExpectUnavailable, ExpectLostTask:
		if !live.Has(e.Liveness) {
			return false
		}
	case ExpectLive:
		if live == nil || live.Verdict != Valid {
			return false
		}
	}
	found := map[string]bool{}
	for _, r := range results {
		for _, a := range r.Anomalies {
			found[a.Kind] = true
		}
	}
	for _, k := range e.Anomalies {
		if !found[k] {
			return false
		}
	}
	for _, k := range e.Absent {
		if found[k] {
			return false
		}
	}
	return true
}

// Overall returns the worst verdict among results; no results is Unknown.
func Overall(results []Result) Verdict {
	if len(results) == 0 {
		return Unknown
	}
	v := Valid
	for _, r := range results {
		v = Worse(v, r.Verdict)
	}
	return v
}

// Kinds returns every anomaly kind a checker of the verdict can report:
// anomaly.Kinds but the liveness kinds, and Malformed.
func Kinds() []string {
	return append(anomaly.Names(func(k anomaly.Kind) bool { return !k.Liveness() }), Malformed)
}
