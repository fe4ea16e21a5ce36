package runner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/hunt"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestHuntLease checks what a hunt draws of each kind of lock's lease: any
// ttl for a PX lease and for a lock of one's own, whole seconds of at
// least one for etcd's lease, the base's ttl for a ZooKeeper session and a
// lock that never expires, and long holds without a drawn renewal for a
// lock that lives with its session or never expires, or that the caller
// declares self-renewing; bounds the caller gives are kept whole.
func TestHuntLease(t *testing.T) {
	own := func(context.Context, clients.Target) (clients.Locker, error) { return nil, nil }
	cases := []struct {
		name      string
		algorithm string
		factory   clients.Factory
		given     hunt.Lease
		want      hunt.Lease
	}{
		{name: "PX lease", algorithm: "redis-single", want: hunt.Lease{}},
		{name: "etcd's whole seconds", algorithm: "etcd-mutex", want: hunt.Lease{MinTTL: time.Second, TTLStep: time.Second, SelfRenewing: true}},
		{name: "ZooKeeper session", algorithm: "zk-lock", want: hunt.Lease{FixedTTL: true, SelfRenewing: true}},
		{name: "never expires", algorithm: "pg-advisory", want: hunt.Lease{FixedTTL: true, SelfRenewing: true}},
		{name: "a Go Locker of one's own", algorithm: "mine", factory: own, want: hunt.Lease{}},
		{name: "an external client", algorithm: clients.ExecAlgorithm, want: hunt.Lease{}},
		{name: "a lock of one's own declared self-renewing", algorithm: "mine", factory: own, given: hunt.Lease{SelfRenewing: true}, want: hunt.Lease{SelfRenewing: true}},
		{name: "etcd declared self-renewing keeps its seconds", algorithm: "etcd-mutex", given: hunt.Lease{SelfRenewing: true}, want: hunt.Lease{MinTTL: time.Second, TTLStep: time.Second, SelfRenewing: true}},
		{name: "the caller's bounds", algorithm: "etcd-mutex", given: hunt.Lease{MaxTTL: 3 * time.Second}, want: hunt.Lease{MaxTTL: 3 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := &scenarios.Scenario{Lock: scenarios.Lock{Algorithm: tc.algorithm, TTL: 2 * time.Second}}
			if got := huntLease(base, &config{factory: tc.factory}, tc.given); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// plainLocker is a Locker that can neither renew nor wait; waitingLocker
// can do both.
type plainLocker struct{}

func (plainLocker) Acquire(context.Context, string, time.Duration) (clients.Lease, error) {
	return clients.Lease{}, clients.ErrNotAcquired
}
func (plainLocker) Release(context.Context, clients.Lease) error { return nil }
func (plainLocker) Close() error                                 { return nil }

type waitingLocker struct{ plainLocker }

func (waitingLocker) Renew(context.Context, clients.Lease, time.Duration) (clients.Lease, error) {
	return clients.Lease{}, clients.ErrNotHeld
}
func (waitingLocker) AcquireWait(context.Context, string, time.Duration, time.Duration) (clients.Lease, error) {
	return clients.Lease{}, clients.ErrNotAcquired
}

// TestHuntProbesGoLocker checks that a hunt with a Go Locker of one's own
// learns its abilities from one Locker its factory makes before any
// cluster starts, for a Target of the base's nodes at addresses that
// answer nothing, and refuses to draw a renewal or a waiting acquire it
// cannot serve; a factory that fails there leaves the hunt to learn from
// its runs, and says so.
func TestHuntProbesGoLocker(t *testing.T) {
	base, err := scenarios.Load("redis-single-baseline", Names())
	if err != nil {
		t.Fatal(err)
	}
	renewing, waiting := *base, *base
	renewing.Lock.Renew = base.Lock.TTL / 3
	waiting.Lock.Acquire, waiting.Lock.Wait = scenarios.AcquireWait, base.Lock.TTL
	cases := []struct {
		name         string
		locker       clients.Locker
		fail         bool
		renew, wait  bool // whether the validation lets each through
		wantLogClaim string
	}{
		{name: "neither", locker: plainLocker{}, wantLogClaim: "claims wait false, renew false"},
		{name: "both", locker: waitingLocker{}, renew: true, wait: true, wantLogClaim: "claims wait true, renew true"},
		{name: "a factory that fails", fail: true, renew: true, wait: true, wantLogClaim: "abilities are unknown before the campaign"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []clients.Target
			factory := func(_ context.Context, tg clients.Target) (clients.Locker, error) {
				got = append(got, tg)
				if tc.fail {
					return nil, errors.New("no server answered")
				}
				return tc.locker, nil
			}
			var log strings.Builder
			validate, err := huntValidate(context.Background(), base, &config{factory: factory}, &log, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].System != "redis" || len(got[0].Endpoints) != base.System.Nodes {
				t.Fatalf("the factory was called for %+v, want once for the base's %d redis nodes", got, base.System.Nodes)
			}
			if !strings.Contains(log.String(), tc.wantLogClaim) {
				t.Errorf("log %q, want %q", log.String(), tc.wantLogClaim)
			}
			for _, c := range []struct {
				sc    *scenarios.Scenario
				field string
				ok    bool
			}{{&renewing, "lock.renew", tc.renew}, {&waiting, "lock.acquire", tc.wait}} {
				var incapable *IncapableError
				err := validate(c.sc)
				if refused := errors.As(err, &incapable) && incapable.Field == c.field; refused == c.ok {
					t.Errorf("%s: validate = %v; want it let through: %v", c.field, err, c.ok)
				}
			}
		})
	}
}
