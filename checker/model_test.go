package checker

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

func TestLeaseModelStep(t *testing.T) {
	const s = int64(time.Second)
	held := func(proc int, expiry int64) lockState {
		return lockState{holder: proc, by: &lockOp{proc: proc, lease: 5 * s, crash: open, freed: open, freedIdx: open}, expiry: expiry}
	}
	session := func(proc int, crash int64) lockState {
		return lockState{holder: proc, by: &lockOp{proc: proc, lease: -1, session: true, crash: crash, crashIdx: crash, freed: crash, freedIdx: crash}, expiry: open}
	}
	free := lockState{holder: -1}
	// In these cases an op's history indexes are its times: the orders agree.
	acq := func(proc int, call, ret int64) *lockOp {
		return &lockOp{kind: kindGrant, proc: proc, call: call, ret: ret, retIdx: ret, lease: 5 * s, crash: open, crashIdx: open, freed: open, freedIdx: open}
	}
	rel := func(proc int, ret int64) *lockOp {
		return &lockOp{kind: kindRelease, proc: proc, call: ret - 1, ret: ret}
	}
	renew := func(proc int, call int64, lease int64) *lockOp {
		return &lockOp{kind: kindRenew, proc: proc, call: call, ret: call + 1, retIdx: call + 1, lease: lease}
	}
	tests := []struct {
		name   string
		state  lockState
		op     *lockOp
		ok     bool
		why    string
		holder int
		expiry int64
	}{
		{"acquire free", free, acq(1, 10*s, 11*s), true, "", 1, 15 * s},
		{"acquire held before expiry", held(0, 15*s), acq(1, 12*s, 14*s), false, "early", 0, 15 * s},
		{"acquire held exactly at expiry", held(0, 15*s), acq(1, 12*s, 15*s), true, "", 1, 20 * s},
		{"acquire held after expiry, counted from it", held(0, 15*s), acq(1, 16*s, 17*s), true, "", 1, 21 * s},
		{"acquire by the holder itself", held(1, 15*s), acq(1, 12*s, 13*s), true, "", 1, 17 * s},
		{"acquire held by a live session", session(0, open), acq(1, 12*s, 99*s), false, "early", 0, open},
		{"acquire after the session holder crashed", session(0, 20*s), acq(1, 12*s, 21*s), true, "", 1, 25 * s},
		{"acquire held by a session that crashed too late", session(0, 21*s), acq(1, 12*s, 21*s), false, "early", 0, open},
		{"acquire held by a session whose crash kept its client", lockState{holder: 0, by: &lockOp{proc: 0, lease: -1, session: true, crash: 20 * s, crashIdx: 20 * s, freed: open, freedIdx: open}, expiry: open}, acq(1, 12*s, 21*s), false, "early", 0, open},
		{"acquire after the kept client was closed by a later crash", lockState{holder: 0, by: &lockOp{proc: 0, lease: -1, session: true, crash: 10 * s, crashIdx: 10 * s, freed: 20 * s, freedIdx: 20 * s}, expiry: open}, acq(1, 12*s, 21*s), true, "", 1, 25 * s},
		{"acquire after a release counts from the release's instant", lockState{holder: -1, now: 30 * s}, acq(1, 1*s, 31*s), true, "", 1, 35 * s},
		{"unknown acquire against a live session changes nothing", session(0, open), &lockOp{kind: kindGrant, proc: 1, call: 12 * s, ret: open, retIdx: open, lease: 5 * s, crash: open, crashIdx: open}, true, "", 0, open},
		{"unknown acquire may take effect once the lease may have expired", held(0, 15*s), &lockOp{kind: kindGrant, proc: 1, call: 12 * s, ret: open, retIdx: open, lease: 5 * s, crash: open, crashIdx: open}, true, "", 1, 20 * s},
		{"a takeover waits for the expiry, and a later op cannot return before it", lockState{holder: 0, by: &lockOp{proc: 0, lease: 5 * s, crash: open, crashIdx: open}, expiry: 15 * s, now: 16 * s}, acq(1, 12*s, 15*s), false, "early", 0, 15 * s},
		{"renew by the holder moves the expiry", held(1, 15*s), renew(1, 14*s, 5*s), true, "", 1, 19 * s},
		{"renew to a lock that never expires", held(1, 15*s), renew(1, 14*s, -1), true, "", 1, open},
		{"renew by another changes nothing", held(0, 15*s), renew(1, 14*s, 5*s), true, "", 0, 15 * s},
		{"release by the holder", held(1, 15*s), rel(1, 13*s), true, "", -1, 0},
		{"release by another", held(0, 15*s), rel(1, 13*s), false, "foreign", 0, 15 * s},
		{"release of a free lock", free, rel(1, 13*s), false, "foreign", -1, 0},
		{"unknown release by another", held(0, 15*s), &lockOp{kind: kindRelease, proc: 1, call: 12 * s, ret: open, retIdx: open}, true, "", 0, 15 * s},
		{"unknown release by the holder", held(1, 15*s), &lockOp{kind: kindRelease, proc: 1, call: 12 * s, ret: open, retIdx: open}, true, "", -1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, next, why := step(tc.state, tc.op)
			if ok != tc.ok || why != tc.why || next.holder != tc.holder || next.expiry != tc.expiry {
				t.Fatalf("step = %v %q holder %d expiry %d; want %v %q holder %d expiry %d",
					ok, why, next.holder, next.expiry, tc.ok, tc.why, tc.holder, tc.expiry)
			}
		})
	}
}

// TestCutsAgreeWithPlainPorcupine checks the quiescent cuts and the dropped
// ops against porcupine run over each key's whole lock history with the same
// model: the verdicts must agree, on valid histories and on every injected
// violation.
func TestCutsAgreeWithPlainPorcupine(t *testing.T) {
	checked, invalid := 0, 0
	for seed := uint64(0); seed < 16; seed++ {
		// session locks (seed%4 == 1, 3) are cut where a known holder holds
		// them; the others mostly where they are free
		opts := synth.Options{Workers: 3 + int(seed%5), Keys: 1 + int(seed%3), Ops: 600, TTL: time.Duration(8+seed%20) * time.Millisecond,
			InfoRate: []float64{0.05, 0.05, 0.15, 0.1}[seed%4], Tokens: seed%2 == 0, Session: seed%4 == 1 || seed%4 == 3}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 5)), opts)
		variants := []history.History{h}
		for _, kind := range synth.Kinds {
			if bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 6)), h, kind); err == nil {
				variants = append(variants, bad)
			}
		}
		for _, v := range variants {
			plain, _ := plainPorcupine(v, time.Second)
			if plain == porcupine.Unknown {
				continue
			}
			r := (&LinearizabilityChecker{Drift: DefaultDrift}).Check(context.Background(), v)
			want := Valid
			if plain == porcupine.Illegal {
				want = Invalid
				invalid++
			}
			if r.Verdict != want {
				t.Fatalf("seed %d: cut check %s, plain porcupine %s: %+v", seed, r.Verdict, plain, r.Anomalies)
			}
			checked++
		}
	}
	if checked < 60 || invalid < 30 {
		t.Fatalf("only %d histories compared (%d invalid)", checked, invalid)
	}
}
