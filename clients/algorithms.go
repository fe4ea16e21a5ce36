package clients

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownAlgorithm reports a lock algorithm name that Lookup does not know.
var ErrUnknownAlgorithm = errors.New("clients: unknown algorithm")

// The systems the algorithms run on (the same names as the cluster package's).
const (
	systemRedis     = "redis"
	systemPostgres  = "postgres"
	systemZooKeeper = "zookeeper"
	systemEtcd      = "etcd"
)

// Algorithms returns every lock algorithm under test, in a fixed order.
func Algorithms() []Algorithm {
	return []Algorithm{
		{Name: "redis-single", System: systemRedis, Token: "none",
			Validity: "SET NX PX ttl; until acquire start + ttl - drift",
			Lease:    "ttl after the SET (PX); closing the client does not free it",
			Steps:    redisSingleSteps, New: NewRedisSingle},
		{Name: "redis-fenced", System: systemRedis, Token: "INCR <key>:fence in the acquire script",
			Validity: "SET NX PX ttl; until acquire start + ttl - drift",
			Lease:    "ttl after the SET (PX); closing the client does not free it",
			Steps:    redisFencedSteps, New: NewRedisFenced},
		{Name: "redlock", System: systemRedis, Token: "none",
			Validity: "quorum of N masters; until t0 + ttl - (drift + 2ms + 1% ttl)",
			Lease:    "ttl after the SETs (PX) on each master; closing the client does not free it",
			Steps:    redlockSteps, New: NewRedlock},
		{Name: "redsync", System: systemRedis, Token: "none",
			Validity: "go-redsync quorum; Mutex.Until (t0 + ttl - 1% ttl) - drift",
			Lease:    "ttl after the SETs (PX) on each master; closing the client does not free it",
			Steps:    redsyncSteps, New: NewRedsync},
		{Name: "redis-zadd-mutex", System: systemRedis, Token: "none",
			Validity: "none: held until released, no expiry",
			Lease:    "never: held until released; closing the client does not free it",
			Steps:    zaddSteps(zaddMutexSet, "released"), New: NewRedisZaddMutex},
		{Name: "redis-zadd-timeout", System: systemRedis, Token: "slot score floor(worker clock / ttl)",
			Validity: "until the slot ends, by the worker's clock, - drift",
			Lease:    "at the end of the holder's time slot (release does nothing); closing the client does not free it",
			Steps:    zaddTimeoutSteps, New: NewRedisZaddTimeout},
		{Name: "redis-zadd-state", System: systemRedis, Token: "none",
			Validity: "none: in_progress until set done, no expiry",
			Lease:    "never: held until set done; closing the client does not free it",
			Steps:    zaddSteps(zaddStateSet, "done"), New: NewRedisZaddState},
		{Name: "pg-mutex", System: systemPostgres, Token: "none",
			Validity: "none: held until released, no expiry",
			Lease:    "never: held until released; closing the client does not free it",
			Steps:    pgSteps(pgMutex), New: NewPgMutex},
		{Name: "pg-timeout", System: systemPostgres, Token: "ts from the worker's clock (ms)",
			Validity: "until acquire start + stored timeout - drift (ts + timeout by the worker's clock)",
			Lease:    "stored timeout after the holder's ts (release does nothing); closing the client does not free it",
			Steps:    pgSteps(pgTimeout), New: NewPgTimeout},
		{Name: "pg-state", System: systemPostgres, Token: "none",
			Validity: "none: in_progress until set done, no expiry",
			Lease:    "never: held until set done; closing the client does not free it",
			Steps:    pgSteps(pgState), New: NewPgState},
		{Name: "pg-unique-row", System: systemPostgres, Token: "row's bigserial (drawn at insert, not at grant: can regress)",
			Validity: "none: held until the row is deleted, no expiry",
			Lease:    "never: held until the row is deleted; closing the client does not free it",
			Steps:    pgSteps(pgUniqueRow), New: NewPgUniqueRow},
		{Name: "pg-advisory", System: systemPostgres, Token: "none",
			Validity: "session: held while the connection lives",
			Lease:    "never while the connection lives; closing the client frees it",
			Steps:    pgSteps(pgAdvisory), New: NewPgAdvisory},
		{Name: "zk-recipe", System: systemZooKeeper, Token: "lock node's czxid",
			Validity: "session: lost on expiry, on disconnect, or when a new session replaced it",
			Lease:    "negotiated session timeout after the last heartbeat; closing the client frees it",
			Steps:    zkRecipeSteps, New: NewZKRecipe},
		{Name: "zk-lock", System: systemZooKeeper, Token: "none (zk.Lock keeps its node unexported)",
			Validity: "session: lost on expiry, on disconnect, or when a new session replaced it",
			Lease:    "negotiated session timeout after the last heartbeat; closing the client frees it",
			Steps:    zkLockSteps, New: NewZKLock},
		{Name: "etcd-mutex", System: systemEtcd, Token: "lock key's create revision",
			Validity: "session: lease of ttl (>= 1s) kept alive; lost when it expires",
			Lease:    "granted lease TTL (whole seconds) after the last keep-alive; closing the client frees it (revoke)",
			Steps:    etcdSteps, New: NewEtcdMutex},
		{Name: ExecAlgorithm, System: "any", Token: "what the client reports",
			Validity: "what the client reports (until_ms)",
			Lease:    "what the client reports (lease_ms, never, session); else the ttl",
			Steps:    execSteps, New: NewExec},
	}
}

// The steps of each algorithm's acquire (Step), declared once: `jepsen-lite
// list --algorithms` prints them, and the acquires and their fault tests
// follow them.
var (
	redisSingleSteps = []Step{{"set", "SET key value NX PX ttl", true}}
	redisFencedSteps = []Step{{"acquire", "one script: SET NX PX, and INCR <key>:fence if set", true}}
	// A master whose connection could not even be opened sent nothing: a
	// definite no among the votes.
	redlockSteps     = []Step{{"set", "SET NX PX on each master, one after the other", true}}
	redsyncSteps     = []Step{{"lock", "redsync's SET NX PX on every master at once", true}}
	zaddTimeoutSteps = []Step{{"acquire", "ZADD task:timeout GT CH slot key", true}}
	// zk-recipe: the children are read and the predecessor watched after
	// the create; the lock may be ours by then (the predecessor went), so a
	// failure there gives the node up, and the acquire is fail only when
	// that delete succeeded.
	zkRecipeSteps = []Step{
		{"parent", "create /locks and /locks/<key>, once per key and client (persistent, no lock)", false},
		{"create", "create the protected ephemeral sequential node: the lock when it is the lowest", true},
		{"wait", "read the children, watch the predecessor, read our node: the lock once the lower nodes are gone", true},
	}
	// zk.Lock creates the parents, its node and waits in one call that
	// says nothing of which request failed.
	zkLockSteps = []Step{{"lock", "zk.Lock: the parents, the ephemeral sequential node, the wait", true}}
	// etcd-mutex: the session after the grant only starts the lease's
	// keep-alive in the client and sends nothing. After a waiting lock,
	// the token step reads our key's create revision, the lock taken. A
	// failed lock or token step revokes the lease, which deletes our key
	// with it: fail when the revoke succeeded.
	// exec: one request to a program of the user's; what it sends to
	// its service is its own.
	execSteps = []Step{{"acquire", "the protocol's acquire request (docs/lock-protocol.md)", true}}
	etcdSteps = []Step{
		{"grant", "grant a lease of the ttl (a lease holds no key)", false},
		{"lock", "TryLock or Lock: put our key on the lease; the lock when its revision is the lowest", true},
	}
)

// zaddSteps returns the steps of a ZADD lock whose member is created in
// set with score 0, named state.
func zaddSteps(set, state string) []Step {
	return []Step{
		{"create", "ZADD " + set + " NX 0 key: the member, " + state + ", if absent", false},
		{"acquire", "ZADD " + set + " XX CH 1 key", true},
	}
}

// pgSteps returns the steps of a PostgreSQL lock. Every flavor opens its
// connection first when it has none (at the first acquire after a broken
// one): a connection that failed to open sent nothing.
func pgSteps(f pgFlavor) []Step {
	connect := Step{"connect", "open the connection when there is none", false}
	switch f {
	case pgMutex:
		return []Step{connect,
			{"create", "insert the row released, on conflict do nothing", false},
			{"acquire", "update task_state set acquired = true where acquired != true", true}}
	case pgTimeout:
		return []Step{connect,
			{"create", "insert the row with ts 0 and the timeout, on conflict do nothing", false},
			{"acquire", "update task_timeout set ts where ts + timeout < ts", true}}
	case pgState:
		return []Step{connect,
			{"create", "insert the task done, on conflict do nothing", false},
			{"acquire", "the seed's capture: update task set status = in_progress", true}}
	case pgUniqueRow:
		return []Step{connect, {"acquire", "insert the lock row", true}}
	default: // pgAdvisory
		return []Step{connect, {"acquire", "pg_try_advisory_lock on the session", true}}
	}
}

// Names returns the names of every algorithm, in Algorithms' order.
func Names() []string {
	var names []string
	for _, a := range Algorithms() {
		names = append(names, a.Name)
	}
	return names
}

// Lookup returns the algorithm called name, or an error wrapping
// ErrUnknownAlgorithm that lists the known names.
func Lookup(name string) (Algorithm, error) {
	for _, a := range Algorithms() {
		if a.Name == name {
			return a, nil
		}
	}
	return Algorithm{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownAlgorithm, name, strings.Join(Names(), ", "))
}

// OptionDoc describes one option an algorithm reads from Target.Options.
type OptionDoc struct {
	Name    string
	Default string
	Doc     string
}

var (
	redisTimeoutOption = OptionDoc{"timeout", DefaultRedisTimeout.String(), "per-command timeout"}
	pgOptions          = []OptionDoc{
		{"user", DefaultPostgresUser, "user to connect as"},
		{"database", DefaultPostgresDatabase, "database to connect to"},
		{"timeout", DefaultPostgresTimeout.String(), "per-statement and connect timeout"},
	}
)

// algorithmOptions lists, per algorithm, the options its factory reads; any
// other option is an error wrapping ErrBadOption.
var algorithmOptions = map[string][]OptionDoc{
	"redis-single": {redisTimeoutOption},
	"redis-fenced": {redisTimeoutOption},
	"redlock": {{"node-timeout", DefaultRedlockNodeTimeout.String(),
		"timeout of each master's SET (small against the ttl)"}},
	"redsync": {
		{"drift-factor", fmt.Sprint(DefaultRedsyncDriftFactor), "clock drift as a fraction of the ttl"},
		{"timeout-factor", fmt.Sprint(DefaultRedsyncTimeoutFactor), "per-master timeout as a fraction of the ttl"},
	},
	"redis-zadd-mutex":   {redisTimeoutOption},
	"redis-zadd-timeout": {redisTimeoutOption},
	"redis-zadd-state":   {redisTimeoutOption},
	"pg-mutex":           pgOptions,
	"pg-timeout":         pgOptions,
	"pg-state":           pgOptions,
	"pg-unique-row":      pgOptions,
	"pg-advisory":        pgOptions,
	"zk-recipe": {
		{"session-timeout", DefaultZKSessionTimeout.String(), "session timeout asked of the server"},
		{"wait", DefaultZKWait.String(), "longest wait for the predecessor in one acquire (0: none)"},
	},
	"zk-lock": {
		{"session-timeout", DefaultZKSessionTimeout.String(), "session timeout asked of the server"},
	},
	"etcd-mutex": {
		{"timeout", DefaultEtcdTimeout.String(), "per-request timeout"},
		{"release", EtcdReleaseUnlock, "unlock: Mutex.Unlock then Session.Close, as users release; txn: delete the key only if its create revision is the token, then revoke"},
	},
	ExecAlgorithm: {
		{ExecCommandOption, "(required)", "the client's command, run with sh -c (docs/lock-protocol.md); every other option is handed to the client"},
	},
}

// AlgorithmOptions returns the options the algorithm called name reads, with
// their defaults, or an error wrapping ErrUnknownAlgorithm.
func AlgorithmOptions(name string) ([]OptionDoc, error) {
	if _, err := Lookup(name); err != nil {
		return nil, err
	}
	return slices.Clone(algorithmOptions[name]), nil
}
