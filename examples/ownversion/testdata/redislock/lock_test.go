package redislock

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/lockapi"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	if code, served := lockapi.Main(Locks...); served {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestProtocol holds the lock's client to the lock-client protocol against
// a real Redis.
func TestProtocol(t *testing.T) {
	out, err := lockapi.ProtocolTest(context.Background(), "redis", Locks[0])
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestLocks runs the catalog's Redis baseline against each lock, on the
// go-redis version this module pins, replays the correct lock's run and
// shrinks the broken lock's.
func TestLocks(t *testing.T) {
	if v := redis.Version(); v != "9.17.3" {
		t.Fatalf("go-redis %s, want the pinned 9.17.3", v)
	}
	tests := []struct {
		name    string
		lock    lockapi.Lock
		verdict string
		kind    string // an anomaly kind the run must find
	}{
		{"SET NX PX holds", Locks[0], lockapi.Valid, ""},
		{"check-then-set is caught", Locks[1], lockapi.Invalid, "double-hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := lockapi.Run(context.Background(), "redis-single-baseline", tt.lock, lockapi.WithStore(t.TempDir()), lockapi.WithTimeLimit(2*time.Second), lockapi.WithSeed(1))
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, res, tt.lock, tt.verdict, tt.kind)
			if tt.verdict != lockapi.Valid {
				checkShrink(t, res.Dir, tt.lock)
				return
			}
			again, err := lockapi.Replay(context.Background(), res.Dir, tt.lock, lockapi.WithStore(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, again, tt.lock, tt.verdict, tt.kind)
			if again.Seed != res.Seed || again.Dir == res.Dir {
				t.Errorf("the replay ran seed %d in %s; the run was seed %d in %s", again.Seed, again.Dir, res.Seed, res.Dir)
			}
		})
	}
}

// TestHunt hunts the check-then-set lock from Go, on the baseline of its
// declared system, without faults and with client pauses, and requires the
// campaign to catch it with a double-hold. The lock declares no tokens, so
// no run fences its register. The campaign's file makes the lock's row of
// a safety datasheet, which must say it unsafe.
func TestHunt(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "check-then-set.json")
	c, err := lockapi.Hunt(context.Background(), Locks[1], lockapi.WithFaults("none", "client-pause"), lockapi.WithRuns(2),
		lockapi.WithTimeLimit(2*time.Second), lockapi.WithStore(t.TempDir()), lockapi.WithSeed(1), lockapi.WithCampaignFile(file))
	if err != nil {
		t.Fatal(err)
	}
	checkDatasheet(t, file, filepath.Join(dir, "datasheet.md"))
	if c.Base != "redis-single-baseline" || c.ExitCode != 1 || !c.Found() || len(c.Kinds) != 2 {
		t.Fatalf("campaign on %s, exit %d, %d kinds %+v: want redis-single-baseline, exit 1, found, 2 kinds", c.Base, c.ExitCode, len(c.Kinds), c.Kinds)
	}
	found := false
	for _, k := range c.Kinds {
		if k.Runs != 2 || k.NotApplicable != "" {
			t.Errorf("%s: %d runs, not applicable %q; want 2 runs", k.Fault, k.Runs, k.NotApplicable)
		}
		if slices.Contains(k.Anomalies, "double-hold") && len(k.Failing) > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("no kind found a double-hold: %+v", c.Kinds)
	}
}

// checkResult holds a run to its verdict and anomaly kind, and to the
// client the run names: the lock on go-redis 9.17.3.
func checkResult(t *testing.T, res *lockapi.Result, lock lockapi.Lock, verdict, kind string) {
	t.Helper()
	if res.Verdict != verdict {
		t.Errorf("verdict %s, want %s (anomalies %v, notes %v, run %s)", res.Verdict, verdict, res.Kinds(), res.Notes, res.Dir)
	}
	if kind != "" && !slices.Contains(res.Kinds(), kind) {
		t.Errorf("no %s among %v", kind, res.Kinds())
	}
	if !strings.Contains(res.Client, "go-redis 9.17.3") || !strings.HasPrefix(res.Client, lock.Name) {
		t.Errorf("the run's client %q is not %s on go-redis 9.17.3", res.Client, lock.Name)
	}
}

// checkShrink shrinks the failing run in dir, on a small budget, and
// requires a shrunk scenario that still names the lock's command.
func checkShrink(t *testing.T, dir string, lock lockapi.Lock) {
	t.Helper()
	path, err := lockapi.Shrink(context.Background(), dir, lock, lockapi.WithShrinkBudget(1, 1, 1, 4))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := lock.Command()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "JEPSEN_LITE_LOCKAPI") || !strings.Contains(string(b), lock.Name) {
		t.Errorf("%s does not name the lock's command %s:\n%s", path, cmd, b)
	}
}

// checkDatasheet makes the datasheet of the campaign file and requires
// the lock's row, named by the file, with an unsafe cell.
func checkDatasheet(t *testing.T, campaign, out string) {
	t.Helper()
	if err := lockapi.Datasheet(context.Background(), out, []string{campaign}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "| check-then-set |") {
			if !strings.Contains(line, "**unsafe**") {
				t.Errorf("the lock's row says nothing unsafe: %s", line)
			}
			return
		}
	}
	t.Errorf("the datasheet has no row for check-then-set:\n%s", b)
}
