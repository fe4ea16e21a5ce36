// Package checker owns the verdicts over a history: whether the history is
// well-formed, whether mutual exclusion held, whether fencing tokens kept their
// order and whether the protected resource saw every increment. It depends on
// the history package alone, so any stored history can be re-checked offline.
package checker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// Verdict is the three-valued outcome of a check.
type Verdict string

// The verdicts, ordered Valid < Unknown < Invalid by Worse.
const (
	Valid   Verdict = "valid"
	Unknown Verdict = "unknown"
	Invalid Verdict = "invalid"
)

func (v Verdict) rank() int {
	switch v {
	case Valid:
		return 0
	case Unknown:
		return 1
	default:
		return 2
	}
}

// Worse returns the worse of two verdicts: invalid beats unknown beats valid.
func Worse(a, b Verdict) Verdict {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// The safety anomaly kinds, under the names package anomaly declares
// (docs/history.md §4).
const (
	DoubleHold      = anomaly.DoubleHold
	EarlyGrant      = anomaly.EarlyGrant
	ForeignRelease  = anomaly.ForeignRelease
	StaleWrite      = anomaly.StaleWrite
	LostUpdate      = anomaly.LostUpdate
	TokenReuse      = anomaly.TokenReuse
	TokenRegression = anomaly.TokenRegression
	Malformed       = anomaly.Malformed
)

// Anomaly is one proof that a property was broken: its kind, the key, the
// indexes of the ops that prove it and one plain sentence a person can read.
// A liveness anomaly also gives the window of time it covers.
//
// Anomalies of one kind that follow from one cause (docs/history.md §4, "One
// cause, one finding") are one Anomaly: the first of them, with Follows
// counting the others and Followers giving each one's ops. A result without
// these fields (results.json before them) had no grouping.
type Anomaly struct {
	Kind      string  `json:"kind"`
	Key       string  `json:"key,omitempty"`
	Ops       []int   `json:"ops"`
	Message   string  `json:"message"`
	Window    *Window `json:"window,omitempty"`
	Follows   int     `json:"follows,omitempty"`
	Followers [][]int `json:"followers,omitempty"`
	// Host is set when a host record of the history (a step of the host's
	// clock, a stall of the harness: docs/history.md §1, "The host
	// records") overlaps the anomaly's window: it names them, so that a
	// reader knows the host, not only the lock or a fault, may be behind
	// the anomaly. It changes no verdict.
	Host string `json:"host,omitempty"`
}

// followCause appends a to anomalies, or, when an anomaly of the same cause
// is already there (group maps each cause to its anomaly's index), counts
// a behind that one as a follower, and returns anomalies.
func followCause(anomalies []Anomaly, group map[int]int, cause int, a Anomaly) []Anomaly {
	if g, ok := group[cause]; ok {
		anomalies[g].Follows++
		anomalies[g].Followers = append(anomalies[g].Followers, a.Ops)
		return anomalies
	}
	group[cause] = len(anomalies)
	return append(anomalies, a)
}

// FollowersOps lists the ops of the first n anomalies that follow from a's
// cause (Followers), separated by commas, and then more when there are
// others: "[1 9], [1 12], [1 15], …" for n 3 and more "…".
func (a Anomaly) FollowersOps(n int, more string) string {
	var parts []string
	for i, f := range a.Followers {
		if i == n {
			parts = append(parts, more)
			break
		}
		parts = append(parts, fmt.Sprint(f))
	}
	return strings.Join(parts, ", ")
}

// Window is the stretch of harness time a liveness anomaly covers, from
// Start to End.
type Window struct {
	Start time.Duration `json:"start_ns"`
	End   time.Duration `json:"end_ns"`
}

// Result is what one checker concluded about one history.
type Result struct {
	Name      string        `json:"name"`
	Verdict   Verdict       `json:"verdict"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	Anomalies []Anomaly     `json:"anomalies"`
	// Note explains an unknown verdict or anything else a reader must know
	// (for instance that the history was truncated).
	Note string `json:"note,omitempty"`
}

// FirstFinding returns the first anomaly of the first invalid result in
// the checker's words, "kind: message", followed by its host note when it
// has one ("kind: message (host: …)"); empty when no result is invalid
// with an anomaly. It is the sentence a summary quotes for a failing run.
func FirstFinding(results []Result) string {
	for _, r := range results {
		if r.Verdict == Invalid && len(r.Anomalies) > 0 {
			a := r.Anomalies[0]
			if a.Host != "" {
				return a.Kind + ": " + a.Message + " (host: " + a.Host + ")"
			}
			return a.Kind + ": " + a.Message
		}
	}
	return ""
}

// Checker decides one property of a history. Check must not modify h, must
// return Unknown (never Valid) when ctx ends before it could decide, and must
// be safe to call from several goroutines on different histories.
type Checker interface {
	Name() string
	Check(ctx context.Context, h history.History) Result
}
