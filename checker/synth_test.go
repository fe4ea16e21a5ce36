package checker_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

func kindsOf(results []checker.Result) []string {
	var ks []string
	for _, r := range results {
		for _, a := range r.Anomalies {
			if !slices.Contains(ks, a.Kind) {
				ks = append(ks, a.Kind)
			}
		}
	}
	slices.Sort(ks)
	return ks
}

func describe(results []checker.Result) string {
	s := ""
	for _, r := range results {
		s += fmt.Sprintf("%s: %s %s\n", r.Name, r.Verdict, r.Note)
		for i, a := range r.Anomalies {
			if i == 3 {
				break
			}
			s += fmt.Sprintf("  %s %v %s\n", a.Kind, a.Ops, a.Message)
		}
	}
	return s
}

func synthOptions(seed uint64) synth.Options {
	r := rand.New(rand.NewPCG(seed, 99))
	return synth.Options{
		Workers:  2 + r.IntN(6),
		Keys:     2 + r.IntN(3),
		Ops:      1500,
		TTL:      time.Duration(5+r.IntN(50)) * time.Millisecond,
		InfoRate: 0.03,
		Tokens:   seed%2 == 0,
		Session:  seed%3 == 1,
	}
}

// TestSyntheticValid requires no anomaly at all in histories of a correct
// simulated lock.
func TestSyntheticValid(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), synthOptions(seed))
		if err := history.Validate(h); err != nil {
			t.Fatalf("seed %d: generator made a malformed history: %v", seed, err)
		}
		res := checker.Check(context.Background(), h, checker.Options{})
		if v := checker.Overall(res); v != checker.Valid {
			t.Fatalf("seed %d (%+v): verdict %s on a valid history:\n%s", seed, synthOptions(seed), v, describe(res))
		}
	}
}

// TestSyntheticInjected requires every planted violation to be found.
func TestSyntheticInjected(t *testing.T) {
	for _, kind := range synth.Kinds {
		t.Run(kind, func(t *testing.T) {
			injected := 0
			for seed := uint64(0); seed < 30; seed++ {
				opts := synthOptions(seed)
				if kind == checker.TokenReuse || kind == checker.TokenRegression {
					opts.Tokens = true
				}
				h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
				bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, kind)
				if errors.Is(err, synth.ErrNoSpot) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				injected++
				if err := history.Validate(bad); err != nil {
					t.Fatalf("seed %d: injection made the history malformed: %v", seed, err)
				}
				res := checker.Check(context.Background(), bad, checker.Options{})
				if v := checker.Overall(res); v != checker.Invalid || !slices.Contains(kindsOf(res), kind) {
					t.Fatalf("seed %d: injected %s, got %s %v:\n%s", seed, kind, v, kindsOf(res), describe(res))
				}
			}
			if injected < 20 {
				t.Fatalf("only %d of 30 seeds had a place for %s", injected, kind)
			}
		})
	}
}

// TestSynthKindsAreCheckerKinds checks that every kind Inject plants is a
// declared kind of a checker of the verdict.
func TestSynthKindsAreCheckerKinds(t *testing.T) {
	if len(synth.Kinds) == 0 {
		t.Fatal("synth.Kinds is empty")
	}
	for _, k := range synth.Kinds {
		if !slices.Contains(checker.Kinds(), k) || k == checker.Malformed {
			t.Errorf("synth kind %q is no kind of a checker of the verdict (%v)", k, checker.Kinds())
		}
	}
}

// FuzzSynthetic widens TestSyntheticValid and TestSyntheticInjected to any
// seed and shape: no anomaly in a correct lock's history, and every planted
// violation found.
func FuzzSynthetic(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(2), uint8(20), uint8(0))
	f.Add(uint64(2), uint8(8), uint8(1), uint8(5), uint8(4))
	// A stale write whose only newer write was its own process's, which
	// the stall leaves out: the injector must pick another process's.
	f.Add(uint64(5), uint8(3), uint8(2), uint8(20), uint8(3))
	f.Fuzz(func(t *testing.T, seed uint64, workers, keys, ttlMs, kind uint8) {
		opts := synth.Options{
			Workers:  1 + int(workers%10),
			Keys:     1 + int(keys%4),
			Ops:      800,
			TTL:      time.Duration(3+int(ttlMs%60)) * time.Millisecond,
			InfoRate: 0.04,
			Tokens:   seed%2 == 0,
			Session:  seed%3 == 0,
		}
		h := synth.Generate(rand.New(rand.NewPCG(seed, 1)), opts)
		res := checker.Check(context.Background(), h, checker.Options{})
		if v := checker.Overall(res); v != checker.Valid {
			t.Fatalf("%+v: verdict %s on a valid history:\n%s", opts, v, describe(res))
		}
		k := synth.Kinds[int(kind)%len(synth.Kinds)]
		bad, err := synth.Inject(rand.New(rand.NewPCG(seed, 2)), h, k)
		if err != nil {
			return
		}
		res = checker.Check(context.Background(), bad, checker.Options{})
		if v := checker.Overall(res); v != checker.Invalid || !slices.Contains(kindsOf(res), k) {
			t.Fatalf("%+v: injected %s, got %s %v:\n%s", opts, k, v, kindsOf(res), describe(res))
		}
	})
}
