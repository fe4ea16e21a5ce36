package clients

import (
	"errors"
	"testing"
	"time"
)

// TestGuardedResource checks that a write guarded by a stale lease is
// rejected by the system itself while the current holder's write lands.
func TestGuardedResource(t *testing.T) {
	cs := newClusters(t)
	tests := []struct {
		name  string
		c     contract
		stale bool // the stale write is rejected (token-less flavors accept it)
	}{
		{name: "pg-unique-row", c: contract{name: "pg-unique-row", spec: postgresOne, ttl: 5 * time.Second}, stale: true},
		{name: "pg-mutex", c: contract{name: "pg-mutex", spec: postgresOne, ttl: 5 * time.Second}, stale: false},
		{name: "etcd-mutex", c: contract{name: "etcd-mutex", spec: etcdOne, ttl: 5 * time.Second}, stale: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eps := cs.endpoints(t, tt.c.spec)
			ctx := t.Context()
			a := newLocker(t, tt.c.name, eps, 0, nil)
			b := newLocker(t, tt.c.name, eps, 1, nil)
			ga, gb := a.(GuardedResource), b.(GuardedResource)
			key := "guarded-" + tt.name

			la, err := a.Acquire(ctx, key, tt.c.ttl)
			if err != nil {
				t.Fatal(err)
			}
			if err := ga.WriteGuarded(ctx, la, 1); err != nil {
				t.Fatalf("holder's write: %v", err)
			}
			if err := a.Release(ctx, la); err != nil {
				t.Fatal(err)
			}
			lb, err := b.Acquire(ctx, key, tt.c.ttl)
			if err != nil {
				t.Fatal(err)
			}
			if err := gb.WriteGuarded(ctx, lb, 2); err != nil {
				t.Fatalf("new holder's write: %v", err)
			}
			err = ga.WriteGuarded(ctx, la, 3)
			want := int64(2)
			switch {
			case tt.stale && !errors.Is(err, ErrStaleToken):
				t.Fatalf("stale write: err = %v, want ErrStaleToken", err)
			case !tt.stale && err != nil:
				t.Fatalf("stale write of a token-less lock: err = %v, want nil", err)
			case !tt.stale:
				want = 3
			}
			got, err := gb.ReadGuarded(ctx, lb)
			if err != nil || got != want {
				t.Fatalf("read = %d, %v; want %d", got, err, want)
			}
			if err := b.Release(ctx, lb); err != nil {
				t.Fatal(err)
			}
		})
	}
}
