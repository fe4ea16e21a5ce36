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
			Lease:    "ttl after the SET (PX); closing the client does not free it", New: NewRedisSingle},
		{Name: "redis-fenced", System: systemRedis, Token: "INCR <key>:fence in the acquire script",
			Validity: "SET NX PX ttl; until acquire start + ttl - drift",
			Lease:    "ttl after the SET (PX); closing the client does not free it", New: NewRedisFenced},
		{Name: "redlock", System: systemRedis, Token: "none",
			Validity: "quorum of N masters; until t0 + ttl - (drift + 2ms + 1% ttl)",
			Lease:    "ttl after the SETs (PX) on each master; closing the client does not free it", New: NewRedlock},
		{Name: "redsync", System: systemRedis, Token: "none",
			Validity: "go-redsync quorum; Mutex.Until (t0 + ttl - 1% ttl) - drift",
			Lease:    "ttl after the SETs (PX) on each master; closing the client does not free it", New: NewRedsync},
		{Name: "redis-zadd-mutex", System: systemRedis, Token: "none",
			Validity: "none: held until released, no expiry",
			Lease:    "never: held until released; closing the client does not free it", New: NewRedisZaddMutex},
		{Name: "redis-zadd-timeout", System: systemRedis, Token: "slot score floor(worker clock / ttl)",
			Validity: "until the slot ends, by the worker's clock, - drift",
			Lease:    "at the end of the holder's time slot (release does nothing); closing the client does not free it", New: NewRedisZaddTimeout},
		{Name: "redis-zadd-state", System: systemRedis, Token: "none",
			Validity: "none: in_progress until set done, no expiry",
			Lease:    "never: held until set done; closing the client does not free it", New: NewRedisZaddState},
		{Name: "pg-mutex", System: systemPostgres, Token: "none",
			Validity: "none: held until released, no expiry",
			Lease:    "never: held until released; closing the client does not free it", New: NewPgMutex},
		{Name: "pg-timeout", System: systemPostgres, Token: "ts from the worker's clock (ms)",
			Validity: "until acquire start + stored timeout - drift (ts + timeout by the worker's clock)",
			Lease:    "stored timeout after the holder's ts (release does nothing); closing the client does not free it", New: NewPgTimeout},
		{Name: "pg-state", System: systemPostgres, Token: "none",
			Validity: "none: in_progress until set done, no expiry",
			Lease:    "never: held until set done; closing the client does not free it", New: NewPgState},
		{Name: "pg-unique-row", System: systemPostgres, Token: "row's bigserial (drawn at insert, not at grant: can regress)",
			Validity: "none: held until the row is deleted, no expiry",
			Lease:    "never: held until the row is deleted; closing the client does not free it", New: NewPgUniqueRow},
		{Name: "pg-advisory", System: systemPostgres, Token: "none",
			Validity: "session: held while the connection lives",
			Lease:    "never while the connection lives; closing the client frees it", New: NewPgAdvisory},
		{Name: "zk-recipe", System: systemZooKeeper, Token: "lock node's czxid",
			Validity: "session: lost on expiry, on disconnect, or when a new session replaced it",
			Lease:    "negotiated session timeout after the last heartbeat; closing the client frees it", New: NewZKRecipe},
		{Name: "zk-lock", System: systemZooKeeper, Token: "none (zk.Lock keeps its node unexported)",
			Validity: "session: lost on expiry, on disconnect, or when a new session replaced it",
			Lease:    "negotiated session timeout after the last heartbeat; closing the client frees it", New: NewZKLock},
		{Name: "etcd-mutex", System: systemEtcd, Token: "lock key's create revision",
			Validity: "session: lease of ttl (>= 1s) kept alive; lost when it expires",
			Lease:    "granted lease TTL (whole seconds) after the last keep-alive; closing the client frees it (revoke)", New: NewEtcdMutex},
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
}

// AlgorithmOptions returns the options the algorithm called name reads, with
// their defaults, or an error wrapping ErrUnknownAlgorithm.
func AlgorithmOptions(name string) ([]OptionDoc, error) {
	if _, err := Lookup(name); err != nil {
		return nil, err
	}
	return slices.Clone(algorithmOptions[name]), nil
}
