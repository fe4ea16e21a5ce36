//go:build shrink

package renewbugs

import (
	"context"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/lockapi"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// maxShrunkSteps is the most fault steps a planted bug's shrunk scenario
// may keep.
const maxShrunkSteps = 2

// TestShrinkRenewBugs does from Go, as a user's module does through
// lockapi, what a hunt's finding asks for next: for each planted bug it
// hunts the bug's lock served by this test binary (lockapi.Hunt, the
// short hunt's kind and seed), shrinks the first failing run
// (lockapi.Shrink, the command's default budget) to a scenario of at most
// maxShrunkSteps fault steps, runs that scenario, which must fail again,
// and replays the failing run (lockapi.Replay), which must fail again too.
// make test-shrink runs it (docs/hunt.md, "Renewal bugs").
func TestShrinkRenewBugs(t *testing.T) {
	ctx := context.Background()
	for _, b := range bugs {
		t.Run(b.name, func(t *testing.T) {
			lock := lockOf(t, b.name)
			c, err := lockapi.Hunt(ctx, lock, lockapi.WithFaults(b.fault), lockapi.WithRuns(b.runs), lockapi.WithSeed(b.seed),
				lockapi.WithTimeLimit(runLength), lockapi.WithStore(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			failing := firstFailing(c)
			if failing == "" {
				t.Fatalf("%s: the hunt of %s found nothing in %d runs: %+v", b.name, b.fault, c.Runs, c.Kinds)
			}
			path, err := lockapi.Shrink(ctx, failing, lock, lockapi.WithOutput(logWriter{t}))
			if err != nil {
				t.Fatal(err)
			}
			sc, err := scenarios.Load(path, runner.Names())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s keeps %d fault steps, %d workers, %v", b.name, path, len(sc.Nemesis.Steps), sc.Workers, sc.Duration)
			if n := len(sc.Nemesis.Steps); n > maxShrunkSteps {
				t.Errorf("%s: the shrunk scenario keeps %d fault steps, want at most %d", b.name, n, maxShrunkSteps)
			}
			mustFail(t, "the shrunk scenario", func() (*lockapi.Result, error) {
				return lockapi.Run(ctx, path, lock, lockapi.WithStore(t.TempDir()))
			})
			mustFail(t, "the replay of the failing run", func() (*lockapi.Result, error) {
				return lockapi.Replay(ctx, failing, lock, lockapi.WithStore(t.TempDir()))
			})
		})
	}
}

// firstFailing is the directory of the campaign's first failing run, or
// "" when none failed.
func firstFailing(c *lockapi.Campaign) string {
	for _, k := range c.Kinds {
		if len(k.Failing) > 0 {
			return k.Failing[0]
		}
	}
	return ""
}

// mustFail runs what and requires its verdict to be invalid.
func mustFail(t *testing.T, what string, run func() (*lockapi.Result, error)) {
	t.Helper()
	res, err := run()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: %s %v (%s)", what, res.Verdict, res.Kinds(), res.Dir)
	if res.Verdict != lockapi.Invalid {
		t.Errorf("%s: verdict %s, want invalid (notes %v)", what, res.Verdict, res.Notes)
	}
}
