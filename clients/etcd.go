package clients

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// DefaultEtcdTimeout bounds each etcd request of etcd-mutex (option
// "timeout").
const DefaultEtcdTimeout = time.Second

// etcdResourcePrefix is the prefix of the guarded registers:
// /resource/<key>.
const etcdResourcePrefix = "/resource/"

// etcdLocksPrefix is the prefix of every lock's keys: /locks/<key>/<lease>.
const etcdLocksPrefix = "/locks/"

// The values of etcd-mutex's option "release".
const (
	// EtcdReleaseUnlock releases as the library's users do: Mutex.Unlock,
	// then Session.Close (the default).
	EtcdReleaseUnlock = "unlock"
	// EtcdReleaseTxn releases with our own careful transaction: delete the
	// lock key only if its CreateRevision is still the token, then revoke
	// the lease.
	EtcdReleaseTxn = "txn"
)

// EtcdMutex is etcd's concurrency.Mutex. Each Acquire grants a lease of the
// ttl rounded up to whole seconds (at least 1 s), opens a Session on it (the
// client keeps the lease alive from then on) and calls TryLock once:
// ErrLocked is ErrNotAcquired. A failed acquire revokes its lease; when the
// revoke succeeded nothing is left behind and the error is ErrNotAcquired,
// otherwise it is indeterminate.
//
// The token is the lock key's CreateRevision (the revision of the response
// that created it: the key is new for each Acquire's lease). Leases have no
// Until: the lock lasts as long as the session. The service frees it when the
// lease expires, at the earliest the granted TTL after the grant was asked
// for (Lease.Expires), and Close revokes the leases (Session). As a
// LeaseWatcher a lease is lost when its session ends (Session.Done: the
// client saw its lease expire, or heard nothing for a TTL).
//
// Release, by default (option "release" = "unlock"), is what the library's
// users write: Mutex.Unlock(ctx) on the Mutex that acquired, then
// Session.Close() on its session. Unlock deletes the Mutex's own key
// unconditionally and returns only the delete's error: it says nil also
// when the key was already gone (its lease expired, and another worker may
// hold the lock by now under its own key, which Unlock does not touch).
// Close stops the keep-alive and revokes the lease (bounded by the TTL),
// returning the revoke's error (ErrLeaseNotFound when the lease was gone).
// The outcome is recorded by what etcd did, not by what Unlock says:
//   - Close succeeded: the lease lived until the revoke, so the key (bound
//     to it, deleted only with it or by us) was there until our delete or
//     our revoke removed it: the release freed the lock (nil, recorded ok),
//     whatever Unlock returned.
//   - the key was gone before the Unlock: the release freed nothing
//     (ErrNotHeld, recorded fail). This is known only from a Get of the key
//     sent when the Locker's session had already ended (Session.Done closed)
//     before the Unlock. That Get is ours, not the users': it only
//     classifies the outcome for the history, changes nothing in etcd nor
//     in the Unlock and Close that follow, and is not sent while the
//     session lives.
//   - otherwise (Close failed, the key was there or its state is unknown):
//     the lease may have ended before or after the delete, so the release
//     may or may not have freed the lock: indeterminate (recorded info).
//
// A lease this Locker does not hold (released already, or never its own)
// has no Mutex to unlock: ErrNotHeld, and nothing is sent.
//
// With "release" = "txn" Release is our own careful transaction instead: it
// deletes the lock key only if its CreateRevision is still the token
// (ErrNotHeld when not), then revokes the lease, also when the delete failed,
// so that an unknown release frees the lock within the lease's TTL.
//
// Options: "timeout" (per request, default DefaultEtcdTimeout; Session.Close
// has the library's own bound, the lease TTL), "release" ("unlock", the
// default, or "txn").
type EtcdMutex struct {
	stepHook
	client  *clientv3.Client
	timeout time.Duration
	release string          // EtcdReleaseUnlock or EtcdReleaseTxn
	life    context.Context // the sessions' keep-alives live as long as the Locker
	stop    context.CancelFunc

	mu    sync.Mutex
	holds map[string]etcdHold // by lock key
}

// etcdHold is one lock this Locker holds: the Mutex that took it and the
// Session its lease lives in.
type etcdHold struct {
	s *concurrency.Session
	m *concurrency.Mutex
}

var (
	_ Locker          = (*EtcdMutex)(nil)
	_ Renewer         = (*EtcdMutex)(nil)
	_ LeaseWatcher    = (*EtcdMutex)(nil)
	_ GuardedResource = (*EtcdMutex)(nil)
)

// NewEtcdMutex is the etcd-mutex Factory; the client talks to every endpoint
// that is not a replica or sentinel and never looks for other members.
func NewEtcdMutex(ctx context.Context, t Target) (Locker, error) {
	const name = "etcd-mutex"
	opts, err := readOptions(name, t.Options, etcdOptions, false)
	if err != nil {
		return nil, err
	}
	timeout, release := opts.duration(optEtcdTimeout), opts.text(optEtcdRelease)
	peers, err := peerEndpoints(name, t.Endpoints)
	if err != nil {
		return nil, err
	}
	var eps []string
	for _, p := range peers {
		eps = append(eps, p.Addr)
	}
	cfg := clientv3.Config{
		Endpoints:   eps,
		DialTimeout: timeout,
		Logger:      zap.NewNop(),
	}
	if !t.TCP.IsZero() {
		cfg.DialOptions = []grpc.DialOption{grpc.WithContextDialer(grpcDialer(t.TCP))}
	}
	client, err := clientv3.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("clients: %s: connect: %w", name, err)
	}
	life, stop := context.WithCancel(context.Background())
	return &EtcdMutex{client: client, timeout: timeout, release: release, life: life, stop: stop, holds: map[string]etcdHold{}}, nil
}

// etcdLeaseSeconds is the lease TTL for a lock ttl: whole seconds, rounded
// up, at least 1.
func etcdLeaseSeconds(ttl time.Duration) int64 {
	secs := int64((ttl + time.Second - 1) / time.Second)
	return max(secs, 1)
}

// revoke ends a session and its lease; nil when the lease is surely gone.
func (e *EtcdMutex) revoke(ctx context.Context, s *concurrency.Session) error {
	s.Orphan()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.timeout)
	defer cancel()
	_, err := e.client.Revoke(cctx, s.Lease())
	return err
}

// Acquire tries the mutex once on a new session.
func (e *EtcdMutex) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return e.acquire(ctx, key, ttl, 0)
}

// AcquireWait takes the mutex with the library's own Mutex.Lock, which waits
// for every earlier waiter's key to go, up to wait.
func (e *EtcdMutex) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return e.acquire(ctx, key, ttl, wait)
}

// acquire takes the mutex on a new session: with TryLock when wait is 0,
// else with Lock bounded by wait.
//
// Its steps (etcdSteps): grant, a new lease, which holds no key and so no
// lock: a failure there, a network error included, is ErrNotAcquired
// (recorded fail; a lease granted behind a lost reply expires after its TTL
// holding nothing). The session then only starts the lease's keep-alive in
// the client, sending nothing: a failure there is ErrNotAcquired too, after
// a revoke of the lease. lock puts our key on the lease, which holds the
// lock when its create revision is the lowest, and token reads it after a
// wait: a failure at either revokes the lease, which deletes our key, so
// the acquire is ErrNotAcquired when the revoke succeeded and
// indeterminate otherwise.
func (e *EtcdMutex) acquire(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	cctx, cancel := context.WithTimeout(ctx, e.timeout+wait)
	defer cancel()
	start := time.Now()
	e.step("grant")
	grant, err := e.client.Grant(cctx, etcdLeaseSeconds(ttl))
	if err != nil {
		return Lease{}, fmt.Errorf("clients: etcd-mutex: lock %s: %w", key, beforeGrant("grant", err))
	}
	secs := int(etcdLeaseSeconds(ttl))
	s, err := concurrency.NewSession(e.client, concurrency.WithLease(grant.ID), concurrency.WithTTL(secs), concurrency.WithContext(e.life))
	if err != nil {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), e.timeout)
		_, _ = e.client.Revoke(rctx, grant.ID) // it holds nothing; revoked only not to leave it behind
		rcancel()
		return Lease{}, fmt.Errorf("clients: etcd-mutex: lock %s: %w", key, beforeGrant("session", err))
	}
	m := concurrency.NewMutex(s, etcdLocksPrefix+key)
	var lockErr error
	e.step("lock")
	if wait > 0 {
		lctx, cancelLock := context.WithTimeout(cctx, wait)
		lockErr = m.Lock(lctx)
		cancelLock()
	} else {
		lockErr = m.TryLock(cctx)
	}
	var token int64
	if lockErr == nil {
		token = m.Header().Revision
	}
	if lockErr == nil && wait > 0 {
		// After waiting, the header is that of the last read, not of
		// the put that created our key: read its create revision.
		got, err := e.client.Get(cctx, m.Key())
		switch {
		case err != nil:
			lockErr = err
		case len(got.Kvs) == 0:
			lockErr = concurrency.ErrSessionExpired
		default:
			token = got.Kvs[0].CreateRevision
		}
	}
	if lockErr != nil {
		revokeErr := e.revoke(ctx, s)
		switch {
		case errors.Is(lockErr, concurrency.ErrLocked):
			return Lease{}, fmt.Errorf("clients: etcd-mutex: %s is held: %w", key, ErrNotAcquired)
		case revokeErr == nil:
			return Lease{}, fmt.Errorf("clients: etcd-mutex: lock %s: %w (lease revoked): %w", key, lockErr, ErrNotAcquired)
		default:
			return Lease{}, fmt.Errorf("clients: etcd-mutex: lock %s: %w; revoke: %w", key, lockErr, revokeErr)
		}
	}
	e.mu.Lock()
	e.holds[m.Key()] = etcdHold{s: s, m: m}
	e.mu.Unlock()
	// The lease's TTL counts from the grant or the last keep-alive, both
	// after start; etcd may grant another TTL than the one asked for.
	granted := time.Duration(grant.TTL) * time.Second
	return Lease{Key: key, Token: uint64(token), Owner: m.Key(), Expires: start.Add(granted), Session: true}, nil
}

// Lost returns the channel the lease's session closes when it ends; for a
// lease that is not held it is already closed.
func (e *EtcdMutex) Lost(l Lease) <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h, ok := e.holds[l.Owner]; ok {
		return h.s.Done()
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

// Release gives the lease back as option "release" says: by default with
// Mutex.Unlock and Session.Close (releaseUnlock), else with our own
// transaction (releaseTxn).
func (e *EtcdMutex) Release(ctx context.Context, l Lease) error {
	e.mu.Lock()
	h, ok := e.holds[l.Owner]
	delete(e.holds, l.Owner)
	e.mu.Unlock()
	switch {
	case e.release == EtcdReleaseTxn:
		return e.releaseTxn(ctx, l, h, ok)
	case !ok:
		// No Mutex to unlock: this client does not hold the lease
		// (released already, or never its own). Nothing is sent.
		return fmt.Errorf("clients: etcd-mutex: release %s: this client does not hold it: %w", l.Owner, ErrNotHeld)
	default:
		return e.releaseUnlock(ctx, l, h)
	}
}

// releaseUnlock calls h.m.Unlock, then h.s.Close, as the library's users
// do, and classifies the outcome by what etcd did (see EtcdMutex): ok when
// the revoke succeeded, ErrNotHeld when the key was gone before the Unlock,
// indeterminate otherwise.
func (e *EtcdMutex) releaseUnlock(ctx context.Context, l Lease, h etcdHold) error {
	// Only to classify the outcome: when the session has already ended,
	// read whether the lock key is still there before the Unlock.
	gone := false
	select {
	case <-h.s.Done():
		gctx, cancel := context.WithTimeout(ctx, e.timeout)
		got, err := e.client.Get(gctx, l.Owner)
		cancel()
		gone = err == nil && (len(got.Kvs) == 0 || got.Kvs[0].CreateRevision != int64(l.Token))
	default:
	}
	uctx, cancel := context.WithTimeout(ctx, e.timeout)
	unlockErr := h.m.Unlock(uctx)
	cancel()
	closeErr := h.s.Close()
	switch {
	case gone:
		return fmt.Errorf("clients: etcd-mutex: release %s: the session had ended and the lock key was gone before the Unlock: %w", l.Owner, ErrNotHeld)
	case closeErr == nil:
		// The lease lived until the revoke, so the key was there until
		// the Unlock's delete or the revoke removed it.
		return nil
	case unlockErr != nil:
		return fmt.Errorf("clients: etcd-mutex: release %s: unlock: %w; close session: %w", l.Owner, unlockErr, closeErr)
	default:
		// The lease ended before the revoke (or the revoke's outcome is
		// unknown): before or after the Unlock's delete.
		return fmt.Errorf("clients: etcd-mutex: release %s: unlocked, but close session: %w", l.Owner, closeErr)
	}
}

// releaseTxn deletes the lock key if it is still ours, then revokes the
// lease when this client holds it (held).
func (e *EtcdMutex) releaseTxn(ctx context.Context, l Lease, h etcdHold, held bool) error {
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	resp, err := e.client.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(l.Owner), "=", int64(l.Token))).
		Then(clientv3.OpDelete(l.Owner)).
		Commit()
	// Stop the keep-alive and revoke the lease: after a failed delete the
	// lock then still frees itself within the lease's TTL; a failed revoke
	// only leaves a lease that expires on its own.
	if held {
		_ = e.revoke(ctx, h.s)
	}
	if err != nil {
		return fmt.Errorf("clients: etcd-mutex: release %s: %w", l.Owner, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("clients: etcd-mutex: release %s: %w", l.Owner, ErrNotHeld)
	}
	return nil
}

// Renew sends one keep-alive for the lease's session (the session's own
// keep-alives go on as well) and returns the lease with Expires moved to the
// TTL etcd answered, counted from before the request; ttl is not used (the
// lease keeps its granted TTL). ErrNotHeld when the lease is no longer ours
// or etcd no longer knows it.
func (e *EtcdMutex) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	e.mu.Lock()
	h, ok := e.holds[l.Owner]
	e.mu.Unlock()
	if !ok {
		return Lease{}, fmt.Errorf("clients: etcd-mutex: renew %s: not held: %w", l.Owner, ErrNotHeld)
	}
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	start := time.Now()
	resp, err := e.client.KeepAliveOnce(cctx, h.s.Lease())
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		return Lease{}, fmt.Errorf("clients: etcd-mutex: renew %s: %w: %w", l.Owner, err, ErrNotHeld)
	case err != nil:
		return Lease{}, fmt.Errorf("clients: etcd-mutex: renew %s: %w", l.Owner, err)
	case resp.TTL <= 0:
		return Lease{}, fmt.Errorf("clients: etcd-mutex: renew %s: the lease expired: %w", l.Owner, ErrNotHeld)
	}
	l.Expires = start.Add(time.Duration(resp.TTL) * time.Second)
	return l, nil
}

// Close revokes the lease of every session it still holds, as a client
// that ends cleanly does (a lease whose revoke fails stops being kept alive
// and expires after its TTL), and closes the client.
func (e *EtcdMutex) Close() error {
	e.mu.Lock()
	held := e.holds
	e.holds = map[string]etcdHold{}
	e.mu.Unlock()
	for _, h := range held {
		_ = e.revoke(context.Background(), h.s)
	}
	e.stop()
	if err := e.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("clients: etcd-mutex: close: %w", err)
	}
	return nil
}

// ReadGuarded returns the guarded register's value for l.Key.
func (e *EtcdMutex) ReadGuarded(ctx context.Context, l Lease) (int64, error) {
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	resp, err := e.client.Get(cctx, etcdResourcePrefix+l.Key)
	if err != nil {
		return 0, fmt.Errorf("clients: etcd-mutex: read %s: %w", l.Key, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("clients: etcd-mutex: read %s: %w", l.Key, err)
	}
	return v, nil
}

// WriteGuarded puts value for l.Key in a transaction that applies only while
// the lock key still has the lease's create revision.
func (e *EtcdMutex) WriteGuarded(ctx context.Context, l Lease, value int64) error {
	cctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	resp, err := e.client.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(l.Owner), "=", int64(l.Token))).
		Then(clientv3.OpPut(etcdResourcePrefix+l.Key, strconv.FormatInt(value, 10))).
		Commit()
	if err != nil {
		return fmt.Errorf("clients: etcd-mutex: write %s: %w", l.Key, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("clients: etcd-mutex: write %s: lock key %s is gone: %w: %w", l.Key, l.Owner, ErrStaleToken, ErrNotHeld)
	}
	return nil
}
