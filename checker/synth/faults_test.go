package synth_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestUnknownRichFraction checks that the histories of synth.UnknownRich
// over 200 seeds are well-formed and have at least 20% of their client
// invokes of unknown outcome, and that the seeds cover the space: few and
// many workers, one and three keys, lease and session locks, waits and
// tokens on and off.
func TestUnknownRichFraction(t *testing.T) {
	seen := map[string]bool{}
	lo := 1.0
	for seed := uint64(1); seed <= 200; seed++ {
		o := synth.UnknownRich(seed)
		h := synth.Generate(synth.UnknownRichRand(seed), o)
		if err := history.Validate(h); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		f := synth.UnknownFraction(h)
		lo = min(lo, f)
		if f < 0.2 {
			t.Errorf("seed %d (%+v): %.3f of the invokes of unknown outcome", seed, o, f)
		}
		if o.Ops > 10000 || len(h) > 10000+4*o.Workers {
			t.Errorf("seed %d: %d ops asked, %d written", seed, o.Ops, len(h))
		}
		seen[map[bool]string{true: "session", false: "lease"}[o.Session]] = true
		seen[map[bool]string{true: "waits", false: "no waits"}[o.Faults.Wait > 0]] = true
		seen[map[bool]string{true: "tokens", false: "no tokens"}[o.Tokens]] = true
		seen[map[bool]string{true: "2 workers", false: ""}[o.Workers == 2]] = true
		seen[map[bool]string{true: "16 workers", false: ""}[o.Workers == 16]] = true
		seen[map[bool]string{true: "1 key", false: ""}[o.Keys == 1]] = true
		seen[map[bool]string{true: "3 keys", false: ""}[o.Keys == 3]] = true
	}
	t.Logf("least unknown fraction %.3f", lo)
	for _, w := range []string{"session", "lease", "waits", "no waits", "tokens", "no tokens", "2 workers", "16 workers", "1 key", "3 keys"} {
		if !seen[w] {
			t.Errorf("no seed with %s", w)
		}
	}
}

// TestFaultsHonest checks that each fault alone, and all together, makes
// well-formed histories with ops of unknown outcome of the kind it makes,
// for lease and session locks, and that the checker finds no anomaly in
// them (an unknown verdict, out of time, is no finding): the simulated
// service stays honest under faults.
func TestFaultsHonest(t *testing.T) {
	base := synth.Options{Workers: 5, Keys: 1, Ops: 800, TTL: 100 * time.Millisecond, Tokens: true, NemesisEvery: -1}
	cases := []struct {
		name   string
		faults synth.Faults
		want   string // an info's error, or a nemesis op's f, the history must have
	}{
		{"kills", synth.Faults{KillRate: 0.2}, "killed"},
		{"partitions", synth.Faults{PartitionEvery: 100 * time.Millisecond, PartitionShare: 0.7}, "partition"},
		{"waits", synth.Faults{Wait: 30 * time.Millisecond}, "timeout"},
		{"lost renewals", synth.Faults{RenewRate: 0.6, LostRate: 0.4}, history.FRenew},
		{"all", synth.UnknownRich(7).Faults, "partition"},
	}
	for _, c := range cases {
		for _, session := range []bool{false, true} {
			o := base
			o.Faults, o.Session = c.faults, session
			h := synth.Generate(rand.New(rand.NewPCG(3, 3)), o)
			if err := history.Validate(h); err != nil {
				t.Fatalf("%s, session %v: %v", c.name, session, err)
			}
			found := false
			for _, op := range h {
				found = found || op.Type == history.Info && (op.Error == c.want || op.F == c.want)
			}
			if !found {
				t.Errorf("%s, session %v: no %q", c.name, session, c.want)
			}
			res := checker.Check(context.Background(), h, checker.Options{Timeout: 10 * time.Second})
			for _, r := range res {
				if r.Verdict == checker.Invalid {
					t.Errorf("%s, session %v: %s finds %s: %s", c.name, session, r.Name, r.Anomalies[0].Kind, r.Anomalies[0].Message)
				}
			}
		}
	}
}
