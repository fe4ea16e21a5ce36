package clients

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// Redsync library defaults, restated so that the option docs can name them.
const (
	DefaultRedsyncDriftFactor   = 0.01 // redsync's own default
	DefaultRedsyncTimeoutFactor = 0.05 // redsync's own default: per-node timeout = ttl × 0.05
)

// Redsync is github.com/go-redsync/redsync/v4, the real library, over the
// same independent masters as Redlock (pools through its go-redis v9
// adapter). One Acquire is one try (WithTries(1)); redsync queries the masters
// concurrently, each bounded by ttl × timeout-factor, and its lease is valid
// until now + ttl − elapsed − ttl × drift-factor (Mutex.Until), from which we
// subtract the target's Drift as for every algorithm. Redsync has no fencing
// token.
//
// Errors map as follows: ErrTaken and per-master "taken" answers are
// ErrNotAcquired when the masters that granted the lock and those that failed
// with a network error could not have made a quorum; otherwise the error is
// indeterminate. So is a failure after a quorum granted the lock too late to
// use (its keys held the lock until redsync unlocked them), which redsync
// reports as the minority's "taken" answers, or as a bare ErrFailed when
// every master granted it; a bare ErrFailed is also what a waiting acquire
// whose context ended says, its tries' answers dropped. A release
// that deleted the key on a quorum is nil; one that could not, with every
// master answering, is ErrNotHeld. Options: "drift-factor" (default
// DefaultRedsyncDriftFactor), "timeout-factor" (default
// DefaultRedsyncTimeoutFactor).
type Redsync struct {
	clients       []*redis.Client
	cluster       *redis.ClusterClient // redsync-cluster: its one pool's client
	rs            *redsync.Redsync
	nodes         int
	driftFactor   float64
	timeoutFactor float64
	drift         time.Duration
	owners        ownerValues
}

var (
	_ Locker  = (*Redsync)(nil)
	_ Renewer = (*Redsync)(nil)
)

// NewRedsync is the redsync Factory; it uses every endpoint that is not a
// replica or sentinel as one master.
func NewRedsync(ctx context.Context, t Target) (Locker, error) {
	const name = "redsync"
	opts, err := readOptions(name, t.Options, redsyncOptions, false)
	if err != nil {
		return nil, err
	}
	driftFactor, timeoutFactor := opts.fraction(optRedsyncDriftFactor), opts.fraction(optRedsyncTimeoutFactor)
	masters, err := peerEndpoints(name, t.Endpoints)
	if err != nil {
		return nil, err
	}
	owners, err := newOwnerValues(name, t)
	if err != nil {
		return nil, err
	}
	r := &Redsync{nodes: len(masters), driftFactor: driftFactor, timeoutFactor: timeoutFactor, drift: t.Drift, owners: owners}
	var pools []redsyncredis.Pool
	for _, m := range masters {
		// Redsync bounds each call with its own context; the client's
		// socket timeouts are only a backstop.
		c := newRedisClient(m.Addr, time.Second, t.TCP)
		r.clients = append(r.clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	r.rs = redsync.New(pools...)
	return r, nil
}

func (r *Redsync) mutex(key string, ttl time.Duration, opts ...redsync.Option) *redsync.Mutex {
	opts = append([]redsync.Option{
		redsync.WithExpiry(ttl),
		redsync.WithTries(1),
		redsync.WithDriftFactor(r.driftFactor),
		redsync.WithTimeoutFactor(r.timeoutFactor),
	}, opts...)
	return r.rs.NewMutex(key, opts...)
}

// Acquire tries the mutex once. Its one step (redsyncSteps), redsync's SET
// on every master, can take the lock on each; classifyAcquire decides the
// acquire from the masters' answers.
func (r *Redsync) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	if err := checkTTL("redsync", ttl); err != nil {
		return Lease{}, err
	}
	value := r.owners.next()
	m := r.mutex(key, ttl, redsync.WithGenValueFunc(func() (string, error) { return value, nil }))
	start := time.Now()
	if err := m.LockContext(ctx); err != nil {
		return Lease{}, r.classifyAcquire(key, err)
	}
	return Lease{Key: key, Owner: m.Value(), Until: m.Until().Add(-r.drift), Expires: redisExpiry(start, ttl)}, nil
}

// redsyncAnswers counts, in an error redsync returned, the masters that
// definitely did not set the key (answered "taken", or could not be connected
// to), those that failed with another error, after which the key may have
// been set, and, for an unlock, those that found the key gone
// (redsync.ErrLockAlreadyExpired, joined once per master).
func redsyncAnswers(err error) (taken, failed, expired int, quorumTaken bool) {
	var walk func(error)
	walk = func(err error) {
		if err == redsync.ErrLockAlreadyExpired {
			expired++
			return
		}
		switch e := err.(type) {
		case nil:
			return
		case *redsync.ErrTaken:
			quorumTaken = true
			return
		case *redsync.ErrNodeTaken:
			taken++
			return
		case *redsync.RedisError:
			if neverSent(e.Err) {
				taken++ // the command never reached the master: a definite no
			} else {
				failed++
			}
			return
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
			return
		}
		if inner := errors.Unwrap(err); inner != nil {
			walk(inner)
		}
	}
	walk(err)
	return taken, failed, expired, quorumTaken
}

func (r *Redsync) classifyAcquire(key string, err error) error {
	taken, failed, _, quorumTaken := redsyncAnswers(err)
	quorum := r.nodes/2 + 1
	// The masters that neither said "taken" nor failed granted the lock.
	granted := r.nodes - taken - failed
	switch {
	case quorumTaken:
		return fmt.Errorf("clients: redsync: lock %s: %w: %w", key, err, ErrNotAcquired)
	case granted >= quorum:
		// A quorum granted it, too late to use (redsync then says the
		// minority's "taken", or a bare ErrFailed when every master
		// granted it; a bare ErrFailed is also what a waiting acquire
		// whose context ended says, its tries' answers dropped): its
		// keys held the lock until redsync unlocked them.
		return fmt.Errorf("clients: redsync: lock %s: %w (%d of %d masters may have granted it, too late): %w", key, err, granted, r.nodes, ErrOutcomeUnknown)
	case failed == 0 || granted+failed < quorum:
		return fmt.Errorf("clients: redsync: lock %s: %w: %w", key, err, ErrNotAcquired)
	default:
		return fmt.Errorf("clients: redsync: lock %s: %w: %w", key, err, ErrOutcomeUnknown)
	}
}

// Renew extends the lease with redsync's own Mutex.ExtendContext on the
// lease's value: extended on a quorum within the validity, Until is the
// mutex's new Until minus the target's Drift. ErrNotHeld when the masters
// that failed with a network error could not have completed a quorum;
// otherwise (and when redsync extended a quorum too late) the outcome is
// unknown.
func (r *Redsync) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	if err := checkTTL("redsync", ttl); err != nil {
		return Lease{}, err
	}
	m := r.mutex(l.Key, ttl, redsync.WithValue(l.Owner))
	start := time.Now()
	ok, err := m.ExtendContext(ctx)
	if ok {
		l.Until, l.Expires = m.Until().Add(-r.drift), redisExpiry(start, ttl)
		return l, nil
	}
	if errors.Is(err, redsync.ErrExtendFailed) {
		return Lease{}, fmt.Errorf("clients: redsync: extend %s: %w: %w", l.Key, err, ErrOutcomeUnknown)
	}
	taken, failed, _, quorumTaken := redsyncAnswers(err)
	extended := r.nodes - taken - failed
	if quorumTaken || failed == 0 || extended+failed < r.nodes/2+1 {
		return Lease{}, fmt.Errorf("clients: redsync: extend %s: %v: %w", l.Key, err, ErrNotHeld)
	}
	return Lease{}, fmt.Errorf("clients: redsync: extend %s: %w: %w", l.Key, err, ErrOutcomeUnknown)
}

// Release unlocks the mutex on every master.
func (r *Redsync) Release(ctx context.Context, l Lease) error {
	m := r.mutex(l.Key, time.Second, redsync.WithValue(l.Owner))
	ok, err := m.UnlockContext(ctx)
	if ok {
		return nil
	}
	return redsyncReleaseOutcome(l.Key, r.nodes, err)
}

// redsyncReleaseOutcome decides an unlock that redsync did not report done
// (fewer than a quorum of masters deleted our key). It failed, changing
// nothing, only when every master answered that the key was not ours or
// was gone; when a master may have deleted it (one that answered neither,
// or one that did not answer), its outcome is unknown: a release that
// deleted our key on some masters may have freed the lock (a holder whose
// other keys had expired, or sat behind a cut), so it is no failure that
// changed nothing. redsync's ErrTaken, returned when a quorum said "taken",
// names those masters and drops the others' errors.
func redsyncReleaseOutcome(key string, nodes int, err error) error {
	var quorum *redsync.ErrTaken
	if errors.As(err, &quorum) {
		if len(quorum.Nodes) >= nodes {
			return fmt.Errorf("clients: redsync: unlock %s: %w: %w", key, err, ErrNotHeld)
		}
		return fmt.Errorf("clients: redsync: unlock %s: %w (%d of %d masters may have deleted it)", key, err, nodes-len(quorum.Nodes), nodes)
	}
	taken, failed, expired, _ := redsyncAnswers(err)
	if failed == 0 && taken+expired >= nodes {
		return fmt.Errorf("clients: redsync: unlock %s: %w: %w", key, err, ErrNotHeld)
	}
	return fmt.Errorf("clients: redsync: unlock %s: %w (%d of %d masters may have deleted it)", key, err, nodes-taken-expired, nodes)
}

// Close closes the connections to every master.
func (r *Redsync) Close() error {
	var errs []error
	for _, c := range r.clients {
		errs = append(errs, c.Close())
	}
	if r.cluster != nil {
		errs = append(errs, r.cluster.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clients: redsync: close: %w", err)
	}
	return nil
}
