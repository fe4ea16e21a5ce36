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
	held := func(proc int, expiry int64, tok uint64) lockState {
		return lockState{holder: proc, by: &lockOp{proc: proc, token: tok}, expiry: expiry, maxTok: tok}
	}
	free := lockState{holder: -1, maxTok: 3}
	acq := func(proc int, call, ret int64, tok uint64) *lockOp {
		return &lockOp{acquire: true, proc: proc, call: call, ret: ret, ttl: 5 * s, token: tok, fixedE: open}
	}
	rel := func(proc int, ret int64) *lockOp { return &lockOp{proc: proc, call: ret - 1, ret: ret} }
	tests := []struct {
		name     string
		state    lockState
		op       *lockOp
		ok       bool
		why      string
		holder   int
		expiry   int64
		maxToken uint64
	}{
		{"acquire free", free, acq(1, 10*s, 11*s, 4), true, "", 1, 15 * s, 4},
		{"acquire free with a stale token", free, acq(1, 10*s, 11*s, 2), false, "token", -1, 0, 3},
		{"acquire free with the same token", free, acq(1, 10*s, 11*s, 3), false, "token", -1, 0, 3},
		{"acquire free without token", free, acq(1, 10*s, 11*s, 0), true, "", 1, 15 * s, 3},
		{"acquire held before expiry", held(0, 15*s, 3), acq(1, 12*s, 14*s, 4), false, "early", 0, 15 * s, 3},
		{"acquire held exactly at expiry", held(0, 15*s, 3), acq(1, 12*s, 15*s, 4), true, "", 1, 20 * s, 4},
		{"acquire held after expiry, counted from it", held(0, 15*s, 3), acq(1, 16*s, 17*s, 4), true, "", 1, 21 * s, 4},
		{"acquire by the holder itself", held(1, 15*s, 3), acq(1, 12*s, 13*s, 3), true, "", 1, 17 * s, 3},
		{"acquire held by a live session", held(0, open, 3), acq(1, 12*s, 99*s, 4), false, "early", 0, open, 3},
		{"acquire after a release counts from the release", lockState{holder: -1, maxTok: 3, freedAt: 30 * s}, acq(1, 1*s, 31*s, 4), true, "", 1, 35 * s, 4},
		{"release by the holder", held(1, 15*s, 3), rel(1, 13*s), true, "", -1, 0, 3},
		{"release by another", held(0, 15*s, 3), rel(1, 13*s), false, "foreign", 0, 15 * s, 3},
		{"release of a free lock", free, rel(1, 13*s), false, "foreign", -1, 0, 3},
		{"unknown release by another", held(0, 15*s, 3), &lockOp{proc: 1, call: 12 * s, ret: open}, true, "", 0, 15 * s, 3},
		{"unknown release by the holder", held(1, 15*s, 3), &lockOp{proc: 1, call: 12 * s, ret: open}, true, "", -1, 0, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, next, why := step(tc.state, tc.op)
			if ok != tc.ok || why != tc.why || next.holder != tc.holder || next.expiry != tc.expiry || next.maxTok != tc.maxToken {
				t.Fatalf("step = %v %q holder %d expiry %d max %d; want %v %q holder %d expiry %d max %d",
					ok, why, next.holder, next.expiry, next.maxTok, tc.ok, tc.why, tc.holder, tc.expiry, tc.maxToken)
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
	for seed := uint64(0); seed < 12; seed++ {
		opts := synth.Options{Workers: 3 + int(seed%5), Keys: 1 + int(seed%3), Ops: 800, TTL: time.Duration(8+seed%20) * time.Millisecond, InfoRate: 0.05, Tokens: seed%2 == 0}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 5)), opts)
		variants := []history.History{h}
		for _, kind := range synth.Kinds {
			if bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 6)), h, kind); err == nil {
				variants = append(variants, bad)
			}
		}
		for _, v := range variants {
			plain, _ := plainPorcupine(v, 2*time.Second)
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
	if checked < 40 || invalid < 20 {
		t.Fatalf("only %d histories compared (%d invalid)", checked, invalid)
	}
}
