package lockapi

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The verdicts of a run.
const (
	Valid   = "valid"
	Invalid = "invalid"
	Unknown = "unknown"
)

// Result is what a run stored in its results.json, in short.
type Result struct {
	// Dir is the run's directory in the store (history.jsonl,
	// results.json, report.html); Replay takes it.
	Dir      string
	Scenario string
	Seed     uint64
	// Client is the name the lock's client gave itself in its init_ok
	// (Lock's Client).
	Client string
	// Verdict is the run's: Valid, Invalid or Unknown.
	Verdict string
	// ExpectationMet says whether the verdict is the one the scenario
	// expected.
	ExpectationMet bool
	// Anomalies is every checker's findings, in the checkers' order.
	Anomalies []Anomaly
	// Notes is every checker's note (why a verdict is unknown, say),
	// prefixed with the checker's name.
	Notes []string
	// FailedFaults counts the faults and heals that failed: the run did
	// not do what its scenario said.
	FailedFaults int
	// ExitCode is the command's: 0 the scenario ended as it expected, 1
	// it did not, 2 unknown.
	ExitCode int
}

// Anomaly is one finding of a checker: its kind (double-hold, ...), the
// key, the ops of the history that prove it and its sentence.
type Anomaly struct {
	Checker string
	Kind    string
	Key     string
	Ops     []int
	Message string
}

// Kinds lists the anomaly kinds the run found, each once, in the order
// first found.
func (r *Result) Kinds() []string {
	var out []string
	for _, a := range r.Anomalies {
		if !slices.Contains(out, a.Kind) {
			out = append(out, a.Kind)
		}
	}
	return out
}

// resultsFile is the part of results.json a Result reads.
type resultsFile struct {
	Scenario       string `json:"scenario"`
	Seed           uint64 `json:"seed"`
	Verdict        string `json:"verdict"`
	ExpectationMet bool   `json:"expectation_met"`
	Checkers       []struct {
		Name      string `json:"name"`
		Note      string `json:"note"`
		Anomalies []struct {
			Kind    string `json:"kind"`
			Key     string `json:"key"`
			Ops     []int  `json:"ops"`
			Message string `json:"message"`
		} `json:"anomalies"`
	} `json:"checkers"`
	FailedFaults []json.RawMessage `json:"failed_faults"`
	LockClient   *struct {
		Name string `json:"name"`
	} `json:"lock_client"`
}

// decodeResults is the Result of the run in dir whose results.json is b.
func decodeResults(dir string, b []byte) (*Result, error) {
	var f resultsFile
	if err := json.Unmarshal(b, &f); err != nil {
		return &Result{Dir: dir}, fmt.Errorf("lockapi: %s/results.json: %w", dir, err)
	}
	r := &Result{Dir: dir, Scenario: f.Scenario, Seed: f.Seed, Verdict: f.Verdict, ExpectationMet: f.ExpectationMet, FailedFaults: len(f.FailedFaults)}
	if f.LockClient != nil {
		r.Client = f.LockClient.Name
	}
	for _, c := range f.Checkers {
		if c.Note != "" {
			r.Notes = append(r.Notes, c.Name+": "+c.Note)
		}
		for _, a := range c.Anomalies {
			r.Anomalies = append(r.Anomalies, Anomaly{Checker: c.Name, Kind: a.Kind, Key: a.Key, Ops: a.Ops, Message: a.Message})
		}
	}
	return r, nil
}
