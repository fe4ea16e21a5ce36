package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestOwnLockName runs a Go Locker of the caller's own under a name, and
// checks that the stored scenario, results.json and the report carry the
// name, and that the stored run can be run again only with the factory.
func TestOwnLockName(t *testing.T) {
	const name = "my-redis-lock"
	sc := load(t, "redis-single-baseline")
	store := t.TempDir()
	res, err := runner.Run(context.Background(), sc, runner.WithStore(store), runner.WithSeed(1),
		runner.WithTimeLimit(time.Second), runner.WithLockerNamed(name, clients.NewRedisSingle))
	if err != nil {
		t.Fatal(err)
	}
	if res.Results.Lock != name || !res.Results.OwnLock {
		t.Errorf("results name the lock %q (own %v), want %q (own)", res.Results.Lock, res.Results.OwnLock, name)
	}
	var stored reports.Results
	b, err := os.ReadFile(filepath.Join(res.Dir, reports.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Lock != name || !stored.OwnLock {
		t.Errorf("results.json names the lock %q (own %v), want %q (own)", stored.Lock, stored.OwnLock, name)
	}
	html, err := os.ReadFile(filepath.Join(res.Dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), name+" (a Go Locker of its own)") {
		t.Error("the report does not name the lock")
	}
	again, err := scenarios.Load(res.Dir, runner.Names())
	if err != nil {
		t.Fatalf("the stored scenario of the run does not load: %v", err)
	}
	if again.Lock.Algorithm != name || !again.Lock.Own {
		t.Fatalf("the stored scenario names the lock %q (own %v), want %q (own)", again.Lock.Algorithm, again.Lock.Own, name)
	}

	t.Run("a replay without the factory runs nothing", func(t *testing.T) {
		replays := t.TempDir()
		_, err := runner.Run(context.Background(), again, runner.WithStore(replays))
		if !errors.Is(err, runner.ErrOwnLock) || !errors.Is(err, runner.ErrSetup) || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Fatalf("error %v, want ErrOwnLock naming %q", err, name)
		}
		if entries, _ := os.ReadDir(replays); len(entries) > 0 {
			t.Errorf("the refused replay left %d entries in its store", len(entries))
		}
	})
	t.Run("a replay with the factory keeps the name", func(t *testing.T) {
		res, err := runner.Run(context.Background(), again, runner.WithStore(t.TempDir()), runner.WithLocker(clients.NewRedisSingle))
		if err != nil {
			t.Fatal(err)
		}
		if res.Results.Lock != name {
			t.Errorf("the replay names the lock %q, want %q", res.Results.Lock, name)
		}
	})
}

// TestOwnLockNames checks which names a lock of the caller's own may have
// and that a scenario run with one need not name an algorithm.
func TestOwnLockNames(t *testing.T) {
	noAlgorithm := func(t *testing.T) *scenarios.Scenario {
		sc := load(t, "redis-single-baseline")
		sc.Lock.Algorithm = ""
		return sc
	}
	tests := []struct {
		name     string
		sc       func(t *testing.T) *scenarios.Scenario
		opt      runner.Option
		wantLock string // the stored name; "" when the run must be refused
		wantErr  error
	}{
		{"the default name", noAlgorithm, runner.WithLocker(clients.NewRedisSingle), runner.DefaultLockerName, nil},
		{"a name of its own", noAlgorithm, runner.WithLockerNamed("mine", clients.NewRedisSingle), "mine", nil},
		{"a built-in algorithm's name", noAlgorithm, runner.WithLockerNamed("redis-single", clients.NewRedisSingle), "", nil},
		{"no algorithm and no factory", noAlgorithm, runner.WithSeed(1), "", scenarios.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := t.TempDir()
			res, err := runner.Run(context.Background(), tt.sc(t), runner.WithStore(store), runner.WithSeed(1), runner.WithTimeLimit(500*time.Millisecond), tt.opt)
			if tt.wantLock == "" {
				if err == nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want the run refused (%v)", err, tt.wantErr)
				}
				if entries, _ := os.ReadDir(store); len(entries) > 0 {
					t.Errorf("the refused run left %d entries in its store", len(entries))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Results.Lock != tt.wantLock {
				t.Errorf("lock %q, want %q", res.Results.Lock, tt.wantLock)
			}
		})
	}
}
