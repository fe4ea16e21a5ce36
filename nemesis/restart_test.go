package nemesis

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestBehaviourRestart restarts a Redis node that holds a lock key and
// checks what the node really did: its process is a new one, it answers
// again at once (a restart has no downtime to wait out), and the key is
// kept with persistence and lost without it.
func TestBehaviourRestart(t *testing.T) {
	for _, persistent := range []bool{false, true} {
		t.Run(fmt.Sprintf("persistence=%v", persistent), func(t *testing.T) {
			tr := startRun(t, cluster.Spec{System: cluster.Redis, Nodes: 1, Persistence: persistent}, 1)
			if got, err := acquire(tr.worker(t, 0, "n1"), "lock", "w0", time.Minute); got != history.OK {
				t.Fatalf("acquire before the restart: %v %v", got, err)
			}
			before := tr.c.Pids()["n1"]
			if before == 0 {
				t.Fatal("n1 has no process before the restart")
			}

			tr.run(t, Step{Fault: "restart", Targets: []string{"n1"}})
			after := tr.c.Pids()["n1"]
			if after == 0 || after == before {
				t.Fatalf("n1's process after the restart is %d, before it %d: want a new one", after, before)
			}
			waitFor(t, "n1's old process to be gone", func() bool { return processGone(before) })
			waitFor(t, "the restarted n1 to answer through w0's link", func() bool {
				return tr.worker(t, 0, "n1").Ping(context.Background()).Err() == nil
			})
			v, err := tr.worker(t, 0, "n1").Get(context.Background(), "lock").Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("GET after the restart: %v", err)
			}
			if kept := v == "w0"; kept != persistent {
				t.Fatalf("after the restart the lock key is %q; with persistence %v it should be kept: %v", v, persistent, persistent)
			}
			restartRecorded(t, tr)
		})
	}
}

// restartRecorded fails unless the history holds one restart of n1 and no
// heal or start: a restart is a moment.
func restartRecorded(t *testing.T, tr *testRun) {
	t.Helper()
	if r := tr.nemesisOps(t, "restart"); len(r) != 1 || fmt.Sprint(r[0]["nodes"]) != "[n1]" || r[0]["error"] != nil {
		t.Fatalf("recorded restarts %v, want one of [n1] without an error", r)
	}
	if s := tr.nemesisOps(t, "start"); len(s) != 0 {
		t.Fatalf("recorded starts %v after a restart, want none: a restart has no heal", s)
	}
}

// processGone reports whether no process has the id pid (a zombie still
// has it).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
