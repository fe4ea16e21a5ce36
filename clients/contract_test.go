package clients

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	cluster.MariaDB:   {"/usr/sbin/mariadbd", "mariadb-install-db"},
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

// wallClock is a worker clock without skew.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// respLockOptions runs the plain-socket Redis client of lockproto/testdata
// as the exec algorithm's client.
var respLockOptions = map[string]string{ExecCommandOption: "python3 ../lockproto/testdata/resp_lock.py"}

var (
	redisMasters        = cluster.Spec{System: cluster.Redis, Nodes: 3}
	redisPrimaryReplica = cluster.Spec{System: cluster.Redis, Topology: "primary-replica", Nodes: 2}
	postgresOne         = cluster.Spec{System: cluster.Postgres, Nodes: 1}
	zkOne               = cluster.Spec{System: cluster.ZooKeeper, Nodes: 1}
	etcdOne             = cluster.Spec{System: cluster.Etcd, Nodes: 1}
	mariadbOne          = cluster.Spec{System: cluster.MariaDB, Nodes: 1}
	redisCluster        = cluster.Spec{System: cluster.Redis, Topology: cluster.TopologyCluster, Nodes: cluster.ClusterMasters}
)

// algorithmSpecs are the clusters of the algorithms that run on another
// topology than their system's test cluster.
var algorithmSpecs = map[string]cluster.Spec{
	"redsync-cluster": redisCluster,
}

// systemSpecs is the cluster the algorithms of each system are tested on.
var systemSpecs = map[string]cluster.Spec{
	cluster.Redis:     redisMasters,
	cluster.Postgres:  postgresOne,
	cluster.ZooKeeper: zkOne,
	cluster.Etcd:      etcdOne,
	cluster.MariaDB:   mariadbOne,
}

// moreSpecs are the clusters, beyond their system's, that an algorithm's
// contract is also tested on.
var moreSpecs = map[string][]cluster.Spec{
	"redis-single": {redisPrimaryReplica, redisCluster},
	"redis-fenced": {redisPrimaryReplica},
}

// testOptions are the options an algorithm is tested with where its
// defaults do not suit a loaded test machine: the quorum algorithms'
// per-master timeouts (their defaults, 50 ms and 5% of the ttl, are for
// production-like latency), and zk-recipe's wait for its predecessor.
var testOptions = map[string]map[string]string{
	"redlock":         {"node-timeout": "500ms"},
	"redsync":         {"timeout-factor": "0.1"},
	"redsync-cluster": {"timeout-factor": "0.1"},
	"zk-recipe":       {"wait": "100ms"},
}

// clientFixture is the external client the tests run for an algorithm
// that leaves its facts to its client (Algorithm.Lease nil, capabilities
// ByClient): the system it speaks to, its options, and the lease
// semantics and capabilities it has.
type clientFixture struct {
	spec    cluster.Spec
	options map[string]string
	lease   LeaseSemantics
	caps    Capabilities
}

// clientFixtures are the clients of the algorithms that leave their facts
// to the client: for exec, lockproto/testdata/resp_lock.py, a plain-socket
// Redis client (SET NX PX, a checked release) that claims the ability wait.
var clientFixtures = map[string]clientFixture{
	ExecAlgorithm: {spec: redisMasters, options: respLockOptions,
		lease: LeaseSemantics{Until: true, Detail: pxDetail},
		caps:  Capabilities{CapWait: With, CapInCall: With}},
}

// algorithmCase is one declared algorithm as the tests run it: its
// declaration, the cluster and options it runs with, and the lease
// semantics and capabilities it must show (its declaration's, or its
// client fixture's).
type algorithmCase struct {
	Algorithm
	label   string // subtest name
	spec    cluster.Spec
	options map[string]string
	lease   LeaseSemantics
	caps    Capabilities
	// ttl is the ttl of the lease tests, and server reads the lease from
	// the server (leaseServers), nil when the tests do not know how.
	ttl    time.Duration
	server serverLease
}

// algorithmCases returns one case per declared algorithm on its system's
// cluster and, with more, one per cluster of moreSpecs besides.
func algorithmCases(t *testing.T, more bool) []algorithmCase {
	t.Helper()
	var cases []algorithmCase
	for _, a := range Algorithms() {
		c := caseOf(t, a.Name)
		cases = append(cases, c)
		if !more {
			continue
		}
		for _, spec := range moreSpecs[a.Name] {
			m := c
			m.spec, m.label = spec, a.Name+"/"+spec.Topology
			cases = append(cases, m)
		}
	}
	return cases
}

// caseOf returns the case of the algorithm called name on its system's
// cluster.
func caseOf(t *testing.T, name string) algorithmCase {
	t.Helper()
	a, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	c := algorithmCase{Algorithm: a, label: a.Name, spec: systemSpecs[a.System], options: map[string]string{}, caps: a.Capabilities, ttl: 5 * time.Second}
	if a.Lease != nil {
		c.lease = *a.Lease
	}
	if s, ok := algorithmSpecs[a.Name]; ok {
		c.spec = s
	}
	if f, ok := clientFixtures[a.Name]; ok {
		c.spec, c.lease, c.caps = f.spec, f.lease, f.caps
		maps.Copy(c.options, f.options)
	}
	if a.Lease == nil && clientFixtures[a.Name].caps == nil {
		t.Fatalf("%s leaves its facts to its client and has no client fixture", a.Name)
	}
	if c.spec.System == "" {
		t.Fatalf("%s: no test cluster for system %q", a.Name, a.System)
	}
	maps.Copy(c.options, testOptions[a.Name])
	if s, ok := leaseServers[a.Name]; ok {
		c.ttl, c.server = s.ttl, s.read
		maps.Copy(c.options, s.options)
	}
	return c
}

// expires reports whether the lock frees itself at the end of its validity
// rather than by Release (the timeout locks).
func (c algorithmCase) expires() bool { return c.lease.Release == ReleaseDoesNothing }

// TestCapabilitiesAreTheDeclared builds each algorithm's Locker and checks
// that it has exactly the capabilities its declaration gives it (or, for
// an algorithm whose client decides, that its client fixture has), by the
// interfaces it implements and the abilities its client claims.
func TestCapabilitiesAreTheDeclared(t *testing.T) {
	cs := newClusters(t)
	for _, c := range algorithmCases(t, false) {
		t.Run(c.label, func(t *testing.T) {
			l := newLocker(t, c.Name, cs.endpoints(t, c.spec), 0, c.options)
			for _, cp := range AllCapabilities() {
				if got, want := Has(l, cp), c.caps[cp] == With; got != want {
					t.Errorf("capability %s: has %v, declared %v", cp, got, want)
				}
			}
		})
	}
}

// TestContract runs every algorithm against a real server: acquire,
// contention, release, token order, validity, each as its declared lease
// semantics say.
func TestContract(t *testing.T) {
	cs := newClusters(t)
	for _, c := range algorithmCases(t, true) {
		t.Run(c.label, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			r := &contractRun{t: t, c: c, eps: cs.endpoints(t, c.spec), ctx: ctx, key: "contract-" + c.Name, ttl: 5 * time.Second}
			if c.expires() {
				// A lock that frees itself is taken again once it did.
				r.ttl = 300 * time.Millisecond
			}
			a := newLocker(t, c.Name, r.eps, 0, c.options)
			b := newLocker(t, c.Name, r.eps, 1, c.options)
			la := r.acquire(a, "first acquire")
			b = r.refused(b, 1, "contended acquire")
			r.firstRelease(a, b, la)
			lb := r.acquire(b, "acquire after release")
			r.tokenAfter(lb, la)
			r.staleRelease(a, la)
			switch {
			case c.expires():
			case c.lease.Release != ReleaseChecksOwner:
				r.staleReleaseFreed(a)
			default:
				r.nextTurn(a, b, lb)
			}
		})
	}
}

// contractRun is one algorithm's run of TestContract: two workers' Lockers
// on one key.
type contractRun struct {
	t   *testing.T
	c   algorithmCase
	eps []Endpoint
	ctx context.Context
	key string
	ttl time.Duration
}

// acquire takes the key with l, which must succeed, and checks the lease.
func (r *contractRun) acquire(l Locker, what string) Lease {
	r.t.Helper()
	start := time.Now()
	lease, err := l.Acquire(r.ctx, r.key, r.ttl)
	if err != nil {
		r.t.Fatalf("%s: %v", what, err)
	}
	checkLease(r.t, r.c, r.ttl, lease, r.key, start, time.Now())
	return lease
}

// tokenAfter fails unless later's token is above earlier's, for an
// algorithm that has tokens.
func (r *contractRun) tokenAfter(later, earlier Lease) {
	r.t.Helper()
	if r.c.lease.Token != "" && later.Token <= earlier.Token {
		r.t.Fatalf("token %d after token %d: not increasing", later.Token, earlier.Token)
	}
}

// refused checks that l's acquire of the held key is refused, and returns
// the Locker to go on with (a new one when giving up closed l's client).
func (r *contractRun) refused(l Locker, worker int, what string) Locker {
	r.t.Helper()
	if r.c.lease.GiveUp != GiveUpClosesClient {
		if _, err := l.Acquire(r.ctx, r.key, r.ttl); !errors.Is(err, ErrNotAcquired) {
			r.t.Fatalf("%s: err = %v, want ErrNotAcquired", what, err)
		}
		return l
	}
	wctx, cancel := context.WithTimeout(r.ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(wctx, r.key, r.ttl); !errors.Is(err, ErrClientClosed) || errors.Is(err, ErrNotAcquired) {
		r.t.Fatalf("%s: err = %v, want ErrClientClosed", what, err)
	}
	return newLocker(r.t, r.c.Name, r.eps, worker, r.c.options)
}

// firstRelease releases a's lease la, and for a lock that frees itself
// checks that b cannot take it within its validity, then waits it out.
func (r *contractRun) firstRelease(a, b Locker, la Lease) {
	r.t.Helper()
	err := a.Release(r.ctx, la)
	switch {
	case r.c.expires() && !errors.Is(err, ErrReleaseNoOp):
		r.t.Fatalf("release of a lock that frees itself: err = %v, want ErrReleaseNoOp", err)
	case !r.c.expires() && err != nil:
		r.t.Fatalf("release: %v", err)
	}
	if !r.c.expires() {
		return
	}
	// Released or not, the lock is held until its validity ends.
	if time.Now().Before(la.Until) {
		if _, err := b.Acquire(r.ctx, r.key, r.ttl); !errors.Is(err, ErrNotAcquired) {
			r.t.Fatalf("acquire within the validity after release: err = %v, want ErrNotAcquired", err)
		}
	}
	time.Sleep(time.Until(la.Until) + 20*time.Millisecond)
}

// staleRelease releases a's first lease la again, after b took the key.
func (r *contractRun) staleRelease(a Locker, la Lease) {
	r.t.Helper()
	ownedRelease := r.c.lease.Release == ReleaseChecksOwner
	err := a.Release(r.ctx, la)
	switch {
	case ownedRelease && !errors.Is(err, ErrNotHeld):
		r.t.Fatalf("second release of the first lease: err = %v, want ErrNotHeld", err)
	case r.c.expires() && !errors.Is(err, ErrReleaseNoOp):
		r.t.Fatalf("release of a lock that frees itself: err = %v, want ErrReleaseNoOp", err)
	case !ownedRelease && !r.c.expires() && err != nil:
		r.t.Fatalf("release without owner check: err = %v, want nil", err)
	}
}

// staleReleaseFreed checks, for a release without owner check, that the
// stale release freed b's lock: a takes it at once, and a release of the
// free lock ends as the lease semantics say.
func (r *contractRun) staleReleaseFreed(a Locker) {
	r.t.Helper()
	lc, err := a.Acquire(r.ctx, r.key, r.ttl)
	if err != nil {
		r.t.Fatalf("acquire after a stale release: %v", err)
	}
	if err := a.Release(r.ctx, lc); err != nil {
		r.t.Fatalf("release: %v", err)
	}
	err = a.Release(r.ctx, lc)
	if r.c.lease.Release == ReleaseFreesAnyHolderRefusesFree && !errors.Is(err, ErrNotHeld) {
		r.t.Fatalf("release of a free lock: err = %v, want ErrNotHeld", err)
	}
	if r.c.lease.Release != ReleaseFreesAnyHolderRefusesFree && err != nil {
		r.t.Fatalf("unconditional release of a free lock: err = %v, want nil", err)
	}
}

// nextTurn checks, for a release with owner check, that b's lease lb still
// holds the key against a, and that a takes it, with a higher token, once b
// released it.
func (r *contractRun) nextTurn(a, b Locker, lb Lease) {
	r.t.Helper()
	a2 := r.refused(a, 0, "acquire while the second lease is held")
	if err := b.Release(r.ctx, lb); err != nil {
		r.t.Fatalf("release of the second lease: %v", err)
	}
	lc, err := a2.Acquire(r.ctx, r.key, r.ttl)
	if err != nil {
		r.t.Fatalf("third acquire: %v", err)
	}
	r.tokenAfter(lc, lb)
	if err := a2.Release(r.ctx, lc); err != nil {
		r.t.Fatalf("third release: %v", err)
	}
}

// checkLease checks a fresh lease of ttl, taken between start and end,
// against the case's lease semantics.
func checkLease(t *testing.T, c algorithmCase, ttl time.Duration, l Lease, key string, start, end time.Time) {
	t.Helper()
	if l.Key != key {
		t.Errorf("lease key %q, want %q", l.Key, key)
	}
	if hasToken := c.lease.Token != ""; hasToken != (l.Token != 0) {
		t.Errorf("lease token %d; algorithm has tokens: %v", l.Token, hasToken)
	}
	if !c.lease.Until {
		if !l.Until.IsZero() {
			t.Errorf("lease Until %v, want none", l.Until)
		}
		return
	}
	if !l.Until.After(start) || l.Until.After(end.Add(ttl)) {
		t.Errorf("lease Until is %v after the acquire started, want in (0, %v]", l.Until.Sub(start), end.Sub(start)+ttl)
	}
	if c.expires() {
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
