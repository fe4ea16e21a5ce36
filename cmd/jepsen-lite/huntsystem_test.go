package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHuntSystemUsage: hunt takes either an argument or --system (with
// --lock-command), never both nor neither, and only a known system; each
// refusal is one line, exit 254.
func TestHuntSystemUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"neither", []string{"--lock-command", "true"}, "or --lock-command with --system"},
		{"both", []string{"redis-single", "--system", "redis", "--lock-command", "true"}, "not both"},
		{"unknown system", []string{"--system", "mysql", "--lock-command", "true"}, `--system "mysql": want one of etcd, mariadb, postgres, redis, zookeeper`},
		{"--system without --lock-command", []string{"--system", "redis"}, "give --lock-command too"},
		{"--lock-tokens without --lock-command", []string{"redis-single", "--lock-tokens"}, "give --lock-command too"},
		{"--lock-self-renewing without --lock-command", []string{"redis-single", "--lock-self-renewing"}, "give --lock-command too"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"hunt", "--list"}, tt.args...)...)
			msg := strings.TrimSpace(stderr)
			if code != exitUsage || strings.Contains(msg, "\n") || !strings.Contains(msg, tt.want) {
				t.Errorf("exit %d, stderr %q (stdout %q); want exit %d and one line with %q", code, stderr, stdout, exitUsage, tt.want)
			}
		})
	}
}

// TestHuntSystemBaselines: every system's base is a catalog baseline of
// that system, one lock taken by trying with no faults.
func TestHuntSystemBaselines(t *testing.T) {
	for system, name := range systemBaselines {
		t.Run(system, func(t *testing.T) {
			sc, err := huntBase(name)
			if err != nil {
				t.Fatal(err)
			}
			if sc.System.Name != system || len(sc.Nemesis.Steps) > 0 || sc.Nemesis.Random != nil || sc.Lock.Acquire == "wait" || sc.Lock.Renew > 0 {
				t.Errorf("%s: system %s, %d fault steps, random %v, acquire %q, renew %v: not a plain baseline of %s", name, sc.System.Name, len(sc.Nemesis.Steps), sc.Nemesis.Random != nil, sc.Lock.Acquire, sc.Lock.Renew, system)
			}
		})
	}
}

// TestHuntDrawsWhatTheClientCan hunts a lock client of Redis that claims
// "wait" and no "renew" (lockproto/testdata/resp_lock.py), from the base
// --system redis derives, with the seed that draws a waiting acquire, a
// renewal and a fenced register. The hunt must probe the client before
// the campaign and draw no renewal (rather than learn it from a refused
// run), and fence the register only when --lock-tokens declares tokens.
func TestHuntDrawsWhatTheClientCan(t *testing.T) {
	py, script := respLockClient(t)
	tests := []struct {
		name     string
		tokens   bool
		register string
	}{
		{"no tokens declared: unfenced", false, "unfenced register"},
		{"--lock-tokens: fenced", true, " fenced register"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"hunt", "--system", "redis", "--lock-command", py + " " + script, "--faults", "none", "--runs", "1", "--seed", "2", "--time-limit", "1s", "--store", t.TempDir(), "--quiet"}
			if tt.tokens {
				args = append(args, "--lock-tokens")
			}
			code, stdout, stderr := runCLI(t, args...)
			if code > exitUnknown {
				t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
			}
			probe := strings.Index(stderr, `hunt: the lock client "resp_lock.py`)
			run := -1
			if m := regexp.MustCompile(`hunt: none run 1/1 \(seed 2, ttl [0-9.]+m?s, acquire wait, renew 0s,`).FindStringIndex(stderr); m != nil {
				run = m[0]
			}
			if probe < 0 || run < probe || strings.Contains(stderr, "drawn again") {
				t.Errorf("want the probe's line, then run 1 waiting with no renewal, and no workload drawn again:\n%s", stderr)
			}
			if !strings.Contains(stderr, tt.register) || !strings.Contains(stdout, "hunt: redis-single-baseline:") {
				t.Errorf("want a run with a %s on redis-single-baseline:\n%s%s", tt.register, stdout, stderr)
			}
		})
	}
}

// TestHuntNotApplicableStartsNothing hunts one Redis with the failovers:
// both kinds are reported not applicable from the base's topology, and
// neither leaves a run directory in the store (no cluster started for
// them); only the run without faults is made.
func TestHuntNotApplicableStartsNothing(t *testing.T) {
	store := t.TempDir()
	code, stdout, stderr := runCLI(t, "hunt", "redis-single-baseline", "--faults", "failover,sentinel-failover", "--runs", "1", "--time-limit", "1s", "--store", store, "--quiet")
	if code > exitUnknown {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	for _, kind := range []string{"failover", "sentinel-failover"} {
		if !strings.Contains(stderr, "hunt: "+kind+": not applicable: "+kind+" needs a") || !strings.Contains(stdout, "not applicable: "+kind+" needs a") {
			t.Errorf("%s: want it not applicable from the topology:\n%s%s", kind, stdout, stderr)
		}
		if dirs, _ := filepath.Glob(filepath.Join(store, "*-hunt-"+kind)); len(dirs) > 0 {
			t.Errorf("%s: a not applicable kind left %v", kind, dirs)
		}
	}
	if dirs, _ := filepath.Glob(filepath.Join(store, "*-hunt-none")); len(dirs) != 1 {
		t.Errorf("want the run without faults stored once, got %v", dirs)
	}
}
