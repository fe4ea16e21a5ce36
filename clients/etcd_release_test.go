package clients

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// etcdAdmin is a plain etcd client on the first endpoint, for looking at
// and meddling with the lock keys behind the Lockers' backs.
func etcdAdmin(t *testing.T, eps []Endpoint) *clientv3.Client {
	t.Helper()
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{eps[0].Addr}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return admin
}

// etcdLockLease returns the lease the lock key of l is bound to.
func etcdLockLease(t *testing.T, ctx context.Context, admin *clientv3.Client, l Lease) clientv3.LeaseID {
	t.Helper()
	got, err := admin.Get(ctx, l.Owner)
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("get lock key %s: %v, %v", l.Owner, got, err)
	}
	if uint64(got.Kvs[0].CreateRevision) != l.Token {
		t.Fatalf("token %d, lock key created at revision %d", l.Token, got.Kvs[0].CreateRevision)
	}
	return clientv3.LeaseID(got.Kvs[0].Lease)
}

// recordedRelease releases l through the recording wrapper and returns the
// release's completion.
func recordedRelease(t *testing.T, ctx context.Context, l Locker, lease Lease) (history.Op, error) {
	t.Helper()
	rec := history.NewRecorder()
	r := &Recorded{Locker: l, Rec: rec, Proc: NewProcess(0, 1)}
	err := r.Release(ctx, lease)
	h := rec.History()
	if len(h) != 2 || h[0].Type != history.Invoke || h[1].F != history.FRelease {
		t.Fatalf("history %v, want a release invoke and its completion", h)
	}
	return h[1], err
}

// TestEtcdReleaseFreesTheLock releases a held etcd mutex, the users' way
// (Mutex.Unlock, then Session.Close: the default) and with the careful
// transaction (release: txn), for a lock taken with TryLock and one taken
// with Lock: the release is recorded ok, the lock key and its lease are
// gone, and another worker's TryLock takes the lock right after. A second
// release of the same lease is ErrNotHeld.
func TestEtcdReleaseFreesTheLock(t *testing.T) {
	cs := newClusters(t)
	for _, tc := range []struct {
		name    string
		options map[string]string
		wait    time.Duration
	}{
		{name: "unlock"},
		{name: "unlock/lock-wait", wait: time.Second},
		{name: "txn", options: map[string]string{"release": EtcdReleaseTxn}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := cs.endpoints(t, etcdOne)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			admin := etcdAdmin(t, eps)
			a := newLocker(t, "etcd-mutex", eps, 0, tc.options)
			b := newLocker(t, "etcd-mutex", eps, 1, tc.options)
			key := "release-" + tc.name

			var la Lease
			var err error
			if tc.wait > 0 {
				la, err = a.(Waiter).AcquireWait(ctx, key, 30*time.Second, tc.wait)
			} else {
				la, err = a.Acquire(ctx, key, 30*time.Second)
			}
			if err != nil {
				t.Fatal(err)
			}
			lease := etcdLockLease(t, ctx, admin, la)
			if _, err := b.Acquire(ctx, key, 30*time.Second); !errors.Is(err, ErrNotAcquired) {
				t.Fatalf("contended acquire: err = %v, want ErrNotAcquired", err)
			}
			done, err := recordedRelease(t, ctx, a, la)
			if err != nil || done.Type != history.OK {
				t.Fatalf("release: %v, recorded %s", err, done.Type)
			}
			if got, err := admin.Get(ctx, la.Owner); err != nil || len(got.Kvs) != 0 {
				t.Fatalf("lock key %s after the release: %v, %v", la.Owner, got, err)
			}
			if ttl, err := admin.TimeToLive(ctx, lease); err != nil || ttl.TTL != -1 {
				t.Fatalf("lease %x after the release: %v, %v; want revoked (TTL -1)", lease, ttl, err)
			}
			select {
			case <-a.(LeaseWatcher).Lost(la):
			default:
				t.Fatal("Lost of a released lease is not closed")
			}
			lb, err := b.Acquire(ctx, key, 30*time.Second)
			if err != nil {
				t.Fatalf("acquire right after the release: %v", err)
			}
			if err := a.Release(ctx, la); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("second release of the first lease: err = %v, want ErrNotHeld", err)
			}
			if err := b.Release(ctx, lb); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEtcdReleaseAfterTheLeaseEnded releases, the users' way, a lease that
// etcd no longer has. Mutex.Unlock then deletes nothing (the lock key went
// with the lease) and says nil, and the lock may already be another
// worker's: the release must not be recorded as one that freed the lock.
// When the holder's session had ended before the release (it learnt the
// lease is gone), the release is ErrNotHeld, recorded fail, and the new
// holder's key is untouched; when the lease was revoked behind a session
// that has not noticed yet, the outcome is indeterminate (info).
func TestEtcdReleaseAfterTheLeaseEnded(t *testing.T) {
	cs := newClusters(t)
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		// noticed: wait for the session to end before the release.
		noticed bool
		want    history.Type
	}{
		// A 1 s lease is kept alive every 1/3 s: the session hears of the
		// revoke at once.
		{name: "noticed", ttl: time.Second, noticed: true, want: history.Fail},
		// A 30 s lease is kept alive every 10 s: the release comes first.
		{name: "unnoticed", ttl: 30 * time.Second, want: history.Info},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := cs.endpoints(t, etcdOne)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			admin := etcdAdmin(t, eps)
			a := newLocker(t, "etcd-mutex", eps, 0, nil)
			b := newLocker(t, "etcd-mutex", eps, 1, nil)
			c := newLocker(t, "etcd-mutex", eps, 2, nil)
			key := "release-lease-ended-" + tc.name

			la, err := a.Acquire(ctx, key, tc.ttl)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := admin.Revoke(ctx, etcdLockLease(t, ctx, admin, la)); err != nil {
				t.Fatal(err)
			}
			lost := a.(LeaseWatcher).Lost(la)
			if tc.noticed {
				select {
				case <-lost:
				case <-time.After(10 * time.Second):
					t.Fatal("the session did not end after its lease was revoked")
				}
			}
			lb, err := b.Acquire(ctx, key, 30*time.Second)
			if err != nil {
				t.Fatalf("acquire after the revoke: %v", err)
			}
			if !tc.noticed {
				select {
				case <-lost:
					t.Skip("the session noticed the revoke before the release; the case is not reached")
				default:
				}
			}
			done, err := recordedRelease(t, ctx, a, la)
			if done.Type != tc.want {
				t.Fatalf("release recorded %s (err %v), want %s", done.Type, err, tc.want)
			}
			if tc.want == history.Fail && !errors.Is(err, ErrNotHeld) {
				t.Fatalf("release: err = %v, want ErrNotHeld", err)
			}
			// The new holder's key is untouched: the lock is still b's.
			etcdLockLease(t, ctx, admin, lb)
			if _, err := c.Acquire(ctx, key, 30*time.Second); !errors.Is(err, ErrNotAcquired) {
				t.Fatalf("acquire while b holds the lock: err = %v, want ErrNotAcquired", err)
			}
			if err := b.Release(ctx, lb); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEtcdReleaseAfterIsolation lets a holder's lease really expire: its
// client is cut off from etcd for longer than the 1 s lease, so its
// keep-alives stop, the cluster expires the lease and deletes the lock key,
// and another worker takes the lock. Healed, the holder releases the users'
// way: the release freed nothing and is recorded fail (ErrNotHeld), and the
// new holder keeps the lock.
func TestEtcdReleaseAfterIsolation(t *testing.T) {
	cs := newClusters(t)
	eps := cs.endpoints(t, etcdOne)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	nw, err := cluster.NewNetwork()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	link := linknet.Name("isolated-client", eps[0].Name)
	addr, err := nw.Link(link, eps[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	a := newLocker(t, "etcd-mutex", []Endpoint{{Name: eps[0].Name, Addr: addr}}, 0, nil)
	b := newLocker(t, "etcd-mutex", eps, 1, nil)
	c := newLocker(t, "etcd-mutex", eps, 2, nil)
	admin := etcdAdmin(t, eps)
	key := "release-isolated"

	la, err := a.Acquire(ctx, key, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := nw.Cut(link); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.(LeaseWatcher).Lost(la):
	case <-time.After(10 * time.Second):
		t.Fatal("the cut-off session did not end")
	}
	var lb Lease
	for {
		lb, err = b.Acquire(ctx, key, 30*time.Second)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNotAcquired) || ctx.Err() != nil {
			t.Fatalf("acquire after the holder's lease expired: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := nw.Heal(link); err != nil {
		t.Fatal(err)
	}
	// A cut holds the connection open, as a cable cut does: what a's
	// client sent meanwhile is retransmitted with TCP's backoff after the
	// heal. Wait until the connection answers again, so that the release
	// is classified from what etcd answers, not from a request still
	// waiting for its retransmission (which would rightly leave the
	// outcome unknown).
	for {
		gctx, gcancel := context.WithTimeout(ctx, time.Second)
		_, gerr := a.(*EtcdMutex).client.Get(gctx, "connection-check")
		gcancel()
		if gerr == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("a's connection did not answer after the heal: %v", gerr)
		}
	}
	done, err := recordedRelease(t, ctx, a, la)
	if done.Type != history.Fail || !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release of the expired lease: err = %v, recorded %s; want ErrNotHeld, fail", err, done.Type)
	}
	etcdLockLease(t, ctx, admin, lb)
	if _, err := c.Acquire(ctx, key, 30*time.Second); !errors.Is(err, ErrNotAcquired) {
		t.Fatalf("acquire while b holds the lock: err = %v, want ErrNotAcquired", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
}

// TestEtcdReleaseOption checks the values of etcd-mutex's option release.
func TestEtcdReleaseOption(t *testing.T) {
	for _, v := range []string{EtcdReleaseUnlock, EtcdReleaseTxn} {
		l, err := NewEtcdMutex(t.Context(), Target{Endpoints: []Endpoint{{Addr: "127.0.0.1:1"}}, Options: map[string]string{"release": v}})
		if err != nil {
			t.Fatalf("release=%s: %v", v, err)
		}
		if got := l.(*EtcdMutex).release; got != v {
			t.Errorf("release=%s: the Locker releases with %q", v, got)
		}
		l.Close()
	}
	if _, err := NewEtcdMutex(t.Context(), Target{Endpoints: []Endpoint{{Addr: "127.0.0.1:1"}}, Options: map[string]string{"release": "delete"}}); !errors.Is(err, ErrBadOption) {
		t.Fatalf("release=delete: err = %v, want ErrBadOption", err)
	}
}
