package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// TestBehaviourKill kills a Redis node until the heal and checks what the
// node really did: its process is gone and its port refuses connections,
// and after the heal a new process answers on it.
func TestBehaviourKill(t *testing.T) {
	tr := startRun(t, cluster.Spec{System: cluster.Redis, Nodes: 1}, 1)
	addr := nodeAddr(t, tr, "n1")
	before := tr.c.Pids()["n1"]
	if before == 0 {
		t.Fatal("n1 has no process before the kill")
	}

	tr.run(t, Step{Fault: "kill", Targets: []string{"n1"}})
	waitFor(t, "n1's process to be gone", func() bool { return processGone(before) })
	if pid, ok := tr.c.Pids()["n1"]; ok {
		t.Fatalf("the killed n1 still has a process, %d", pid)
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dialling the killed n1 at %s: %v, want ECONNREFUSED", addr, err)
	}

	tr.healAll(t)
	if after := tr.c.Pids()["n1"]; after == 0 || after == before {
		t.Fatalf("n1's process after the heal is %d, before the kill %d: want a new one", after, before)
	}
	if err := tr.direct(t, "n1").Ping(context.Background()).Err(); err != nil {
		t.Fatalf("n1 does not answer after the heal: %v", err)
	}
	if s := tr.nemesisOps(t, "start"); len(s) != 1 || fmt.Sprint(s[0]["nodes"]) != "[n1]" {
		t.Fatalf("recorded starts %v, want one of [n1]", s)
	}
}

// nodeAddr returns node's own address, bypassing the proxies.
func nodeAddr(t *testing.T, tr *testRun, node string) string {
	t.Helper()
	for _, n := range tr.c.Nodes() {
		if n.Name == node {
			return n.Addr
		}
	}
	t.Fatalf("no node %s", node)
	return ""
}
