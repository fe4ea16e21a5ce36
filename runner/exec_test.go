package runner_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/lockproto"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// execScenario returns a catalog scenario whose lock is the plain-socket
// Redis client of lockproto/testdata with args ("--break hang@40": it
// breaks the protocol at its 40th request).
func execScenario(t *testing.T, name, args string) *scenarios.Scenario {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to run the test clients: ", err)
	}
	script, err := filepath.Abs("../lockproto/testdata/resp_lock.py")
	if err != nil {
		t.Fatal(err)
	}
	command := strings.TrimSpace(py + " " + script + " " + args)
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
		// Garbage without a newline, then a hang: quoted, not lost.
		{"garbage then hangs", "redis-single-baseline", "garbage-hang@40", `only part of a line without its newline: "acquired k`, false},
		// A client killed for a late reply is gone even where the
		// scenario keeps clients after errors.
		{"hangs, clients kept", "redis-single-baseline", "hang@40", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := t.TempDir()
			sc := execScenario(t, tc.scenario, "")
			if tc.brk != "" {
				sc = execScenario(t, tc.scenario, "--break "+tc.brk)
			}
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
				checkBroken(t, res, tc.broken, len(h), infos)
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

// checkBroken checks a run that its client's break of the protocol
// stopped: its verdict is unknown; results.json and run.log name the
// worker and say broken (the line it wrote); and the history of ops ops,
// infos of them info, keeps what every worker did before the break and the
// op in flight as info.
func checkBroken(t *testing.T, res *runner.Result, broken string, ops, infos int) {
	t.Helper()
	if res.Results.Verdict != checker.Unknown {
		t.Errorf("verdict %s, want unknown", res.Results.Verdict)
	}
	log, err := os.ReadFile(filepath.Join(res.Dir, reports.RunLogFile))
	if err != nil {
		t.Fatal(err)
	}
	if note := res.Results.Checkers[0].Note; !strings.Contains(note, "exec client w") || !strings.Contains(note, broken) || !strings.Contains(string(log), broken) {
		t.Errorf("results.json's note %q or run.log does not name the worker and say %q", note, broken)
	}
	if ops < 40 || infos < 1 {
		t.Errorf("history of %d ops with %d info: want the ops before the break and the op in flight as info", ops, infos)
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

// TestExecSilentClient runs a client that answers init and then no request
// at all (each process stalls at its first), beside two CPU hogs: every
// call ends at its deadline without an answer, so the run tested nothing,
// and its verdict is unknown, with a note that names each worker and
// quotes the last unanswered call, on the console's checker note, in
// results.json and in run.log.
func TestExecSilentClient(t *testing.T) {
	cpuHogs(t, 2)
	sc := execScenario(t, "redis-single-baseline", "--break hang@1")
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithTimeLimit(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Results
	last := len(r.Checkers) - 1
	if r.Verdict != checker.Unknown || last < 0 || r.Checkers[last].Name != "run" || r.Checkers[last].Verdict != checker.Unknown {
		t.Fatalf("verdict %s, checkers %+v: want unknown from the run", r.Verdict, r.Checkers)
	}
	note := r.Checkers[last].Note
	stored, err := reports.ReadResults(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(res.Dir, reports.RunLogFile))
	if err != nil {
		t.Fatal(err)
	}
	for w := range sc.Workers {
		want := fmt.Sprintf("w%d: its lock client answered none of its", w)
		if !strings.Contains(note, want) || !strings.Contains(stored.Checkers[last].Note, want) || !strings.Contains(string(log), "silent lock client: "+want) {
			t.Errorf("the note, results.json or run.log does not say %q: %s", want, note)
		}
	}
	if !strings.Contains(note, "no reply within the op's timeout") {
		t.Errorf("the note does not quote the unanswered call: %s", note)
	}
	t.Logf("note: %s", note)
}

// TestExecPauseNeverFired runs a client that claims the after-response
// handshake but never sends it, with a pause armed at after-response: the
// pause is a fault that failed, in the history (a client-pause fail op
// with its reason) and in results.json, and the run's outcome is unknown.
// The same pause on a client that does not claim the handshake stops it
// after its reply, and nothing fails.
func TestExecPauseNeverFired(t *testing.T) {
	cases := []struct {
		name, args string
		fails      bool
	}{
		{"claimed and never sent", "--wrong no-handshake", true},
		{"not claimed", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := execScenario(t, "redis-single-baseline", tc.args)
			sc.Nemesis.Steps = nemesis.Schedule{{At: time.Second, Fault: "client-pause", Targets: []string{"w0"}, Point: nemesis.AfterResponse, Duration: 300 * time.Millisecond}}
			res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithTimeLimit(3*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			failed := slices.ContainsFunc(res.Results.FailedFaults, func(f reports.FailedFault) bool {
				return f.Error == "never fired: the client sent no after-response"
			})
			h, _, err := history.ReadFile(filepath.Join(res.Dir, reports.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			failOp, paused := false, false
			for _, op := range h {
				if op.F == history.FClientPause {
					failOp = failOp || (op.Type == history.Fail && strings.Contains(op.Error, "never fired"))
					paused = paused || op.Type == history.Info && strings.Contains(string(op.Value), `"worker":0`)
				}
			}
			if failed != tc.fails || failOp != tc.fails || paused == tc.fails {
				t.Errorf("failed fault %v, fail op %v, pause began %v: want failed %v (faults %+v)", failed, failOp, paused, tc.fails, res.Results.FailedFaults)
			}
			if tc.fails && res.Results.Verdict != checker.Unknown {
				t.Errorf("verdict %s: want unknown, the run did not do what its scenario said", res.Results.Verdict)
			}
			// The history, its failed pause included, is well-formed and
			// its lock held: only the nemesis's note makes it unknown.
			for _, c := range res.Results.Checkers {
				if c.Name != "nemesis" && c.Verdict != checker.Valid {
					t.Errorf("checker %s: %s (%s)", c.Name, c.Verdict, c.Note)
				}
			}
		})
	}
}

// cpuHogs starts n busy loops beside the test, each a shell in a process
// group of its own, killed when the test ends.
func cpuHogs(t *testing.T, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
}

// TestExecInitStallUnderLoad runs a scenario whose client never answers
// init, its eight workers' processes started together beside two CPU
// hogs: the run stops at setup with the protocol error naming init's bound,
// and returns well within a hang bound of init's 20 s (the servers' start
// and the processes' kill included). The time it took is logged
// (docs/performance.md).
func TestExecInitStallUnderLoad(t *testing.T) {
	cpuHogs(t, 2)
	sc := execScenario(t, "redis-single-baseline", "")
	sc.Lock.Options[clients.ExecCommandOption] = "sleep 3600"
	began := time.Now()
	_, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithTimeLimit(3*time.Second))
	took := time.Since(began)
	want := "no init_ok within " + lockproto.DefaultInitTimeout.String()
	if !errors.Is(err, runner.ErrSetup) || !errors.Is(err, lockproto.ErrProtocol) || !strings.Contains(err.Error(), want) {
		t.Errorf("run error %v: want a setup error saying %q", err, want)
	}
	const hangBound = 90 * time.Second // the servers' start, under load, included
	if took > lockproto.DefaultInitTimeout+lockproto.KillWait+hangBound {
		t.Errorf("the run returned after %v: want within init's %v, KillWait %v and %v more", took, lockproto.DefaultInitTimeout, lockproto.KillWait, hangBound)
	}
	t.Logf("a client that never answers init, 8 workers beside 2 CPU hogs: the run returned after %v", took)
}

// TestExecClientsStartTogether runs a lock and a queue scenario whose
// client takes a while to start (a wrapper that notes its start, sleeps,
// notes that it is ready and runs the client): every process of the
// workers starts before the first is ready, so that start-ups do not add
// up (on a loaded machine, eight JVMs one after the other would take
// minutes before the first op).
func TestExecClientsStartTogether(t *testing.T) {
	cases := []struct{ name, scenario, args string }{
		{"lock", "redis-single-baseline", ""},
		{"queue", "redis-zadd-queue-baseline", "--queue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			marks := filepath.Join(t.TempDir(), "marks")
			sc := execScenario(t, tc.scenario, tc.args)
			client := sc.Lock.Options[clients.ExecCommandOption]
			sc.Lock.Options[clients.ExecCommandOption] = "echo start >> " + marks + "; sleep 3; echo ready >> " + marks + "; exec " + client
			res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithTimeLimit(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(marks)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Fields(string(b))
			first, want := slices.Index(lines, "ready"), sc.Processes()
			if first < want {
				t.Errorf("%d processes started before the first was ready: want all %d of the workers' first processes (marks %q)", first, want, lines)
			}
			if res.Results.Stats.OK == 0 {
				t.Errorf("the run recorded no ok op: %+v", res.Results.Checkers)
			}
		})
	}
}
