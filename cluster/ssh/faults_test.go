//go:build sshhosts

package ssh

import (
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// faultBound bounds a kill, a start after it and a pause of a Redis node
// on a test host: a fault of a scenario's step must take effect within a
// moment, as on the local backend (tens of milliseconds), not the seconds
// a new SSH session per command and a late reaping by the host's init
// took.
const faultBound = time.Second

// TestKillStartPauseQuick kills a Redis node, starts it again, pauses and
// resumes it, three times, and checks that each took less than faultBound
// and that each kill ended the server: its pid is gone from the host, not
// left a zombie, and its port answers again only after the start.
func TestKillStartPauseQuick(t *testing.T) {
	inv := newTestHosts(t, 1)
	nw, err := cluster.NewNetwork(linknet.WithLinkAddress(inv.Harness))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nw.Close() })
	ctx := ctxFor(t, 2*time.Minute)
	c, err := Start(ctx, inv, cluster.Spec{System: cluster.Redis, Nodes: 1, LogDir: t.TempDir()}, nw)
	if err != nil {
		t.Fatal(err)
	}
	left := c.Remains()
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		checkNothingLeft(t, left())
	})
	n := c.nodes[0]
	timed := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if took := time.Since(start); took > faultBound {
			t.Errorf("%s took %v, more than %v", what, took, faultBound)
		} else {
			t.Logf("%s took %v", what, took)
		}
	}
	for round := range 3 {
		pid, err := n.conn.run(ctx, "cat "+quote(n.dir+"/pid"), nil)
		if err != nil {
			t.Fatal(err)
		}
		pid = strings.TrimSpace(pid)
		timed("kill", func() error { return c.Kill(ctx, "n1") })
		if out, err := n.conn.run(ctx, `[ ! -e /proc/`+pid+` ] || cat /proc/`+pid+`/status`, nil); err != nil || out != "" {
			t.Errorf("round %d: server pid %s after the kill: %q %v, want it gone", round, pid, out, err)
		}
		if err := n.ready(ctx, n.addr); err == nil {
			t.Errorf("round %d: n1 answers after its kill", round)
		}
		timed("start", func() error { return c.Start(ctx, "n1") })
		timed("pause", func() error { return c.Pause(ctx, "n1") })
		timed("resume", func() error { return c.Resume(ctx, "n1") })
	}
}
