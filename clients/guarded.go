package clients

import "context"

// GuardedResource is a Locker that can keep the workload's register inside
// the locked system itself, with the write guarded by the lease in the same
// statement or transaction, so that no pause between the validity check and
// the write can let a stale holder through (Jepsen's lock-etcd-set).
//
// ReadGuarded returns the register's value for l.Key (0 when never written).
// WriteGuarded stores value for l.Key only while the guard holds, and returns
// an error wrapping ErrStaleToken when the guard rejected the write; any
// other error is indeterminate.
//
// Implemented by the PostgreSQL locks (table guarded_resource, written by
// one upsert whose update applies only while the stored token is <= the
// lease's token; the token-less flavors write token 0, so their writes are
// never rejected) and by etcd-mutex (a transaction that puts
// /resource/<key> only if the lock key still has the lease's create revision;
// a rejection also wraps ErrNotHeld).
type GuardedResource interface {
	ReadGuarded(ctx context.Context, l Lease) (int64, error)
	WriteGuarded(ctx context.Context, l Lease, value int64) error
}
