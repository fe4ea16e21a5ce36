package runner_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/lockproto"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// execScenario returns a catalog scenario whose lock is the plain-socket
// Redis client of lockproto/testdata, breaking the protocol as brk says.
func execScenario(t *testing.T, name, brk string) *scenarios.Scenario {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to run the test clients: ", err)
	}
	script, err := filepath.Abs("../lockproto/testdata/resp_lock.py")
	if err != nil {
		t.Fatal(err)
	}
	command := py + " " + script
	if brk != "" {
		command += " --break " + brk
	}
	sc := load(t, name)
	sc.Lock.Algorithm = clients.ExecAlgorithm
	sc.Lock.Options = map[string]string{clients.ExecCommandOption: command}
	return sc
}

// TestExecClient runs an external client through a scenario: well behaved
// it meets the scenario's expectation; one that breaks the protocol (a
// malformed line, an exit) stops the run with the verdict unknown and the
// error, and the history keeps every op recorded, the op in flight as
// info; one that hangs is crashed and replaced by a new process, and the
// run goes on.
func TestExecClient(t *testing.T) {
	cases := []struct {
		name, scenario, brk string
		broken              string // the protocol error, "" when none
		keep                bool   // lock.on-error: keep-client
	}{
		{"gc pause", "redis-single-gc-pause", "", "", false},
		{"malformed", "redis-single-baseline", "malformed@40", "stdout line 41: not a JSON object", false},
		{"exits", "redis-single-baseline", "exit@40", "exited: exit status 3", false},
		{"hangs", "redis-single-baseline", "hang@40", "", false},
		// A client killed for a late reply is gone even where the
		// scenario keeps clients after errors.
		{"hangs, clients kept", "redis-single-baseline", "hang@40", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := t.TempDir()
			sc := execScenario(t, tc.scenario, tc.brk)
			if tc.keep {
				sc.Lock.OnError = scenarios.OnErrorKeepClient
			}
			res, err := runner.Run(context.Background(), sc, runner.WithStore(store), runner.WithSeed(1), runner.WithTimeLimit(4*time.Second))
			if tc.broken != "" {
				if !errors.Is(err, runner.ErrLockClient) || !errors.Is(err, lockproto.ErrProtocol) || !strings.Contains(err.Error(), tc.broken) {
					t.Fatalf("run error %v: want the lock client's protocol error saying %q", err, tc.broken)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if res == nil || res.Results == nil {
				t.Fatal("no results")
			}
			if lc := res.Results.LockClient; lc == nil || !strings.Contains(lc.Name, "resp_lock.py") {
				t.Errorf("results name the lock client %+v", lc)
			}
			h, _, rerr := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
			if rerr != nil {
				t.Fatal(rerr)
			}
			infos, processes := 0, map[int]bool{}
			for _, op := range h {
				if op.Process >= 0 && (op.F == history.FAcquire || op.F == history.FRelease) {
					processes[op.Process] = true
					if op.Type == history.Info {
						infos++
					}
				}
			}
			switch {
			case tc.broken != "":
				if res.Results.Verdict != checker.Unknown {
					t.Errorf("verdict %s, want unknown", res.Results.Verdict)
				}
				// Every worker got through its first requests before the
				// one that broke: all of that is in the history.
				if len(h) < 40 || infos < 1 {
					t.Errorf("history of %d ops with %d info: want the ops before the break and the op in flight as info", len(h), infos)
				}
			case tc.brk != "":
				if !res.Results.ExpectationMet || infos == 0 || len(processes) <= 8 {
					t.Errorf("verdict %s (met %v), %d info, %d processes: want the scenario's verdict, crashes and new processes", res.Results.Verdict, res.Results.ExpectationMet, infos, len(processes))
				}
			default:
				if !res.Results.ExpectationMet {
					t.Errorf("verdict %s with %v: expectation not met", res.Results.Verdict, res.Results.Checkers)
				}
			}
		})
	}
}

// TestExecQueue runs the queue baseline against the plain-socket client's
// queue: it meets the scenario's expectation (no task captured twice, none
// lost), and the results name the client.
func TestExecQueue(t *testing.T) {
	sc := execScenario(t, "redis-zadd-queue-baseline", "")
	sc.Lock.Options[clients.ExecCommandOption] += " --queue"
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithTimeLimit(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if lc := res.Results.LockClient; lc == nil || !strings.Contains(lc.Name, "resp_lock.py") {
		t.Errorf("results name the queue client %+v", lc)
	}
	if !res.Results.ExpectationMet || res.Results.Stats.OK < 50 {
		t.Errorf("verdict %s (met %v) with %d ok ops: %+v", res.Results.Verdict, res.Results.ExpectationMet, res.Results.Stats.OK, res.Results.Checkers)
	}
}

// TestExecClientClock checks that client-clock reaches an external
// client's process or stops the run at setup: the Python client's wall
// clock follows its worker's (the probe passes and the run goes on), a Go
// program's does not (its runtime reads the clock without libc), and the
// run says so before any worker starts.
func TestExecClientClock(t *testing.T) {
	memlock := filepath.Join(t.TempDir(), "memlock")
	if out, err := exec.Command("go", "build", "-o", memlock, "../lockproto/testdata/memlock").CombinedOutput(); err != nil {
		t.Fatalf("building memlock: %v\n%s", err, out)
	}
	t.Run("python follows", func(t *testing.T) {
		sc := execScenario(t, "redis-zadd-timeout-client-clock", "")
		res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithTimeLimit(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if res.Results.Stats.OK == 0 || res.Results.FaultsFailed() {
			t.Errorf("the run did not go on with its clock faults: %+v", res.Results)
		}
	})
	t.Run("go does not", func(t *testing.T) {
		sc := execScenario(t, "redis-zadd-timeout-client-clock", "")
		sc.Lock.Options[clients.ExecCommandOption] = memlock
		_, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithTimeLimit(3*time.Second))
		if !errors.Is(err, runner.ErrSetup) || !strings.Contains(err.Error(), "client-clock cannot skew") || !strings.Contains(err.Error(), "memlock") {
			t.Errorf("error %v: want a setup error saying client-clock cannot skew memlock", err)
		}
	})
}
