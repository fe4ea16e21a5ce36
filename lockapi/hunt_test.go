package lockapi

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHuntFlags: Hunt gives the command the lock's declarations and the
// options as hunt's flags, and a Lock without tokens no --lock-tokens, one
// that does not renew by itself no --lock-self-renewing.
func TestHuntFlags(t *testing.T) {
	seed := uint64(7)
	tests := []struct {
		name string
		lock Lock
		o    options
		want []string
	}{
		{"nothing", Lock{}, options{}, nil},
		{"tokens", Lock{Tokens: true}, options{}, []string{"--lock-tokens"}},
		{"self-renewing", Lock{SelfRenewing: true}, options{}, []string{"--lock-self-renewing"}},
		{"every option", Lock{}, options{faults: "none,kill", runs: 3, timeLimit: 2 * time.Second, store: "s", seed: &seed, steer: true, huntShrink: true},
			[]string{"--faults", "none,kill", "--runs", "3", "--time-limit", "2s", "--store", "s", "--seed", "7", "--steer", "--shrink"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := huntFlags(tt.lock, tt.o); !slices.Equal(got, tt.want) {
				t.Errorf("huntFlags = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestHuntNeedsSystem: a Lock without its System is refused before any
// command runs.
func TestHuntNeedsSystem(t *testing.T) {
	lock := Lock{Name: "x", Factory: func(context.Context, Target) (Locker, error) { return nil, nil }}
	_, err := Hunt(context.Background(), lock, WithBinary("/nonexistent/jepsen-lite"))
	if err == nil || !strings.Contains(err.Error(), "System") {
		t.Errorf("Hunt without a System: %v, want an error naming System", err)
	}
}

// TestReadCampaign reads a campaign file of the shape `hunt --json`
// writes, with a kind not applicable and one whose runs stopped after
// failed setups.
func TestReadCampaign(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	const file = `{"target":"redis-single-baseline","report":{"scenario":"redis-single-baseline","runs":4,"elapsed_ns":2000000000,
"rows":[{"fault":"none","runs":2,"invalid":1,"unknown":0,"anomalies":["double-hold"],"failing":["store/a/1"],"margin":-0.5,"has_margin":true},
{"fault":"failover","runs":0,"invalid":0,"unknown":0,"margin":0,"has_margin":false,"not_applicable":"no replicas"},
{"fault":"kill","runs":3,"invalid":0,"unknown":3,"setup_failed":3,"margin":0,"has_margin":false,"setup_gave_up":"setup failed in 3 runs in a row: no server"}]}}`
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := readCampaign(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Base != "redis-single-baseline" || c.Runs != 4 || c.Elapsed != 2*time.Second || !c.Found() || len(c.Kinds) != 3 {
		t.Fatalf("campaign %+v", c)
	}
	if k := c.Kinds[0]; k.Invalid != 1 || k.Failing[0] != "store/a/1" || k.Anomalies[0] != "double-hold" || !k.HasMargin || k.Margin != -0.5 {
		t.Errorf("kind none: %+v", k)
	}
	if c.Kinds[1].NotApplicable != "no replicas" {
		t.Errorf("kind failover: %+v", c.Kinds[1])
	}
	if k := c.Kinds[2]; k.Unknown != 3 || k.NotApplicable != "" || k.SetupGaveUp != "setup failed in 3 runs in a row: no server" {
		t.Errorf("kind kill: %+v; want 3 unknown runs, given up after failed setups", k)
	}
}
