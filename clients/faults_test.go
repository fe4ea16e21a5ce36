package clients

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
)

// startOwnCluster starts a cluster only this test uses (it will break it),
// closed at cleanup.
func startOwnCluster(t *testing.T, spec cluster.Spec) (*local.Cluster, []Endpoint) {
	t.Helper()
	requireServer(t, spec.System)
	nw, err := cluster.NewNetwork()
	if err != nil {
		t.Fatalf("network: %v", err)
	}
	t.Cleanup(func() { nw.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := local.Start(ctx, spec, nw)
	if err != nil {
		t.Fatalf("start %s: %v", spec.System, err)
	}
	t.Cleanup(func() {
		if err := cl.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	var eps []Endpoint
	for _, n := range cl.Nodes() {
		eps = append(eps, Endpoint{Name: n.Name, Addr: n.Addr, Role: n.Role})
	}
	return cl, eps
}

// TestRedisLeasesExpire checks that a ttl lock frees itself after its ttl,
// that Until had ended by then, and that the late holder's release is
// ErrNotHeld.
func TestRedisLeasesExpire(t *testing.T) {
	cs := newClusters(t)
	for _, name := range []string{"redis-single", "redis-fenced", "redlock", "redsync"} {
		t.Run(name, func(t *testing.T) {
			eps := cs.endpoints(t, redisMasters)
			ctx := t.Context()
			// Per-master timeouts a live master meets on a loaded
			// machine yet small against this ttl (redsync's is ttl ×
			// timeout-factor).
			opts := map[string]map[string]string{
				"redlock": {"node-timeout": "100ms"},
				"redsync": {"timeout-factor": "0.3"},
			}[name]
			a := newLocker(t, name, eps, 0, opts)
			b := newLocker(t, name, eps, 1, opts)
			key := "expire-" + name
			const ttl = 300 * time.Millisecond
			la, err := a.Acquire(ctx, key, ttl)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			time.Sleep(ttl + 50*time.Millisecond)
			if time.Now().Before(la.Until) {
				t.Fatalf("Until %v still ahead after the ttl", time.Until(la.Until))
			}
			lb, err := b.Acquire(ctx, key, 5*time.Second)
			if err != nil {
				t.Fatalf("acquire after expiry: %v", err)
			}
			if err := a.Release(ctx, la); !errors.Is(err, ErrNotHeld) {
				t.Fatalf("release of the expired lease: err = %v, want ErrNotHeld", err)
			}
			if _, err := a.Acquire(ctx, key, ttl); !errors.Is(err, ErrNotAcquired) {
				t.Fatalf("the stale release freed b's lock: err = %v, want ErrNotAcquired", err)
			}
			if err := b.Release(ctx, lb); err != nil {
				t.Fatalf("release: %v", err)
			}
		})
	}
}

// TestAfterResponseHook checks the after-response pause point: Redlock's
// validity check sees a pause there, gives up and unlocks every master; the
// single-instance locks run the hook once per acquire.
func TestAfterResponseHook(t *testing.T) {
	cs := newClusters(t)
	eps := cs.endpoints(t, redisMasters)
	ctx := t.Context()

	t.Run("redlock pause longer than the ttl", func(t *testing.T) {
		a := newLocker(t, "redlock", eps, 0, testOptions["redlock"])
		b := newLocker(t, "redlock", eps, 1, testOptions["redlock"])
		const ttl = 100 * time.Millisecond
		a.(ResponseHooker).SetAfterResponse(func() { time.Sleep(ttl) })
		_, err := a.Acquire(ctx, "hook-redlock", ttl)
		if !errors.Is(err, ErrValidityExpired) || errors.Is(err, ErrNotAcquired) {
			t.Fatalf("acquire with a pause: err = %v, want ErrValidityExpired (indeterminate: a quorum held it until the unlock)", err)
		}
		// Every master was unlocked: b gets it at once, long before the ttl.
		lb, err := b.Acquire(ctx, "hook-redlock", 5*time.Second)
		if err != nil {
			t.Fatalf("acquire after the abandoned one: %v", err)
		}
		a.(ResponseHooker).SetAfterResponse(nil)
		if err := b.Release(ctx, lb); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Acquire(ctx, "hook-redlock", time.Second); err != nil {
			t.Fatalf("acquire without the hook: %v", err)
		}
	})

	for _, name := range []string{"redis-single", "redis-fenced", "redis-zadd-timeout"} {
		t.Run(name, func(t *testing.T) {
			l := newLocker(t, name, eps, 0, nil)
			calls := 0
			l.(ResponseHooker).SetAfterResponse(func() { calls++ })
			lease, err := l.Acquire(ctx, "hook-"+name, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if calls != 1 {
				t.Fatalf("hook ran %d times, want 1", calls)
			}
			if err := l.Release(ctx, lease); err != nil && !errors.Is(err, ErrReleaseNoOp) {
				t.Fatal(err)
			}
		})
	}
}

// TestRedlockQuorum kills masters: with 2 of 3 alive the lock is taken; with
// 1 of 3 it is definitely not (the dead masters refuse connections).
func TestRedlockQuorum(t *testing.T) {
	cl, eps := startOwnCluster(t, redisMasters)
	ctx := t.Context()
	if err := cl.Kill(ctx, eps[2].Name); err != nil {
		t.Fatal(err)
	}
	opts := testOptions
	for _, name := range []string{"redlock", "redsync"} {
		l := newLocker(t, name, eps, 0, opts[name])
		lease, err := l.Acquire(ctx, "quorum-"+name, 5*time.Second)
		if err != nil {
			t.Fatalf("%s with 2 of 3 masters: %v", name, err)
		}
		if err := l.Release(ctx, lease); err != nil {
			t.Fatalf("%s release with 2 of 3 masters: %v", name, err)
		}
	}
	if err := cl.Kill(ctx, eps[1].Name); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"redlock", "redsync"} {
		l := newLocker(t, name, eps, 1, opts[name])
		if _, err := l.Acquire(ctx, "quorum-"+name, 5*time.Second); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("%s with 1 of 3 masters: err = %v, want ErrNotAcquired", name, err)
		}
	}
}

// TestEtcdLeaseLost revokes a lock's lease behind the holder's back: its Lost
// channel closes and the lock is free. The token is the lock key's
// CreateRevision.
func TestEtcdLeaseLost(t *testing.T) {
	cs := newClusters(t)
	eps := cs.endpoints(t, etcdOne)
	ctx := t.Context()
	a := newLocker(t, "etcd-mutex", eps, 0, nil)
	b := newLocker(t, "etcd-mutex", eps, 1, nil)
	la, err := a.Acquire(ctx, "lost", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lost := a.(LeaseWatcher).Lost(la)
	select {
	case <-lost:
		t.Fatal("Lost closed while the lease is held")
	default:
	}

	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{eps[0].Addr}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	got, err := admin.Get(ctx, la.Owner)
	if err != nil || len(got.Kvs) != 1 {
		t.Fatalf("get lock key %s: %v, %v", la.Owner, got, err)
	}
	if uint64(got.Kvs[0].CreateRevision) != la.Token {
		t.Fatalf("token %d, lock key created at revision %d", la.Token, got.Kvs[0].CreateRevision)
	}
	if _, err := admin.Revoke(ctx, clientv3.LeaseID(got.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("Lost did not close after the lease was revoked")
	}
	lb, err := b.Acquire(ctx, "lost", 5*time.Second)
	if err != nil {
		t.Fatalf("acquire after the loss: %v", err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("release of the lost lease: err = %v, want ErrNotHeld", err)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.(LeaseWatcher).Lost(lb):
	default:
		t.Fatal("Lost of a released lease is not closed")
	}
}

// TestZKSessionLost checks the ZooKeeper recipe's session handling: the token
// is the node's czxid, closing a holder frees the lock at once (its ephemeral
// node goes with its session), and a holder cut off from the ensemble learns
// it lost the lease within about the session timeout.
func TestZKSessionLost(t *testing.T) {
	cl, eps := startOwnCluster(t, zkOne)
	ctx := t.Context()
	opts := map[string]string{"wait": "50ms", "session-timeout": "500ms"}

	a := newLocker(t, "zk-recipe", eps, 0, opts)
	b := newLocker(t, "zk-recipe", eps, 1, opts)
	la, err := a.Acquire(ctx, "lost", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := zk.Connect([]string{eps[0].Addr}, time.Second, zk.WithLogger(zkLogger{new(atomic.Int64)}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, stat, err := conn.Get(la.Owner)
	if err != nil {
		t.Fatalf("get %s: %v", la.Owner, err)
	}
	if uint64(stat.Czxid) != la.Token {
		t.Fatalf("token %d, node czxid %d", la.Token, stat.Czxid)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	lb, err := b.Acquire(ctx, "lost", time.Second)
	if err != nil {
		t.Fatalf("acquire after the holder closed: %v", err)
	}
	lost := b.(LeaseWatcher).Lost(lb)
	select {
	case <-lost:
		t.Fatal("Lost closed while the lease is held")
	default:
	}
	if err := cl.Kill(ctx, eps[0].Name); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("Lost did not close after the ensemble went away")
	}
	if err := b.Release(ctx, lb); err == nil {
		t.Fatal("release with the ensemble down succeeded")
	}
}

// TestRedlockValidityWithSlowMaster delays the last master's replies and
// checks that the lease is valid until t0 + ttl − drift, as the seed's
// t1 + (ttl − (t1 − t0) − drift) gives: the time spent acquiring is counted
// once, not twice. The service's own expiry is t0 + ttl.
func TestRedlockValidityWithSlowMaster(t *testing.T) {
	cs := newClusters(t)
	eps := cs.endpoints(t, redisMasters)
	nw, err := cluster.NewNetwork(linknet.WithProxies()) // latency needs proxies
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nw.Close() })
	slow := slices.Clone(eps)
	slow[2].Addr, err = nw.Link("w0->"+eps[2].Name, eps[2].Addr)
	if err != nil {
		t.Fatal(err)
	}
	const delay = 300 * time.Millisecond
	if err := nw.Latency([]string{"w0->" + eps[2].Name}, delay, 0); err != nil {
		t.Fatal(err)
	}
	l := newLocker(t, "redlock", slow, 0, map[string]string{"node-timeout": "2s"})
	const ttl = 5 * time.Second
	drift := redlockFixedDrift + ttl/redlockDriftPerTTL
	start := time.Now()
	lease, err := l.Acquire(t.Context(), "validity-redlock", ttl)
	end := time.Now()
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	t.Cleanup(func() { _ = l.Release(context.Background(), lease) })
	if end.Sub(start) < delay {
		t.Fatalf("the acquire took %v: the delay of %v was not injected", end.Sub(start), delay)
	}
	lo, hi := start.Add(ttl-drift), end.Add(ttl-drift)
	if lease.Until.Before(lo) || lease.Until.After(hi) {
		t.Fatalf("Until is %v after the start, want t0 + ttl − drift, between %v and %v",
			lease.Until.Sub(start), lo.Sub(start), hi.Sub(start))
	}
	if lease.Expires.Before(start.Add(ttl)) || lease.Expires.After(end.Add(ttl)) {
		t.Fatalf("Expires is %v after the start, want t0 + ttl", lease.Expires.Sub(start))
	}
}

// TestZKLeaseLostOnDisconnect resets the holder's connection and checks that
// its lease is lost at once, while its session (and so its node) still lives
// on the server: from the disconnect on, the client cannot be sure the server
// has not already used up most of the session timeout (docs/history.md §4.1).
func TestZKLeaseLostOnDisconnect(t *testing.T) {
	eps, via, nw, link := zkThroughProxy(t, "w0")
	ctx := t.Context()
	const session = 20 * time.Second
	a := newLocker(t, "zk-recipe", via, 0, map[string]string{"wait": "50ms", "session-timeout": session.String()})
	la, err := a.Acquire(ctx, "disconnect", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lost := a.(LeaseWatcher).Lost(la)
	if err := nw.Reset(link); err != nil {
		t.Fatal(err)
	}
	// The reset takes effect at the next packet; send one rather than wait
	// for the next ping (a third of the session timeout).
	go func() { _, _, _ = a.(*ZKRecipe).conn.Exists("/") }()
	// The old rule gave up a full session timeout after the disconnect.
	const bound = session * 3 / 4
	select {
	case <-lost:
	case <-time.After(bound):
		t.Fatalf("Lost did not close within %v of the disconnect", bound)
	}
	observer, _, err := zk.Connect([]string{eps[0].Addr}, time.Second, zk.WithLogger(zkLogger{new(atomic.Int64)}))
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	if ok, _, err := observer.Exists(la.Owner); err != nil || !ok {
		t.Fatalf("node %s: exists %v, %v; want the session alive when the lease was given up", la.Owner, ok, err)
	}
	if err := nw.Heal(link); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.(LeaseWatcher).Lost(la):
	default:
		t.Fatal("a lost lease came back")
	}
}
