package runner

import (
	"context"
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
