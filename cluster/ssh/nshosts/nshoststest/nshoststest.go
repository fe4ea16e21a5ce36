// Package nshoststest gives a test hosts made of network namespaces
// (package nshosts) for its own length: made within a bound, removed at
// its end, with a check that nothing of them is left.
package nshoststest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/ssh/nshosts"
)

// createTimeout bounds the making of the hosts, their sshd's start
// included.
const createTimeout = time.Minute

// Create makes the hosts of o for the test t, skipping it, saying why,
// where they cannot be made here (nshosts.Check). At the test's end it
// logs the hosts' sshd logs if the test failed, removes them, and fails
// the test for anything of them left on the machine (nshosts.Remains).
// A check the caller registers with t.Cleanup before Create runs after
// the removal.
func Create(t testing.TB, o nshosts.Options) *nshosts.Hosts {
	t.Helper()
	if err := nshosts.Check(); err != nil {
		t.Skipf("SKIPPED: namespace hosts cannot be made here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	hosts, err := nshosts.Create(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(hosts.Logs())
		}
		if err := hosts.Close(); err != nil {
			t.Error(err)
		}
		for _, l := range nshosts.Remains(os.Getpid(), hosts.Harness()) {
			t.Errorf("left behind: %s", l)
		}
	})
	return hosts
}
