package checker_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/reference"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// generatedLivenessOptions are the bounds under which the small generated
// histories (a few hundred milliseconds to seconds long) are judged: the
// defaults, and bounds short enough for their stretches (and for what a
// cut holds back: TCP's timeouts scaled down with them).
var generatedLivenessOptions = []checker.LivenessOptions{
	{},
	{Window: 50 * time.Millisecond, UnavailableWindow: 50 * time.Millisecond, Attempts: 1},
	{Window: 100 * time.Millisecond, UnavailableWindow: 80 * time.Millisecond, Attempts: 2},
	{Window: 200 * time.Millisecond, UnavailableWindow: 150 * time.Millisecond, Attempts: 3, RetransmitFirst: 5 * time.Millisecond, RetransmitMax: 60 * time.Millisecond},
	{Window: 30 * time.Millisecond, UnavailableWindow: 100 * time.Millisecond, Attempts: 2, RetransmitFirst: time.Millisecond, RetransmitMax: 20 * time.Millisecond},
}

// generatedHistory returns the small history of shape and seed: a lock
// workload of reference.Generate with waits, faults, outages, kept clients
// and misbehaving services by turns; a queue workload of
// reference.GenerateQueue; or a synthetic history of checker/synth.
func generatedHistory(seed uint64, shape uint8) (string, history.History) {
	r := rand.New(rand.NewPCG(seed, uint64(shape)))
	switch shape % 4 {
	case 0, 1:
		opts := reference.GenOptions{Ties: seed%10 == 9, Kept: seed%4 == 3, Waits: seed%3 != 0, Faults: seed%5 >= 2, Outages: seed%2 == 1, Honest: shape%8 == 1}
		return fmt.Sprintf("reference %+v", opts), reference.Generate(r, opts)
	case 2:
		opts := reference.QueueGenOptions{Honest: seed%4 == 1, Ties: seed%10 == 9}
		return fmt.Sprintf("queue %+v", opts), reference.GenerateQueue(r, opts)
	}
	opts := synth.Options{Workers: 1 + r.IntN(6), Keys: 1 + r.IntN(3), Ops: 200 + r.IntN(400), TTL: time.Duration(2+r.IntN(60)) * time.Millisecond,
		InfoRate: 0.05, Tokens: seed%2 == 0, Session: seed%3 == 1, NemesisEvery: []int{-1, 50, 200}[seed%3]}
	return fmt.Sprintf("synth %+v", opts), synth.Generate(r, opts)
}

// liveStreamAgrees fails t when the streaming liveness report of the
// generated history of seed and shape differs from the batch one.
func liveStreamAgrees(t *testing.T, seed uint64, shape uint8) {
	t.Helper()
	name, h := generatedHistory(seed, shape)
	if err := history.Validate(h); err != nil {
		t.Fatalf("seed %d, %s: %v", seed, name, err)
	}
	for _, opts := range generatedLivenessOptions {
		if d := checker.CompareLiveStream(h, opts); d != "" {
			var b []byte
			for _, op := range h {
				b = append(history.AppendJSON(b, op), '\n')
			}
			t.Fatalf("seed %d, shape %d, %s: %s\n%s", seed, shape, name, d, b)
		}
	}
}

// TestLiveStreamGenerated holds the streaming liveness report to the batch
// one on small generated histories of every shape: leases of every kind
// and length, renewals for other lengths, kept clients, faults, majority
// periods, outages, waiting acquires and queues: 1,500 histories of each
// shape, 150 with -short.
func TestLiveStreamGenerated(t *testing.T) {
	seeds := uint64(1500)
	if testing.Short() {
		seeds = 150
	}
	for shape := range uint8(4) {
		t.Run(fmt.Sprintf("shape-%d", shape), func(t *testing.T) {
			for seed := range seeds {
				liveStreamAgrees(t, seed, shape)
			}
		})
	}
}

// FuzzLiveStream widens TestLiveStreamGenerated to any seed and shape.
func FuzzLiveStream(f *testing.F) {
	for shape := range uint8(8) {
		f.Add(uint64(shape)*7+1, shape)
	}
	f.Fuzz(func(t *testing.T, seed uint64, shape uint8) {
		liveStreamAgrees(t, seed, shape)
	})
}
