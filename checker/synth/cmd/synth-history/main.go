// Command synth-history writes a synthetic history of a correct lock (see
// package synth) as JSON Lines, for measuring `jepsen-lite check` on large
// inputs:
//
//	go run ./checker/synth/cmd/synth-history -out /tmp/history.jsonl
//
// The defaults give the 1,000,000-op benchmark history: 16 workers, 4 keys,
// 1% unknown outcomes, fencing tokens, seed 1.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
)

func main() {
	out := flag.String("out", "history.jsonl", "file to write")
	ops := flag.Int("ops", 1_000_000, "number of ops")
	workers := flag.Int("workers", 16, "simulated workers")
	keys := flag.Int("keys", 4, "lock keys")
	info := flag.Float64("info", 0.01, "probability of an unknown (info) outcome")
	ttl := flag.Duration("ttl", time.Second, "lease length")
	tokens := flag.Bool("tokens", true, "fencing tokens and a fenced resource")
	seed := flag.Uint64("seed", 1, "random seed")
	inject := flag.String("inject", "", "plant one violation of this anomaly kind")
	flag.Parse()
	rng := rand.New(rand.NewPCG(*seed, *seed))
	opts := synth.Options{Workers: *workers, Keys: *keys, Ops: *ops, TTL: *ttl, InfoRate: *info, Tokens: *tokens}
	if *inject == "" {
		n, err := synth.WriteFile(*out, rng, opts)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("wrote %d ops to %s\n", n, *out)
		return
	}
	h, err := synth.Inject(rng, synth.Generate(rng, opts), *inject)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := synth.Write(*out, h); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("wrote %d ops with one %s to %s\n", len(h), *inject, *out)
}
