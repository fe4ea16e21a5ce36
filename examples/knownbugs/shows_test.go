package knownbugs_test

// The reading of a history that the corpus test and the fixture test share:
// which anomalies of a run show a bug's mechanism. Pure logic, without the
// build tag, so that the fixtures of testdata/ are checked by every test
// run.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// anomalies returns the anomalies of the given kinds.
func anomalies(res []checker.Result, kinds ...string) []checker.Anomaly {
	var out []checker.Anomaly
	for _, r := range res {
		for _, a := range r.Anomalies {
			if slices.Contains(kinds, a.Kind) {
				out = append(out, a)
			}
		}
	}
	return out
}

// opAt returns the op with index i.
func opAt(h history.History, i int) (history.Op, bool) {
	if i < 0 || i >= len(h) || h[i].Index != i {
		return history.Op{}, false
	}
	return h[i], true
}

// invokeOf returns the invoke that the completion c completes.
func invokeOf(h history.History, c history.Op) (history.Op, bool) {
	for j := c.Index - 1; j >= 0; j-- {
		if o := h[j]; o.Process == c.Process && o.Type == history.Invoke {
			return o, o.F == c.F
		}
	}
	return history.Op{}, false
}

// cut is a partition, reset or latency as the nemesis recorded it, with
// its heal, and for a latency its delay plus its jitter (the most a reply
// is held back) and its delay less its jitter (the least).
type cut struct {
	from, to time.Duration
	workers  []int
	nodes    []string
	delay    time.Duration
	least    time.Duration
}

// cuts returns the faults of kind fault and when each was healed (the end
// of the history when never).
func cuts(h history.History, fault string) []cut {
	type desc struct {
		Workers []int    `json:"workers"`
		Nodes   []string `json:"nodes"`
		Delay   string   `json:"delay"`
		Jitter  string   `json:"jitter"`
	}
	var out []cut
	open := map[string]int{}
	for _, o := range h {
		if !o.IsNemesis() || o.Type != history.Info {
			continue
		}
		var d desc
		_ = json.Unmarshal(o.Value, &d)
		id := fmt.Sprint(d.Workers, d.Nodes)
		switch o.F {
		case fault:
			open[id] = len(out)
			delay, _ := time.ParseDuration(d.Delay)
			jitter, _ := time.ParseDuration(d.Jitter)
			out = append(out, cut{from: o.Time, to: -1, workers: d.Workers, nodes: d.Nodes, delay: delay + jitter, least: max(0, delay-jitter)})
		case "heal":
			if i, ok := open[id]; ok {
				out[i].to = o.Time
				delete(open, id)
			}
		}
	}
	for i := range out {
		if out[i].to < 0 {
			out[i].to = h[len(h)-1].Time
		}
	}
	return out
}

// grantedAfterLeaseCut is etcd issue 11456 as the history shows it: a
// double-hold one of whose grants is a waiting acquire during which a
// partition longer than its lease stopped its keep-alives, granted after
// the heal. The partition cut its worker off from every node for longer
// than the lease, or it cut nodes off for more than two thirds of the
// lease (the keep-alives go every third) and the holder's release then
// found its lease gone ("requested lease not found": the lease had expired
// while it waited).
func grantedAfterLeaseCut(h history.History, res []checker.Result) []string {
	partitions := cuts(h, "partition")
	var out []string
	for _, a := range anomalies(res, checker.DoubleHold) {
		for _, i := range a.Ops {
			g, ok := opAt(h, i)
			if !ok || g.F != "acquire" || g.Type != history.OK || g.Lease <= 0 {
				continue
			}
			inv, ok := invokeOf(h, g)
			if !ok {
				continue
			}
			lost := leaseGoneAtRelease(h, g)
			for _, c := range partitions {
				during := c.from > inv.Time && c.to < g.Time
				whole := slices.Contains(c.workers, g.Client) && c.to-c.from > g.Lease
				// The keep-alives go every third of the lease: a cut of
				// two thirds of it can let the lease lapse.
				node := lost && c.to-c.from > 2*g.Lease/3
				if during && (whole || node) {
					out = append(out, fmt.Sprintf("worker %d waited from %v, a partition %v-%v stopped its keep-alives (lease %v), and it was granted %s at %v (op %d): %s", g.Client, inv.Time, c.from, c.to, g.Lease, g.Key, g.Time, g.Index, a.Message))
				}
			}
		}
	}
	return out
}

// leaseGoneAtRelease reports whether the release that followed grant g,
// by its process, failed because etcd no longer knew the grant's lease.
func leaseGoneAtRelease(h history.History, g history.Op) bool {
	rel, ok := releaseOf(h, g)
	return ok && rel.Type != history.OK && strings.Contains(rel.Error, "lease not found")
}

// releaseOf returns the completion of the release that followed grant g,
// by its process, before its next acquire.
func releaseOf(h history.History, g history.Op) (history.Op, bool) {
	for _, o := range h[g.Index+1:] {
		if o.Process != g.Process || o.Type == history.Invoke {
			continue
		}
		switch o.F {
		case "release":
			return o, true
		case "acquire":
			return history.Op{}, false
		}
	}
	return history.Op{}, false
}

// heldThenGranted returns the first two successful acquires among the ops
// anomaly a names, the earlier one first: the grant that was held and the
// one made over it.
func heldThenGranted(h history.History, a checker.Anomaly) (held, next history.Op, ok bool) {
	var grants []history.Op
	for _, i := range a.Ops {
		if g, ok := opAt(h, i); ok && g.F == "acquire" && g.Type == history.OK {
			grants = append(grants, g)
		}
	}
	if len(grants) < 2 {
		return history.Op{}, history.Op{}, false
	}
	held, next = grants[0], grants[1]
	if next.Time < held.Time {
		held, next = next, held
	}
	return held, next, true
}
