package clients

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
)

// serverBinaries are the binaries each system's local cluster needs.
var serverBinaries = map[string][]string{
	cluster.Redis:     {"redis-server"},
	cluster.Postgres:  {"/usr/lib/postgresql/15/bin/postgres"},
	cluster.ZooKeeper: {"java", "/usr/share/java/zookeeper.jar"},
	cluster.Etcd:      {"etcd"},
}

// requireServer skips the test when the binaries system's servers need are
// not installed.
func requireServer(t *testing.T, system string) {
	t.Helper()
	for _, bin := range serverBinaries[system] {
		if filepath.IsAbs(bin) {
			if _, err := os.Stat(bin); err != nil {
				t.Skipf("%s is not installed: %v", bin, err)
			}
		} else if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed: %v", bin, err)
		}
	}
}

// clusters starts each system's local cluster once for the whole test binary;
// TestMain closes them all after the tests ran.
type clusters struct {
	mu       sync.Mutex
	byID     map[string][]Endpoint
	closers  []func() error
	closeErr error
}

// sharedClusters serves every test that does not break its cluster.
var sharedClusters = &clusters{byID: map[string][]Endpoint{}}

// newClusters returns the shared clusters.
func newClusters(*testing.T) *clusters { return sharedClusters }

// closeAll closes every cluster and network, newest first.
func (c *clusters) closeAll() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for i := len(c.closers) - 1; i >= 0; i-- {
		errs = append(errs, c.closers[i]())
	}
	c.closers = nil
	c.byID = map[string][]Endpoint{}
	return errors.Join(errs...)
}

// endpoints returns the nodes of a running cluster for spec, starting it on
// first use. It must be called from the test's own goroutine.
func (c *clusters) endpoints(t *testing.T, spec cluster.Spec) []Endpoint {
	t.Helper()
	id := spec.System + "/" + spec.Topology + "/" + fmt.Sprint(spec.Nodes)
	c.mu.Lock()
	defer c.mu.Unlock()
	if eps, ok := c.byID[id]; ok {
		return eps
	}
	requireServer(t, spec.System)
	nw, err := cluster.NewNetwork()
	if err != nil {
		t.Fatalf("network: %v", err)
	}
	c.closers = append(c.closers, nw.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := local.Start(ctx, spec, nw)
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	c.closers = append(c.closers, func() error {
		if err := cl.Close(); err != nil {
			return fmt.Errorf("close %s: %w", id, err)
		}
		return nil
	})
	var eps []Endpoint
	for _, n := range cl.Nodes() {
		eps = append(eps, Endpoint{Name: n.Name, Addr: n.Addr, Role: n.Role})
	}
	c.byID[id] = eps
	return eps
}

// newLocker builds worker's Locker of algorithm name on eps and closes it at
// the end of the test.
func newLocker(t *testing.T, name string, eps []Endpoint, worker int, options map[string]string) Locker {
	t.Helper()
	alg, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	l, err := alg.New(t.Context(), Target{
		Worker:    worker,
		Endpoints: eps,
		Clock:     wallClock{},
		Rand:      newTestRand(uint64(worker) + 1),
		Options:   options,
	})
	if err != nil {
		t.Fatalf("%s: new locker: %v", name, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("%s: close: %v", name, err)
		}
	})
	return l
}

// contract is what one algorithm promises.
type contract struct {
	name    string
	label   string // subtest name when it differs from name
	spec    cluster.Spec
	options map[string]string
	ttl     time.Duration
	token   bool // leases carry a token that increases across acquisitions
	until   bool // leases carry a client-side validity end
	// expires: the lock frees itself at the end of its validity rather than
	// by Release (the timeout locks).
	expires bool
	// ownedRelease: releasing a lease no longer held is ErrNotHeld; otherwise
	// Release does not check the owner, as the seed writes it: a stale
	// release frees whoever holds the lock now.
	ownedRelease bool
	// freeReleaseNotHeld: without an owner check, releasing a lock that is
	// free is still ErrNotHeld (the mutex locks report the unchanged flag).
	freeReleaseNotHeld bool
	// noTry: the library only waits and cannot be abandoned (zk.Lock): a
	// contended acquire ends at its deadline by closing its client
	// (ErrClientClosed), and the worker goes on with a new one.
	noTry bool
}

// respLockOptions runs the plain-socket Redis client of lockproto/testdata
// as the exec algorithm's client.
var respLockOptions = map[string]string{ExecCommandOption: "python3 ../lockproto/testdata/resp_lock.py"}

var (
	redisMasters        = cluster.Spec{System: cluster.Redis, Nodes: 3}
	redisPrimaryReplica = cluster.Spec{System: cluster.Redis, Topology: "primary-replica", Nodes: 2}
	postgresOne         = cluster.Spec{System: cluster.Postgres, Nodes: 1}
	zkOne               = cluster.Spec{System: cluster.ZooKeeper, Nodes: 1}
	etcdOne             = cluster.Spec{System: cluster.Etcd, Nodes: 1}
)

// slowMachine gives the quorum algorithms per-master timeouts that a live
// master meets even on a loaded test machine (their defaults, 50 ms and 5% of
// the ttl, are for production-like latency).
var slowMachine = map[string]map[string]string{
	"redlock": {"node-timeout": "500ms"},
	"redsync": {"timeout-factor": "0.1"},
}

var contracts = []contract{
	{name: "redis-single", spec: redisMasters, ttl: 5 * time.Second, until: true, ownedRelease: true},
	// exec: the plain-socket Redis client of lockproto/testdata, a program
	// of its own speaking the lock-client protocol.
	{name: ExecAlgorithm, spec: redisMasters, options: respLockOptions, ttl: 5 * time.Second, until: true, ownedRelease: true},
	{name: "redis-fenced", spec: redisMasters, ttl: 5 * time.Second, token: true, until: true, ownedRelease: true},
	{name: "redis-single", label: "redis-single/primary-replica", spec: redisPrimaryReplica, ttl: 5 * time.Second, until: true, ownedRelease: true},
	{name: "redis-fenced", label: "redis-fenced/primary-replica", spec: redisPrimaryReplica, ttl: 5 * time.Second, token: true, until: true, ownedRelease: true},
	{name: "redlock", spec: redisMasters, ttl: 5 * time.Second, options: slowMachine["redlock"], until: true, ownedRelease: true},
	{name: "redsync", spec: redisMasters, ttl: 5 * time.Second, options: slowMachine["redsync"], until: true, ownedRelease: true},
	{name: "redis-zadd-mutex", spec: redisMasters, ttl: 5 * time.Second, freeReleaseNotHeld: true},
	{name: "redis-zadd-timeout", spec: redisMasters, ttl: 300 * time.Millisecond, token: true, until: true, expires: true},
	{name: "redis-zadd-state", spec: redisMasters, ttl: 5 * time.Second},
	{name: "pg-mutex", spec: postgresOne, ttl: 5 * time.Second, freeReleaseNotHeld: true},
	{name: "pg-timeout", spec: postgresOne, ttl: 300 * time.Millisecond, token: true, until: true, expires: true},
	{name: "pg-state", spec: postgresOne, ttl: 5 * time.Second},
	{name: "pg-unique-row", spec: postgresOne, ttl: 5 * time.Second, token: true, ownedRelease: true},
	{name: "pg-advisory", spec: postgresOne, ttl: 5 * time.Second, ownedRelease: true},
	{name: "zk-recipe", spec: zkOne, ttl: 5 * time.Second, options: map[string]string{"wait": "100ms"}, token: true, ownedRelease: true},
	{name: "zk-lock", spec: zkOne, ttl: 5 * time.Second, ownedRelease: true, noTry: true},
	{name: "etcd-mutex", spec: etcdOne, ttl: 5 * time.Second, token: true, ownedRelease: true},
}

func TestContractCoversEveryAlgorithm(t *testing.T) {
	covered := map[string]bool{}
	for _, c := range contracts {
		covered[c.name] = true
	}
	for _, name := range Names() {
		if !covered[name] {
			t.Errorf("%s has no contract", name)
		}
	}
}

// TestContract runs every algorithm against a real server: acquire,
// contention, release, token order, validity.
func TestContract(t *testing.T) {
	cs := newClusters(t)
	for _, c := range contracts {
		label := c.label
		if label == "" {
			label = c.name
		}
		t.Run(label, func(t *testing.T) {
			eps := cs.endpoints(t, c.spec)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			a := newLocker(t, c.name, eps, 0, c.options)
			b := newLocker(t, c.name, eps, 1, c.options)
			key := "contract-" + c.name

			start := time.Now()
			la, err := a.Acquire(ctx, key, c.ttl)
			if err != nil {
				t.Fatalf("first acquire: %v", err)
			}
			checkLease(t, c, la, key, start, time.Now())

			// refused checks that l's acquire of the held key is refused,
			// and returns the Locker to go on with.
			refused := func(l Locker, worker int, what string) Locker {
				t.Helper()
				if !c.noTry {
					if _, err := l.Acquire(ctx, key, c.ttl); !errors.Is(err, ErrNotAcquired) {
						t.Fatalf("%s: err = %v, want ErrNotAcquired", what, err)
					}
					return l
				}
				wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
				if _, err := l.Acquire(wctx, key, c.ttl); !errors.Is(err, ErrClientClosed) || errors.Is(err, ErrNotAcquired) {
					t.Fatalf("%s: err = %v, want ErrClientClosed", what, err)
				}
				return newLocker(t, c.name, eps, worker, c.options)
			}
			b = refused(b, 1, "contended acquire")
			err = a.Release(ctx, la)
			switch {
			case c.expires && !errors.Is(err, ErrReleaseNoOp):
				t.Fatalf("release of a lock that frees itself: err = %v, want ErrReleaseNoOp", err)
			case !c.expires && err != nil:
				t.Fatalf("release: %v", err)
			}
			if c.expires {
				// Released or not, the lock is held until its validity ends.
				if time.Now().Before(la.Until) {
					if _, err := b.Acquire(ctx, key, c.ttl); !errors.Is(err, ErrNotAcquired) {
						t.Fatalf("acquire within the validity after release: err = %v, want ErrNotAcquired", err)
					}
				}
				time.Sleep(time.Until(la.Until) + 20*time.Millisecond)
			}
			start = time.Now()
			lb, err := b.Acquire(ctx, key, c.ttl)
			if err != nil {
				t.Fatalf("acquire after release: %v", err)
			}
			checkLease(t, c, lb, key, start, time.Now())
			if c.token && lb.Token <= la.Token {
				t.Fatalf("token %d after token %d: not increasing", lb.Token, la.Token)
			}

			err = a.Release(ctx, la)
			switch {
			case c.ownedRelease && !errors.Is(err, ErrNotHeld):
				t.Fatalf("second release of the first lease: err = %v, want ErrNotHeld", err)
			case c.expires && !errors.Is(err, ErrReleaseNoOp):
				t.Fatalf("release of a lock that frees itself: err = %v, want ErrReleaseNoOp", err)
			case !c.ownedRelease && !c.expires && err != nil:
				t.Fatalf("release without owner check: err = %v, want nil", err)
			}
			if c.expires {
				return
			}
			if !c.ownedRelease {
				// The stale release freed b's lock: a takes it at once.
				lc, err := a.Acquire(ctx, key, c.ttl)
				if err != nil {
					t.Fatalf("acquire after a stale release: %v", err)
				}
				if err := a.Release(ctx, lc); err != nil {
					t.Fatalf("release: %v", err)
				}
				err = a.Release(ctx, lc)
				if c.freeReleaseNotHeld && !errors.Is(err, ErrNotHeld) {
					t.Fatalf("release of a free lock: err = %v, want ErrNotHeld", err)
				}
				if !c.freeReleaseNotHeld && err != nil {
					t.Fatalf("unconditional release of a free lock: err = %v, want nil", err)
				}
				return
			}
			a2 := refused(a, 0, "acquire while the second lease is held")
			if err := b.Release(ctx, lb); err != nil {
				t.Fatalf("release of the second lease: %v", err)
			}
			lc, err := a2.Acquire(ctx, key, c.ttl)
			if err != nil {
				t.Fatalf("third acquire: %v", err)
			}
			if c.token && lc.Token <= lb.Token {
				t.Fatalf("token %d after token %d: not increasing", lc.Token, lb.Token)
			}
			if err := a2.Release(ctx, lc); err != nil {
				t.Fatalf("third release: %v", err)
			}
		})
	}
}

// checkLease checks a fresh lease, taken between start and end, against the
// contract.
func checkLease(t *testing.T, c contract, l Lease, key string, start, end time.Time) {
	t.Helper()
	if l.Key != key {
		t.Errorf("lease key %q, want %q", l.Key, key)
	}
	if c.token != (l.Token != 0) {
		t.Errorf("lease token %d; algorithm has tokens: %v", l.Token, c.token)
	}
	if !c.until {
		if !l.Until.IsZero() {
			t.Errorf("lease Until %v, want none", l.Until)
		}
		return
	}
	if !l.Until.After(start) || l.Until.After(end.Add(c.ttl)) {
		t.Errorf("lease Until is %v after the acquire started, want in (0, %v]", l.Until.Sub(start), end.Sub(start)+c.ttl)
	}
	if c.expires {
		return // a slot may be nearly over when it is taken
	}
	if l.Until.Before(end) {
		t.Errorf("lease already expired %v ago", end.Sub(l.Until))
	}
}

func TestMain(m *testing.M) {
	// Killed masters make go-redis log every refused dial.
	SilenceRedisLogs()
	code := m.Run()
	if err := sharedClusters.closeAll(); err != nil {
		fmt.Fprintln(os.Stderr, "clients: closing test clusters:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
