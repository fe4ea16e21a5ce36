package clients

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/jepsen-lite/jepsen-lite/lockapi"
	"github.com/redis/go-redis/v9"
)

// DefaultRedlockNodeTimeout is Redlock's per-node timeout (option
// "node-timeout"): small against the ttl, as the algorithm asks.
const DefaultRedlockNodeTimeout = 50 * time.Millisecond

// redlockFixedDrift and redlockDriftPerTTL are the reference implementation's
// drift allowance (2 ms plus 1% of the ttl), added to the target's Drift.
const (
	redlockFixedDrift  = 2 * time.Millisecond
	redlockDriftPerTTL = 100 // ttl / 100 = 1%
)

// ErrOutcomeUnknown reports an acquire that failed in a way that may still
// have taken the lock on some servers (a quorum of Redlock masters, say)
// without the client learning it. It is indeterminate: it does not wrap
// ErrNotAcquired. It is lockapi.ErrOutcomeUnknown.
var ErrOutcomeUnknown = lockapi.ErrOutcomeUnknown

// ErrValidityExpired reports a Redlock acquire that reached a quorum too late:
// the elapsed time and drift used up the whole ttl. The client gives the lock
// up and unlocks every master, but a quorum held it for it until then (or
// until the keys expired), so the acquire did take effect on the servers for
// a while: it wraps ErrOutcomeUnknown, not ErrNotAcquired.
var ErrValidityExpired = fmt.Errorf("clients: a quorum granted the lock too late to use, and held it until the unlock or the ttl: %w", ErrOutcomeUnknown)

// Redlock is our own implementation of the Redlock algorithm over N
// independent masters, step by step as its documentation describes:
//
//  1. t0 = now;
//  2. SET key value NX PX ttl with the same key and random value on every
//     master, one after the other, each bounded by the per-node timeout;
//  3. elapsed = now − t0;
//  4. validity = ttl − elapsed − drift, where drift is the target's Drift
//     plus 2 ms plus 1% of the ttl;
//  5. the lock is taken when at least N/2+1 masters granted it and validity
//     is positive; the lease is then valid for validity from now (t1), so
//     Until = t1 + validity = t0 + ttl − drift. Otherwise every master is
//     unlocked (even those that did not answer).
//
// The service frees the lock ttl after the SETs (Lease.Expires = t0 + ttl):
// each master expires its key ttl after it set it, and every SET was sent
// after t0.
//
// An acquire that fails is ErrNotAcquired when its outcome is certain: every
// master answered or could not even be connected to, or the masters that did
// not answer could not have made a quorum even had they set the key. When
// unanswered masters could have completed a quorum, the error is
// indeterminate (the recording notes it as info). Release runs the
// compare-and-delete on every master and succeeds only when a quorum of them
// deleted our key, as redsync's Unlock does; ErrNotHeld when the masters that
// deleted it and those that did not answer could not make a quorum, so that
// the lock was no longer held by a quorum; indeterminate otherwise. Redlock
// has no fencing token.
// Options: "node-timeout" (default DefaultRedlockNodeTimeout).
type Redlock struct {
	afterResponse
	clients     []*redis.Client
	nodeTimeout time.Duration
	drift       time.Duration
	owners      ownerValues
}

var (
	_ Locker         = (*Redlock)(nil)
	_ Renewer        = (*Redlock)(nil)
	_ ResponseHooker = (*Redlock)(nil)
)

// NewRedlock is the redlock Factory; it uses every endpoint that is not a
// replica or sentinel as one master.
func NewRedlock(ctx context.Context, t Target) (Locker, error) {
	const name = "redlock"
	opts, err := readOptions(name, t.Options, redlockOptions, false)
	if err != nil {
		return nil, err
	}
	nodeTimeout := opts.duration(optRedlockNodeTimeout)
	masters, err := peerEndpoints(name, t.Endpoints)
	if err != nil {
		return nil, err
	}
	owners, err := newOwnerValues(name, t)
	if err != nil {
		return nil, err
	}
	r := &Redlock{nodeTimeout: nodeTimeout, drift: t.Drift, owners: owners}
	for _, m := range masters {
		r.clients = append(r.clients, newRedisClient(m.Addr, nodeTimeout, t.TCP))
	}
	return r, nil
}

// redlockVote is what one master answered to an acquire.
type redlockVote int

const (
	voteGranted redlockVote = iota
	voteTaken               // the key existed, or the master could not be reached: a definite no
	voteUnknown             // no answer or an error: the SET may have happened
)

// neverSent reports an error that proves the command never left the client:
// the connection to the server could not be established.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// redlockOutcome decides an acquire from the masters' votes and the validity
// left. It returns nil when the lock is taken.
func redlockOutcome(votes []redlockVote, validity time.Duration) error {
	quorum := len(votes)/2 + 1
	var granted, unknown int
	for _, v := range votes {
		switch v {
		case voteGranted:
			granted++
		case voteUnknown:
			unknown++
		}
	}
	switch {
	case granted >= quorum && validity > 0:
		return nil
	case granted >= quorum:
		return fmt.Errorf("clients: redlock: %d of %d masters granted, %d did not answer, validity %v: %w",
			granted, len(votes), unknown, validity, ErrValidityExpired)
	case unknown == 0 || granted+unknown < quorum:
		return fmt.Errorf("clients: redlock: %d of %d masters granted, %d did not answer, quorum %d: %w",
			granted, len(votes), unknown, quorum, ErrNotAcquired)
	default:
		return fmt.Errorf("clients: redlock: %d of %d masters granted, %d did not answer, quorum %d: %w",
			granted, len(votes), unknown, quorum, ErrOutcomeUnknown)
	}
}

// Acquire runs the algorithm once. Its one step (redlockSteps), a SET on
// each master, can take the lock on that master; a master whose connection
// could not be opened sent nothing and counts as a definite no, and
// redlockOutcome decides the acquire from the votes.
func (r *Redlock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if err := checkTTL("redlock", ttl); err != nil {
		return Lease{}, err
	}
	value := r.owners.next()
	t0 := time.Now()
	votes := make([]redlockVote, len(r.clients))
	for i, c := range r.clients {
		votes[i] = r.setOn(ctx, c, key, value, ttl)
	}
	r.runAfterResponse()
	t1 := time.Now()
	drift := r.drift + redlockFixedDrift + ttl/redlockDriftPerTTL
	validity := ttl - t1.Sub(t0) - drift
	err := redlockOutcome(votes, validity)
	if err == nil {
		return Lease{Key: key, Owner: value, Until: t1.Add(validity), Expires: redisExpiry(t0, ttl)}, nil
	}
	// Unlock every master, also those that said no or did not answer.
	_, _ = r.deleteOnAll(context.WithoutCancel(ctx), key, value)
	return Lease{}, err
}

func (r *Redlock) setOn(ctx context.Context, c *redis.Client, key, value string, ttl time.Duration) redlockVote {
	cctx, cancel := context.WithTimeout(ctx, r.nodeTimeout)
	defer cancel()
	ok, err := c.SetNX(cctx, key, value, ttl).Result()
	switch {
	case err != nil && neverSent(err):
		return voteTaken
	case err != nil:
		return voteUnknown
	case ok:
		return voteGranted
	default:
		return voteTaken
	}
}

// deleteOnAll runs the compare-and-delete on every master and counts the
// masters that deleted our key, that answered it was not ours, and that did
// not answer.
func (r *Redlock) deleteOnAll(ctx context.Context, key, value string) (deleted int, errs []error) {
	for i, c := range r.clients {
		cctx, cancel := context.WithTimeout(ctx, r.nodeTimeout)
		n, err := compareAndDelete.Run(cctx, c, []string{key}, value).Int64()
		cancel()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("master %d: %w", i, err))
		case n > 0:
			deleted++
		}
	}
	return deleted, errs
}

// Release unlocks every master; it succeeds when a quorum deleted our key.
func (r *Redlock) Release(ctx context.Context, l Lease) error {
	deleted, errs := r.deleteOnAll(ctx, l.Key, l.Owner)
	return redlockReleaseOutcome(l.Key, len(r.clients), deleted, errs)
}

// redlockReleaseOutcome decides a release from the number of masters that
// deleted our key and the errors of those that did not answer. It failed,
// changing nothing, only when every master answered that the key was not
// ours; a release that deleted the key on some masters but not a quorum,
// or whose silent masters may have, may have freed the lock (a holder
// whose other keys had expired, or sat behind a cut), so its outcome is
// unknown, not a failure that changed nothing.
func redlockReleaseOutcome(key string, masters, deleted int, errs []error) error {
	quorum := masters/2 + 1
	switch {
	case deleted >= quorum:
		return nil
	case deleted == 0 && len(errs) == 0:
		return fmt.Errorf("clients: redlock: release %s: no master of %d held it: %w",
			key, masters, ErrNotHeld)
	case len(errs) == 0:
		return fmt.Errorf("clients: redlock: release %s: %d of %d masters deleted it and the others did not hold it, quorum %d: the lock may be free",
			key, deleted, masters, quorum)
	default:
		return fmt.Errorf("clients: redlock: release %s: %d of %d masters deleted it, quorum %d: %w",
			key, deleted, masters, quorum, errors.Join(errs...))
	}
}

// Renew extends the lease as the Redlock documentation describes: the
// owner-checked extension on every master, one after the other, with the same
// timing as an acquire. The lease is extended when a quorum extended it and
// validity is left: Until = t0 + ttl − drift, Expires = t0 + ttl. When fewer
// masters than a quorum extended it, even counting those that did not
// answer, the error is ErrNotHeld; when a quorum extended it too late, or
// unanswered masters could complete one, the outcome is unknown.
func (r *Redlock) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if err := checkTTL("redlock", ttl); err != nil {
		return Lease{}, err
	}
	t0 := time.Now()
	var extended, unknown int
	for _, c := range r.clients {
		cctx, cancel := context.WithTimeout(ctx, r.nodeTimeout)
		n, err := extendIfOwner.Run(cctx, c, []string{l.Key}, l.Owner, ttl.Milliseconds()).Int64()
		cancel()
		switch {
		case err != nil && !neverSent(err):
			unknown++
		case err == nil && n > 0:
			extended++
		}
	}
	t1 := time.Now()
	drift := r.drift + redlockFixedDrift + ttl/redlockDriftPerTTL
	validity := ttl - t1.Sub(t0) - drift
	quorum := len(r.clients)/2 + 1
	switch {
	case extended >= quorum && validity > 0:
		l.Until, l.Expires = t1.Add(validity), redisExpiry(t0, ttl)
		return l, nil
	case extended+unknown < quorum:
		return Lease{}, fmt.Errorf("clients: redlock: renew %s: %d of %d masters extended it, %d did not answer, quorum %d: %w",
			l.Key, extended, len(r.clients), unknown, quorum, ErrNotHeld)
	default:
		return Lease{}, fmt.Errorf("clients: redlock: renew %s: %d of %d masters extended it, %d did not answer, validity %v: %w",
			l.Key, extended, len(r.clients), unknown, validity, ErrOutcomeUnknown)
	}
}

// Close closes the connections to every master.
func (r *Redlock) Close() error {
	var errs []error
	for _, c := range r.clients {
		errs = append(errs, c.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clients: redlock: close: %w", err)
	}
	return nil
}
