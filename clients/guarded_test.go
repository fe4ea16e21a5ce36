package clients

import (
	"errors"
	"testing"
	"time"
)

// TestGuardedResource checks, for every algorithm declared to keep a
// guarded register (CapGuarded), that a write guarded by a stale lease is
// rejected by the system itself while the current holder's write lands; a
// token-less lock's guard cannot tell the leases apart and takes both.
func TestGuardedResource(t *testing.T) {
	cs := newClusters(t)
	tested := 0
	for _, tt := range algorithmCases(t, false) {
		if tt.caps[CapGuarded] != With {
			continue
		}
		tested++
		stale := tt.lease.Token != "" // the stale write is rejected
		ttl := 5 * time.Second
		if tt.expires() {
			ttl = 300 * time.Millisecond
		}
		t.Run(tt.label, func(t *testing.T) {
			eps := cs.endpoints(t, tt.spec)
			ctx := t.Context()
			a := newLocker(t, tt.Name, eps, 0, tt.options)
			b := newLocker(t, tt.Name, eps, 1, tt.options)
			ga, gb := a.(GuardedResource), b.(GuardedResource)
			key := "guarded-" + tt.Name

			la, err := a.Acquire(ctx, key, ttl)
			if err != nil {
				t.Fatal(err)
			}
			if err := ga.WriteGuarded(ctx, la, 1); err != nil {
				t.Fatalf("holder's write: %v", err)
			}
			if err := a.Release(ctx, la); err != nil && !(tt.expires() && errors.Is(err, ErrReleaseNoOp)) {
				t.Fatal(err)
			}
			if tt.expires() {
				time.Sleep(time.Until(la.Until) + 20*time.Millisecond)
			}
			lb, err := b.Acquire(ctx, key, ttl)
			if err != nil {
				t.Fatal(err)
			}
			if err := gb.WriteGuarded(ctx, lb, 2); err != nil {
				t.Fatalf("new holder's write: %v", err)
			}
			err = ga.WriteGuarded(ctx, la, 3)
			want := int64(2)
			switch {
			case stale && !errors.Is(err, ErrStaleToken):
				t.Fatalf("stale write: err = %v, want ErrStaleToken", err)
			case !stale && err != nil:
				t.Fatalf("stale write of a token-less lock: err = %v, want nil", err)
			case !stale:
				want = 3
			}
			got, err := gb.ReadGuarded(ctx, lb)
			if err != nil || got != want {
				t.Fatalf("read = %d, %v; want %d", got, err, want)
			}
			if err := b.Release(ctx, lb); err != nil && !(tt.expires() && errors.Is(err, ErrReleaseNoOp)) {
				t.Fatal(err)
			}
		})
	}
	if tested < 2 {
		t.Fatalf("%d algorithms with a guarded register tested, want the pg locks and etcd-mutex", tested)
	}
}
