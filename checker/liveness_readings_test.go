package checker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestLiveStreamLateReadings checks the cases in which the liveness
// stream cannot know, when it reads a stretch, what excuses it: a grant or
// a renewal at the very end changes the key's longest lease or says that a
// grant never expires, and a later crash closes a kept client. The stream
// must give the batch report's answer, which the case names too.
func TestLiveStreamLateReadings(t *testing.T) {
	ms := time.Millisecond
	// An acquire of unknown outcome with a ttl of 1 s at 0.1 s, refusals
	// until a grant at 1.4 s: its ttl excuses them, unless a grant of the
	// key never expires.
	afterUnknown := func() *livenessHistory {
		return new(livenessHistory).header().grant(0, 0, time.Second, false).op(10, 0, history.FRelease, history.OK).
			op(100, 5, history.FAcquire, history.Info).fails(200, 1300).grant(1400, 6, time.Second, false).op(1410, 6, history.FRelease, history.OK)
	}
	// A grant of a 100 ms (or 3 s) lease released at once, an acquire of
	// unknown outcome with a ttl of 1 s at 0.2 s, refusals from 1.3 s to
	// the end at 4 s: the longest lease decides how long its excuse lasts.
	refused := func(lease time.Duration) *livenessHistory {
		return new(livenessHistory).header().grant(0, 0, lease, false).op(10, 0, history.FRelease, history.OK).
			op(200, 5, history.FAcquire, history.Info).fails(1300, 4000)
	}
	renew := func(b *livenessHistory, lease time.Duration) *livenessHistory {
		b.add(4000, history.Op{Process: 0, Client: 0, Type: history.Invoke, F: history.FRenew, Key: "k"})
		return b.add(4005, history.Op{Process: 0, Client: 0, Type: history.OK, F: history.FRenew, Key: "k", Lease: lease})
	}
	// A session lock's acquire of unknown outcome at 0.1 s whose crash kept
	// its client, and refusals from 0.2 s to 3.5 s.
	kept := func() *livenessHistory {
		b := new(livenessHistory).header()
		b.add(100, history.Op{Process: 5, Client: 1, Type: history.Invoke, F: history.FAcquire, Key: "k"})
		return b.add(150, history.Op{Process: 5, Client: 1, Type: history.Info, F: history.FAcquire, Key: "k", Kept: true})
	}
	tests := []struct {
		name  string
		h     *livenessHistory
		kinds []string
		note  string
	}{
		{"grants that all expire: the ttl of the acquire of unknown outcome excuses the refusals", afterUnknown(), nil, ""},
		{"a last grant that never expires, a session lock: the acquire's excuse ends at its completion, so the refusals leave it unavailable",
			afterUnknown().grant(3000, 7, history.NoLease, true), []string{Unavailable}, "held at the end"},
		{"a last grant that never expires, no session lock: the acquire may hold it for ever",
			afterUnknown().grant(3000, 7, history.NoLease, false), nil, "acquire of unknown outcome at 0.100s may have taken it for ever"},
		{"a short longest lease: stuck from the acquire's ttl on", refused(100 * ms), []string{Stuck, Unavailable}, ""},
		{"a renewal at the end for 3 s: the acquire's excuse lasts until 3.2 s, too little of the run is left",
			renew(refused(100*ms), 3*time.Second), nil, ""},
		{"a 3 s lease: too little of the run is left", refused(3 * time.Second), nil, ""},
		{"a renewal at the end for 100 ms of the only 3 s lease: stuck from the acquire's ttl on",
			renew(refused(3*time.Second), 100*ms), []string{Stuck, Unavailable}, ""},
		{"a kept client that is never closed: the acquire may hold the lock for ever",
			kept().fails(200, 3500), nil, "may have taken it for ever"},
		{"a kept client closed by its worker's next crash at 2 s: the refusals after it are unexcused",
			kept().fails(200, 1900).add(1950, history.Op{Process: 9, Client: 1, Type: history.Invoke, F: history.FRead, Key: "k"}).
				add(2000, history.Op{Process: 9, Client: 1, Type: history.Info, F: history.FRead, Key: "k"}).fails(2100, 3500),
			[]string{Stuck, Unavailable}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := history.Validate(tt.h.h); err != nil {
				t.Fatal(err)
			}
			if d := CompareLiveStream(tt.h.h, LivenessOptions{}); d != "" {
				t.Fatal(d)
			}
			res := Liveness(tt.h.h, LivenessOptions{})
			var kinds []string
			for _, a := range res.Anomalies {
				if !slices.Contains(kinds, a.Kind) {
					kinds = append(kinds, a.Kind)
				}
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, tt.kinds) || !strings.Contains(res.Note, tt.note) {
				t.Fatalf("kinds %v, note %q; want %v and a note saying %q\n%s", kinds, res.Note, tt.kinds, tt.note, livenessDiff(res, LivenessResult{}))
			}
		})
	}
}
