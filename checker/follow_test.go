package checker

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// ended is what a test asks of one HoldEnded event.
type ended struct {
	grant  int
	reason EndReason
	endOp  int
	end    time.Duration
}

// endedOf are the HoldEnded events of evs.
func endedOf(evs []HoldEvent) []ended {
	var out []ended
	for _, e := range evs {
		if e.Kind == HoldEnded {
			out = append(out, ended{e.Grant, e.Reason, e.EndOp(), e.Time})
		}
	}
	return out
}

// TestFollowerEnds holds the Follower to docs/history.md §3's end of a
// belief, one saved history for each reason a belief ends.
func TestFollowerEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []ended
	}{
		{"session-double-grant", []ended{{0, EndRelease, 4, 5 * time.Second}, {1, EndOpen, -1, Forever}}},
		{"foreign-release", []ended{{0, EndRelease, 4, 3 * time.Second}}},
		{"session-lease-lost-then-other", []ended{{0, EndLeaseLost, 2, 3 * time.Second}, {1, EndOpen, -1, Forever}}},
		{"session-crash-then-other", []ended{{0, EndCrash, 3, 2 * time.Second}, {1, EndOpen, -1, Forever}}},
		{"grant-returns-as-own-release-is-invoked", []ended{{0, EndReacquire, 3, 30 * time.Millisecond}, {1, EndRelease, 4, 30 * time.Millisecond}}},
		{"double-grant", []ended{{1, EndRelease, 4, 3100 * time.Millisecond}, {0, EndUntil, -1, 5850 * time.Millisecond}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, err := history.ReadFile(filepath.Join("testdata", tc.name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if got := endedOf(followHistory(h)); !slices.Equal(got, tc.want) {
				t.Fatalf("ended %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFollowerClosesKeptClient holds the Follower to docs/history.md §1's
// client close: a crash that kept its client closes it only at the next
// crash of its worker that does not.
func TestFollowerClosesKeptClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		want []HoldEvent // the HoldClosed events: Process, Index, Time
	}{
		{"kept-client-closed-later-frees-session", []HoldEvent{{Process: 0, Index: 5, Time: 150 * time.Millisecond}, {Process: 2, Index: 5, Time: 150 * time.Millisecond}}},
		{"kept-client-session-outlives-crash", nil},
		{"session-crash-then-other", []HoldEvent{{Process: 0, Index: 3, Time: 2 * time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _, err := history.ReadFile(filepath.Join("testdata", tc.name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			var got []HoldEvent
			for _, e := range followHistory(h) {
				if e.Kind == HoldClosed {
					got = append(got, HoldEvent{Process: e.Process, Index: e.Index, Time: e.Time})
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("closed %+v, want %+v", got, tc.want)
			}
		})
	}
}

// lockOps builds a history of one key's lock ops from (process, type, f,
// time in ms, until in ms) rows.
func lockOps(rows ...[5]any) history.History {
	h := make(history.History, len(rows))
	for i, r := range rows {
		p := r[0].(int)
		h[i] = history.Op{Index: i, Process: p, Client: p, Type: history.Type(r[1].(string)), F: r[2].(string), Key: "k",
			Time: time.Duration(r[3].(int)) * time.Millisecond, Until: time.Duration(r[4].(int)) * time.Millisecond, TTL: 100 * time.Millisecond}
		if h[i].Type == history.Invoke {
			h[i].Until = 0
		}
	}
	return h
}

// TestFollowerUntil holds the Follower to the until of docs/history.md §3:
// a renewal that returns by the until in force moves it; one that returns
// after it does not revive the belief.
func TestFollowerUntil(t *testing.T) {
	grant := [][5]any{{0, "invoke", "acquire", 0, 0}, {0, "ok", "acquire", 10, 100}}
	for _, tc := range []struct {
		name  string
		rows  [][5]any
		moves []time.Duration
		want  []ended
	}{
		{"renewal in time moves the until", [][5]any{{0, "invoke", "renew", 50, 0}, {0, "ok", "renew", 60, 150}},
			[]time.Duration{150 * time.Millisecond}, []ended{{0, EndOpen, -1, 150 * time.Millisecond}}},
		{"renewal after the until does not", [][5]any{{0, "invoke", "renew", 50, 0}, {0, "ok", "renew", 120, 220}, {0, "invoke", "release", 300, 0}},
			nil, []ended{{0, EndUntil, -1, 100 * time.Millisecond}}},
		{"renewal of an ended belief moves nothing", [][5]any{{0, "invoke", "release", 20, 0}, {0, "ok", "release", 30, 0}, {0, "invoke", "renew", 50, 0}, {0, "ok", "renew", 60, 150}},
			nil, []ended{{0, EndRelease, 2, 20 * time.Millisecond}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := lockOps(append(slices.Clone(grant), tc.rows...)...)
			if err := history.Validate(h); err != nil {
				t.Fatal(err)
			}
			evs := followHistory(h)
			var moves []time.Duration
			for _, e := range evs {
				if e.Kind == HoldUntil {
					moves = append(moves, e.Until)
				}
			}
			if !slices.Equal(moves, tc.moves) {
				t.Errorf("until moved to %v, want %v", moves, tc.moves)
			}
			if got := endedOf(evs); !slices.Equal(got, tc.want) {
				t.Errorf("ended %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFollowerLater holds the Follower's HoldLater events to lease order's
// ops (docs/history.md §3): a re-acquire of the same process and key joins
// the grants it could end earlier, and a release called after their holds
// may have ended joins none.
func TestFollowerLater(t *testing.T) {
	h, _, err := history.ReadFile("testdata/outstanding-reacquire-shortens-lease.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	type later struct {
		grant, invoke int
		release       bool
		lease         time.Duration
	}
	var got []later
	for _, e := range followHistory(h) {
		if e.Kind == HoldLater {
			got = append(got, later{e.Grant, e.Invoke, e.Release, e.Lease})
		}
	}
	// the release at 300ms is called after both grants' holds may have
	// ended (200ms), so it ends neither earlier
	want := []later{{0, 2, false, 100 * time.Millisecond}}
	if !slices.Equal(got, want) {
		t.Fatalf("later %+v, want %+v", got, want)
	}
}

// TestFollowerForgetsCrashed requires the Follower to keep nothing of a
// process once it crashed, so that its memory is bounded by the live
// processes.
func TestFollowerForgetsCrashed(t *testing.T) {
	h, _, err := history.ReadFile("testdata/session-crash-then-other.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	f := NewFollower()
	for i := range h {
		f.Add(&h[i], nil)
	}
	if f.procs.get(0) != nil || f.Latest(0, "k") != -1 {
		t.Fatalf("the crashed process 0 is still kept")
	}
	if f.Latest(1, "k") != 1 {
		t.Fatalf("process 1's latest grant is %d, want 1", f.Latest(1, "k"))
	}
}

// TestFollowerClone requires a clone to go on as the Follower it was
// cloned from, and the two to share nothing.
func TestFollowerClone(t *testing.T) {
	h, _, err := history.ReadFile("testdata/outstanding-reacquire-shortens-lease.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := followHistory(h)
	for cut := range h {
		f := NewFollower()
		var got []HoldEvent
		for i := range h[:cut] {
			got = f.Add(&h[i], got)
		}
		c := f.Clone()
		for i := range h[cut:] {
			f.Add(&h[cut+i], nil) // the original goes on on its own
			got = c.Add(&h[cut+i], got)
		}
		if got = c.End(got); !slices.Equal(got, want) {
			t.Fatalf("cloned after %d ops: events %+v, want %+v", cut, got, want)
		}
	}
}

// TestFollowerSettles holds the Follower to when a grant's Later is
// settled: a release joins it and settles it (no HoldSettled), an op
// called after its hold may have ended settles it without joining it, and
// a crash settles it.
func TestFollowerSettles(t *testing.T) {
	grant := [][5]any{{0, "invoke", "acquire", 0, 0}, {0, "ok", "acquire", 10, 0}} // ttl 100 ms from its call
	for _, tc := range []struct {
		name string
		rows [][5]any
		want []HoldKind // the HoldLater and HoldSettled events of grant 0
	}{
		{"release", [][5]any{{0, "invoke", "release", 50, 0}, {0, "ok", "release", 60, 0}}, []HoldKind{HoldLater}},
		{"renewal in time", [][5]any{{0, "invoke", "renew", 50, 0}, {0, "ok", "renew", 60, 0}}, []HoldKind{HoldLater}},
		{"renewal after the lease", [][5]any{{0, "invoke", "renew", 150, 0}, {0, "ok", "renew", 160, 0}}, []HoldKind{HoldSettled}},
		{"crash", [][5]any{{0, "invoke", "write", 50, 0}, {0, "info", "write", 60, 0}}, []HoldKind{HoldSettled}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := lockOps(append(slices.Clone(grant), tc.rows...)...)
			if err := history.Validate(h); err != nil {
				t.Fatal(err)
			}
			var got []HoldKind
			for _, e := range followHistory(h) {
				if (e.Kind == HoldLater || e.Kind == HoldSettled) && e.Grant == 0 {
					got = append(got, e.Kind)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
		})
	}
}
