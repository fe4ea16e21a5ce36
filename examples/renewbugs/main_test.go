package renewbugs

import (
	"context"
	"os"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/lockapi"
)

// TestMain serves one of the planted bugs' locks when the harness started
// this test binary as a lock's command (lockapi.Main), and runs the tests
// otherwise.
func TestMain(m *testing.M) {
	if code, served := lockapi.Main(apiLocks()...); served {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// apiLocks are the planted bugs' buggy and corrected locks as a user's
// module serves them to the harness (lockapi.Lock): each named by its bug
// (the twin with "-fixed"), on Redis, self-renewing when the bug's lock
// is.
func apiLocks() []lockapi.Lock {
	var locks []lockapi.Lock
	for _, b := range bugs {
		locks = append(locks, apiLock(b.name, b, b.buggy), apiLock(b.name+"-fixed", b, b.fixed))
	}
	return locks
}

// apiLock is the lockapi.Lock named name whose Lockers newLock makes.
func apiLock(name string, b renewBug, newLock func(clients.Target) clients.Locker) lockapi.Lock {
	factory := func(_ context.Context, t clients.Target) (clients.Locker, error) { return newLock(t), nil }
	return lockapi.Lock{Name: name, Factory: factory, System: "redis", SelfRenewing: b.lease.SelfRenewing}
}

// lockOf is the lockapi.Lock of the named planted lock.
func lockOf(t *testing.T, name string) lockapi.Lock {
	t.Helper()
	for _, l := range apiLocks() {
		if l.Name == name {
			return l
		}
	}
	t.Fatalf("no planted lock %q", name)
	return lockapi.Lock{}
}
