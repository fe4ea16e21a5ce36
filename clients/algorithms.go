package clients

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/lockproto"
)

// ErrUnknownAlgorithm reports a lock algorithm name that Lookup does not know.
var ErrUnknownAlgorithm = errors.New("clients: unknown algorithm")

// ErrMissingCapability reports a scenario that asks of its lock algorithm
// what the algorithm cannot do (CheckCapabilities).
var ErrMissingCapability = errors.New("clients: missing capability")

// The systems the algorithms run on (the same names as the cluster package's).
const (
	systemRedis     = "redis"
	systemPostgres  = "postgres"
	systemZooKeeper = "zookeeper"
	systemEtcd      = "etcd"
	systemMariaDB   = "mariadb"
	// systemAny is the system of an algorithm that runs on whichever the
	// scenario starts (an external client's).
	systemAny = "any"
)

// Algorithm is the one declaration of a lock algorithm under test: what
// `jepsen-lite list --algorithms` prints, what validation checks a scenario
// against before anything starts, what the contract tests hold it to, and
// its factory. Adding an algorithm is its own file (the Locker and its
// factory) and its declaration in Algorithms.
type Algorithm struct {
	Name     string // what users type: "redis-single", "redlock", ...
	System   string // the system it runs on: "redis", "postgres", "zookeeper", "etcd", "mariadb", or "any"
	Validity string // how it knows its lease is still valid (Lease.Until), in words
	// Lease is how the service keeps and frees the lock; nil when the
	// client reports it with each lease (the exec algorithm's lease_ms,
	// never and session, docs/lock-protocol.md).
	Lease *LeaseSemantics
	// Capabilities says what it can do beyond Locker; a capability not in
	// the map it does not have.
	Capabilities Capabilities
	// Options are the options its factory reads from Target.Options.
	Options []Option
	// OtherOptions, when set, says to whom the options that are not
	// declared go (the exec algorithm hands them to its client); when
	// empty such an option is an error.
	OtherOptions string
	Steps        []Step // the requests of one acquire, in the order it sends them
	New          Factory
}

// Support says whether an algorithm has a capability.
type Support uint8

const (
	// Without: the algorithm never has it.
	Without Support = iota
	// With: the algorithm always has it.
	With
	// ByClient: the external client decides at run time, by the abilities
	// of its init_ok (docs/lock-protocol.md §2).
	ByClient
)

// Capability is something a Locker can do beyond Locker, found by type
// assertion (and, for an external client, by the abilities it claims).
type Capability string

// The capabilities. Those an external client claims share the protocol's
// ability names.
const (
	// CapRenew is Renewer: a scenario's lock.renew.
	CapRenew Capability = lockproto.AbilityRenew
	// CapWait is Waiter: a scenario's lock.acquire: wait.
	CapWait Capability = lockproto.AbilityWait
	// CapAfterResponse is ResponseHooker: the client-pause point
	// after-response stops the worker between the reply and its check.
	CapAfterResponse Capability = lockproto.AbilityAfterResponse
	// CapLost is LeaseWatcher: the algorithm learns that a lease was lost
	// behind the holder's back.
	CapLost Capability = lockproto.AbilityLost
	// CapGuarded is GuardedResource: a scenario's resource: guarded.
	CapGuarded Capability = "guarded"
	// CapInCall is InCallHooker: the client-pause point in-call stops the
	// client's own process while a call is in flight.
	CapInCall Capability = "in-call"
)

// capabilities lists every capability with what an algorithm that has it
// can do, in the order `jepsen-lite list --algorithms` prints them.
var capabilities = []struct {
	c   Capability
	can string
}{
	{CapRenew, "renew a lease"},
	{CapWait, "wait for a lock"},
	{CapAfterResponse, "be paused between an acquire's replies and their check"},
	{CapLost, "tell that a lease was lost behind the holder's back"},
	{CapGuarded, "keep the register in its own system, guarded by the lease"},
	{CapInCall, "be paused, as a process of its own, while a call is in flight"},
}

// AllCapabilities returns every capability, in a fixed order.
func AllCapabilities() []Capability {
	var out []Capability
	for _, c := range capabilities {
		out = append(out, c.c)
	}
	return out
}

// Can returns what an algorithm with c can do, in words.
func (c Capability) Can() string {
	for _, d := range capabilities {
		if d.c == c {
			return d.can
		}
	}
	return string(c)
}

// Capabilities maps a capability to whether an algorithm has it; one that is
// not in the map it does not have (Without).
type Capabilities map[Capability]Support

// Text lists the capabilities an algorithm has, in AllCapabilities' order,
// those the client decides marked "(client)"; "none" when it has none.
func (cs Capabilities) Text() string {
	var out []string
	for _, c := range AllCapabilities() {
		switch cs[c] {
		case With:
			out = append(out, string(c))
		case ByClient:
			out = append(out, string(c)+" (client)")
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// Expiry is how the service frees a lock that nobody releases.
type Expiry uint8

const (
	// ExpiresAfterTTL: the service frees it on its own a ttl after the grant
	// (a key's PX, a stored timeout, the end of a time slot).
	ExpiresAfterTTL Expiry = iota
	// ExpiresWithSession: the service frees it when the holder's session
	// ends, a session timeout after the last heartbeat.
	ExpiresWithSession
	// ExpiresNever: the service keeps it until it is released (Lease.Never).
	ExpiresNever
)

// Release is what a release does with a lease that is no longer the
// holder's.
type Release uint8

const (
	// ReleaseChecksOwner: a release of a lease no longer held does nothing
	// and is refused (ErrNotHeld).
	ReleaseChecksOwner Release = iota
	// ReleaseFreesAnyHolder: the release does not check the owner, as the
	// seed writes it: a stale release frees whoever holds the lock now, and
	// the release of a free lock succeeds.
	ReleaseFreesAnyHolder
	// ReleaseFreesAnyHolderRefusesFree is ReleaseFreesAnyHolder, but the
	// release of a free lock is refused (ErrNotHeld): the mutex locks see
	// their flag unchanged.
	ReleaseFreesAnyHolderRefusesFree
	// ReleaseDoesNothing: the release sends nothing (ErrReleaseNoOp); the
	// lock frees itself at the end of its validity.
	ReleaseDoesNothing
)

// GiveUp is how an acquire of a lock that someone else holds ends.
type GiveUp uint8

const (
	// GiveUpRefused: an acquire is refused at once and a waiting acquire
	// whose wait ends is refused (ErrNotAcquired).
	GiveUpRefused GiveUp = iota
	// GiveUpUnknown: an acquire is refused at once, but a waiting acquire
	// whose wait ends has an unknown outcome (the library drops its tries'
	// answers: redsync).
	GiveUpUnknown
	// GiveUpClosesClient: the library only waits and cannot be abandoned
	// (zk.Lock): an acquire that ends before it took the lock ends by
	// closing its client (ErrClientClosed), and the worker goes on with a
	// new one.
	GiveUpClosesClient
)

// LeaseSemantics is what an algorithm's leases are: whether they carry a
// fencing token and a client-side validity end, how the service frees the
// lock without a release, whether closing the client frees it, and what
// releases and contended acquires do. The contract tests hold every
// algorithm to its LeaseSemantics against real servers.
type LeaseSemantics struct {
	// Token is where the fencing token comes from; empty when leases carry
	// none (Lease.Token 0).
	Token string
	// Until is set when leases carry a client-side validity end
	// (Lease.Until).
	Until   bool
	Expiry  Expiry
	Session bool // closing the client frees the lock (Lease.Session)
	Release Release
	GiveUp  GiveUp
	// Detail says how long the service keeps the lock without a release,
	// in words.
	Detail string
	// TTLStep is the unit the service grants a lease's ttl in, rounded
	// up, and so the shortest lease it grants (etcd: whole seconds); zero
	// for a lease of the ttl as asked. A hunt draws its runs' ttls in
	// whole steps (hunt.Lease).
	TTLStep time.Duration
}

// Text is what `jepsen-lite list --algorithms` prints of the lease: Detail,
// and whether closing the client frees the lock.
func (l *LeaseSemantics) Text() string {
	if l == nil {
		return "what the client reports (lease_ms, never, session); else the ttl"
	}
	if l.Session {
		return l.Detail + "; closing the client frees it"
	}
	return l.Detail + "; closing the client does not free it"
}

// TokenText is what `jepsen-lite list --algorithms` prints of the fencing
// token: its source, or "none".
func (l *LeaseSemantics) TokenText() string {
	switch {
	case l == nil:
		return "what the client reports"
	case l.Token == "":
		return "none"
	}
	return l.Token
}

// The options of the algorithms (Algorithm.Options), each declared once
// with its default and what it does; the factories read them here.
var (
	optRedisTimeout         = durationOpt("timeout", DefaultRedisTimeout, "per-command timeout")
	optRedlockNodeTimeout   = durationOpt("node-timeout", DefaultRedlockNodeTimeout, "timeout of each master's SET (small against the ttl)")
	optRedsyncDriftFactor   = fractionOpt("drift-factor", DefaultRedsyncDriftFactor, "clock drift as a fraction of the ttl")
	optRedsyncTimeoutFactor = fractionOpt("timeout-factor", DefaultRedsyncTimeoutFactor, "per-master timeout as a fraction of the ttl")
	optPgUser               = textOpt("user", DefaultPostgresUser, "user to connect as")
	optPgDatabase           = textOpt("database", DefaultPostgresDatabase, "database to connect to")
	optPgTimeout            = durationOpt("timeout", DefaultPostgresTimeout, "per-statement and connect timeout")
	optZKSessionTimeout     = durationOpt("session-timeout", DefaultZKSessionTimeout, "session timeout asked of the server")
	optZKWait               = durationOpt("wait", DefaultZKWait, "longest wait for the predecessor in one acquire (0: none)")
	optEtcdTimeout          = durationOpt("timeout", DefaultEtcdTimeout, "per-request timeout")
	optEtcdRelease          = textOpt("release", EtcdReleaseUnlock,
		EtcdReleaseUnlock+": Mutex.Unlock then Session.Close, as users release; "+EtcdReleaseTxn+": delete the key only if its create revision is the token, then revoke",
		EtcdReleaseUnlock, EtcdReleaseTxn)
	optMySQLUser    = textOpt("user", DefaultMySQLUser, "user to connect as (no password)")
	optMySQLTimeout = durationOpt("timeout", DefaultMySQLTimeout, "per-statement and connect timeout (a waiting acquire's statement: the wait and this)")
	optExecCommand  = textOpt(ExecCommandOption, "", "the client's command, run with sh -c (lock.options.command, or --lock-command; docs/lock-protocol.md)")

	redisNodeOptions = []Option{optRedisTimeout}
	redlockOptions   = []Option{optRedlockNodeTimeout}
	redsyncOptions   = []Option{optRedsyncDriftFactor, optRedsyncTimeoutFactor}
	pgOptions        = []Option{optPgUser, optPgDatabase, optPgTimeout}
	zkRecipeOptions  = []Option{optZKSessionTimeout, optZKWait}
	zkLockOptions    = []Option{optZKSessionTimeout}
	etcdOptions      = []Option{optEtcdTimeout, optEtcdRelease}
	mysqlOptions     = []Option{optMySQLUser, optMySQLTimeout}
	execOptions      = []Option{optExecCommand}
)

// The capabilities of the algorithms, by family.
var (
	redisCaps     = Capabilities{CapRenew: With, CapWait: With, CapAfterResponse: With}
	redsyncCaps   = Capabilities{CapRenew: With, CapWait: With}
	zaddCaps      = Capabilities{CapWait: With, CapAfterResponse: With}
	pgCaps        = Capabilities{CapWait: With, CapAfterResponse: With, CapGuarded: With}
	pgTimeoutCaps = Capabilities{CapRenew: With, CapWait: With, CapAfterResponse: With, CapGuarded: With}
	zkRecipeCaps  = Capabilities{CapRenew: With, CapWait: With, CapLost: With}
	zkLockCaps    = Capabilities{CapWait: With, CapLost: With}
	etcdCaps      = Capabilities{CapRenew: With, CapWait: With, CapLost: With, CapGuarded: With}
	mysqlCaps     = Capabilities{CapWait: With, CapAfterResponse: With}
	execCaps      = Capabilities{CapRenew: ByClient, CapWait: ByClient, CapAfterResponse: ByClient, CapLost: ByClient, CapInCall: With}
)

// The lease details shared by several algorithms.
const (
	pxDetail      = "ttl after the SET (PX)"
	pxEachDetail  = "ttl after the SETs (PX) on each master"
	zkLeaseDetail = "negotiated session timeout after the last heartbeat"
)

// Algorithms returns every lock algorithm under test, in a fixed order:
// Redis's, PostgreSQL's, ZooKeeper's, etcd's, MariaDB's, then exec.
func Algorithms() []Algorithm {
	return slices.Concat(redisAlgorithms(), postgresAlgorithms(), zooKeeperAlgorithms(), etcdAlgorithms(), mariaDBAlgorithms(), []Algorithm{execAlgorithm()})
}

// redisAlgorithms declares the Redis lock algorithms.
func redisAlgorithms() []Algorithm {
	return []Algorithm{
		{Name: "redis-single", System: systemRedis,
			Validity:     "SET NX PX ttl; until acquire start + ttl - drift",
			Lease:        &LeaseSemantics{Until: true, Detail: pxDetail},
			Capabilities: redisCaps, Options: redisNodeOptions,
			Steps: redisSingleSteps, New: NewRedisSingle},
		{Name: "redis-single-del", System: systemRedis,
			Validity:     "SET NX PX ttl; until acquire start + ttl - drift",
			Lease:        &LeaseSemantics{Until: true, Release: ReleaseFreesAnyHolder, Detail: pxDetail + "; released by a plain DEL, whoever holds it"},
			Capabilities: redisCaps, Options: redisNodeOptions,
			Steps: redisSingleSteps, New: NewRedisSingleDel},
		{Name: "redis-fenced", System: systemRedis,
			Validity:     "SET NX PX ttl; until acquire start + ttl - drift",
			Lease:        &LeaseSemantics{Token: "INCR {<key>}:fence in the acquire script", Until: true, Detail: pxDetail},
			Capabilities: redisCaps, Options: redisNodeOptions,
			Steps: redisFencedSteps, New: NewRedisFenced},
		{Name: "redlock", System: systemRedis,
			Validity:     "quorum of N masters; until t0 + ttl - (drift + 2ms + 1% ttl)",
			Lease:        &LeaseSemantics{Until: true, Detail: pxEachDetail},
			Capabilities: redisCaps, Options: redlockOptions,
			Steps: redlockSteps, New: NewRedlock},
		{Name: "redsync", System: systemRedis,
			Validity:     "go-redsync quorum; Mutex.Until (t0 + ttl - 1% ttl) - drift",
			Lease:        &LeaseSemantics{Until: true, GiveUp: GiveUpUnknown, Detail: pxEachDetail},
			Capabilities: redsyncCaps, Options: redsyncOptions,
			Steps: redsyncSteps, New: NewRedsync},
		{Name: "redis-zadd-mutex", System: systemRedis,
			Validity:     "none: held until released, no expiry",
			Lease:        &LeaseSemantics{Expiry: ExpiresNever, Release: ReleaseFreesAnyHolderRefusesFree, Detail: "never: held until released"},
			Capabilities: zaddCaps, Options: redisNodeOptions,
			Steps: zaddSteps(zaddMutexSet, "released"), New: NewRedisZaddMutex},
		{Name: "redis-zadd-timeout", System: systemRedis,
			Validity:     "until the slot ends, by the worker's clock, - drift",
			Lease:        &LeaseSemantics{Token: "slot score floor(worker clock / ttl)", Until: true, Release: ReleaseDoesNothing, Detail: "at the end of the holder's time slot (release does nothing)"},
			Capabilities: zaddCaps, Options: redisNodeOptions,
			Steps: zaddTimeoutSteps, New: NewRedisZaddTimeout},
		{Name: "redis-zadd-state", System: systemRedis,
			Validity:     "none: in_progress until set done, no expiry",
			Lease:        &LeaseSemantics{Expiry: ExpiresNever, Release: ReleaseFreesAnyHolder, Detail: "never: held until set done"},
			Capabilities: zaddCaps, Options: redisNodeOptions,
			Steps: zaddSteps(zaddStateSet, "done"), New: NewRedisZaddState},
		{Name: "redsync-cluster", System: systemRedis,
			Validity:     "go-redsync on one go-redis ClusterClient; Mutex.Until (t0 + ttl - 1% ttl) - drift",
			Lease:        &LeaseSemantics{Until: true, GiveUp: GiveUpUnknown, Detail: pxDetail + ", on the master of the key's slot"},
			Capabilities: redsyncCaps, Options: redsyncOptions,
			Steps: redsyncClusterSteps, New: NewRedsyncCluster},
	}
}

// postgresAlgorithms declares the PostgreSQL lock algorithms.
func postgresAlgorithms() []Algorithm {
	return []Algorithm{
		{Name: "pg-mutex", System: systemPostgres,
			Validity:     "none: held until released, no expiry",
			Lease:        &LeaseSemantics{Expiry: ExpiresNever, Release: ReleaseFreesAnyHolderRefusesFree, Detail: "never: held until released"},
			Capabilities: pgCaps, Options: pgOptions,
			Steps: pgSteps(pgMutex), New: NewPgMutex},
		{Name: "pg-timeout", System: systemPostgres,
			Validity:     "until acquire start + stored timeout - drift (ts + timeout by the worker's clock)",
			Lease:        &LeaseSemantics{Token: "ts from the worker's clock (ms)", Until: true, Release: ReleaseDoesNothing, Detail: "stored timeout after the holder's ts (release does nothing)"},
			Capabilities: pgTimeoutCaps, Options: pgOptions,
			Steps: pgSteps(pgTimeout), New: NewPgTimeout},
		{Name: "pg-state", System: systemPostgres,
			Validity:     "none: in_progress until set done, no expiry",
			Lease:        &LeaseSemantics{Expiry: ExpiresNever, Release: ReleaseFreesAnyHolder, Detail: "never: held until set done"},
			Capabilities: pgCaps, Options: pgOptions,
			Steps: pgSteps(pgState), New: NewPgState},
		{Name: "pg-unique-row", System: systemPostgres,
			Validity:     "none: held until the row is deleted, no expiry",
			Lease:        &LeaseSemantics{Token: "row's bigserial (drawn at insert, not at grant: can regress)", Expiry: ExpiresNever, Detail: "never: held until the row is deleted"},
			Capabilities: pgCaps, Options: pgOptions,
			Steps: pgSteps(pgUniqueRow), New: NewPgUniqueRow},
		{Name: "pg-advisory", System: systemPostgres,
			Validity:     "session: held while the connection lives",
			Lease:        &LeaseSemantics{Expiry: ExpiresNever, Session: true, Detail: "never while the connection lives"},
			Capabilities: pgCaps, Options: pgOptions,
			Steps: pgSteps(pgAdvisory), New: NewPgAdvisory},
	}
}

// zooKeeperAlgorithms declares the ZooKeeper lock algorithms.
func zooKeeperAlgorithms() []Algorithm {
	return []Algorithm{
		{Name: "zk-recipe", System: systemZooKeeper,
			Validity:     "session: lost on expiry, on disconnect, or when a new session replaced it",
			Lease:        &LeaseSemantics{Token: "lock node's czxid", Expiry: ExpiresWithSession, Session: true, Detail: zkLeaseDetail},
			Capabilities: zkRecipeCaps, Options: zkRecipeOptions,
			Steps: zkRecipeSteps, New: NewZKRecipe},
		{Name: "zk-lock", System: systemZooKeeper,
			Validity:     "session: lost on expiry, on disconnect, or when a new session replaced it",
			Lease:        &LeaseSemantics{Expiry: ExpiresWithSession, Session: true, GiveUp: GiveUpClosesClient, Detail: zkLeaseDetail},
			Capabilities: zkLockCaps, Options: zkLockOptions,
			Steps: zkLockSteps, New: NewZKLock},
	}
}

// etcdAlgorithms declares the etcd lock algorithm.
func etcdAlgorithms() []Algorithm {
	return []Algorithm{
		{Name: "etcd-mutex", System: systemEtcd,
			Validity:     "session: lease of ttl (>= 1s) kept alive; lost when it expires",
			Lease:        &LeaseSemantics{Token: "lock key's create revision", Expiry: ExpiresWithSession, Session: true, Detail: "granted lease TTL (whole seconds) after the last keep-alive", TTLStep: time.Second},
			Capabilities: etcdCaps, Options: etcdOptions,
			Steps: etcdSteps, New: NewEtcdMutex},
	}
}

// mariaDBAlgorithms declares the MariaDB (MySQL) lock algorithms. GET_LOCK
// is re-entrant per session (MySQL 5.7, MariaDB 10.0.2 and later): a
// second GET_LOCK of a name by the session that holds it succeeds, and the
// name is free again only once the session released it as many times.
// The Locker never asks twice for what it holds, and closes its session
// after an acquire of unknown outcome, so that a lock it may hold cannot
// outlive the doubt.
func mariaDBAlgorithms() []Algorithm {
	return []Algorithm{
		{Name: "mysql-get-lock", System: systemMariaDB,
			Validity:     "session: held while the connection lives (GET_LOCK is re-entrant per session)",
			Lease:        &LeaseSemantics{Expiry: ExpiresNever, Session: true, Detail: "never while the connection lives"},
			Capabilities: mysqlCaps, Options: mysqlOptions,
			Steps: mysqlSteps, New: NewMySQLGetLock},
		{Name: "mysql-for-update", System: systemMariaDB,
			Validity:     "session: until acquire start + wait_timeout (the ttl in whole seconds) - drift",
			Lease:        &LeaseSemantics{Until: true, Expiry: ExpiresWithSession, Session: true, Detail: "wait_timeout (the ttl in whole seconds) after the holder's last statement: the server ends the idle session and rolls its transaction back", TTLStep: time.Second},
			Capabilities: mysqlCaps, Options: mysqlOptions,
			Steps: mysqlForUpdateSteps, New: NewMySQLForUpdate},
		{Name: "mysql-lease", System: systemMariaDB,
			Validity:     "until acquire start + ttl - drift (expires = NOW(6) + ttl by the server's clock)",
			Lease:        &LeaseSemantics{Token: "the row's counter, raised by the upsert that takes it", Until: true, Detail: "ttl after the upsert, by the server's clock"},
			Capabilities: mysqlLeaseCaps, Options: mysqlOptions,
			Steps: mysqlLeaseSteps, New: NewMySQLLease},
		{Name: "mysql-unique-row", System: systemMariaDB,
			Validity:     "none: held until the row is deleted, no expiry",
			Lease:        &LeaseSemantics{Token: "the row's AUTO_INCREMENT (drawn at insert, not at grant: can regress)", Expiry: ExpiresNever, Detail: "never: held until the row is deleted"},
			Capabilities: mysqlCaps, Options: mysqlOptions,
			Steps: mysqlUniqueRowSteps, New: NewMySQLUniqueRow},
	}
}

// execAlgorithm declares exec, the algorithm of an external lock client
// program, on any system.
func execAlgorithm() Algorithm {
	return Algorithm{Name: ExecAlgorithm, System: systemAny,
		Validity:     "what the client reports (until_ms)",
		Capabilities: execCaps, Options: execOptions, OtherOptions: "the client, in init's options",
		Steps: execSteps, New: NewExec}
}

// The steps of each algorithm's acquire (Step), declared once: `jepsen-lite
// list --algorithms` prints them, and the acquires and their fault tests
// follow them.
var (
	// On a Redis Cluster the SET goes to the master of the key's slot: a
	// MOVED reply, which no node executed, is followed to the node it
	// names (redisRoutes); the same for the release and the renewal.
	redisSingleSteps = []Step{{"set", "SET key value NX PX ttl (on a Redis Cluster, following MOVED to the key's master)", true}}
	redisFencedSteps = []Step{{"acquire", "one script: SET NX PX, and INCR {<key>}:fence if set", true}}
	// A master whose connection could not even be opened sent nothing: a
	// definite no among the votes.
	redlockSteps     = []Step{{"set", "SET NX PX on each master, one after the other (a master that could not be connected to is a definite no)", true}}
	redsyncSteps     = []Step{{"lock", "redsync's SET NX PX on every master at once", true}}
	zaddTimeoutSteps = []Step{{"acquire", "ZADD task:timeout GT CH slot key", true}}
	// zk-recipe: the children are read and the predecessor watched after
	// the create; the lock may be ours by then (the predecessor went), so a
	// failure there gives the node up, and the acquire is fail only when
	// that delete succeeded.
	zkRecipeSteps = []Step{
		{"parent", "create /locks and /locks/<key>, once per key and client (persistent, no lock)", false},
		{"create", "create the protected ephemeral sequential node: the lock when it is the lowest", true},
		{"wait", "read the children, watch the predecessor, read our node: the lock once the lower nodes are gone (a failure at create or wait deletes the node: fail when that delete succeeded)", true},
	}
	// zk.Lock creates the parents, its node and waits in one call that
	// says nothing of which request failed.
	zkLockSteps = []Step{{"lock", "zk.Lock: the parents, the ephemeral sequential node, the wait, in one call that does not say which request failed", true}}
	// etcd-mutex: the session after the grant only starts the lease's
	// keep-alive in the client and sends nothing. After a waiting lock,
	// the token step reads our key's create revision, the lock taken. A
	// failed lock or token step revokes the lease, which deletes our key
	// with it: fail when the revoke succeeded.
	// exec: one request to a program of the user's; what it sends to
	// its service is its own.
	execSteps = []Step{{"acquire", "the protocol's acquire request (docs/lock-protocol.md)", true}}
	// mysql-get-lock: the connection is opened (and its session's id read)
	// at the first acquire after it has none; GET_LOCK's unknown outcome
	// closes it.
	mysqlSteps = []Step{
		{"connect", "open the connection when there is none, and read its CONNECTION_ID", false},
		{"get_lock", "SELECT GET_LOCK(key, 0), or the wait in seconds (an unknown outcome closes the session)", true},
	}
	etcdSteps = []Step{
		{"grant", "grant a lease of the ttl (a lease holds no key: one granted behind a lost reply expires holding nothing)", false},
		{"lock", "TryLock or Lock: put our key on the lease; the lock when its revision is the lowest (a failure revokes the lease: fail when the revoke succeeded)", true},
	}
)

// zaddSteps returns the steps of a ZADD lock whose member is created in
// set with score 0, named state.
func zaddSteps(set, state string) []Step {
	return []Step{
		{"create", "ZADD " + set + " NX 0 key: the member, " + state + ", if absent (never changes one that exists)", false},
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
		return []Step{connect, {"acquire", "pg_try_advisory_lock on the session (an unknown outcome closes the session)", true}}
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

// Need is a capability a scenario asks of its lock, and the field of the
// scenario that asks for it ("lock.renew").
type Need struct {
	Capability Capability
	Field      string
}

// CheckCapabilities checks, before anything starts, that the algorithm
// called algorithm can do what needs ask: a capability it does not have
// (Without) is an error wrapping ErrMissingCapability that names the field,
// the capability and the algorithms that have it. A capability the client
// decides (ByClient) passes here; Has checks it once the client is up.
func CheckCapabilities(algorithm string, needs []Need) error {
	a, err := Lookup(algorithm)
	if err != nil {
		return err
	}
	for _, n := range needs {
		if a.Capabilities[n.Capability] != Without {
			continue
		}
		var can []string
		for _, b := range Algorithms() {
			if b.Capabilities[n.Capability] != Without {
				can = append(can, b.Name)
			}
		}
		return fmt.Errorf("%s: %w: %s cannot %s (algorithms that can: %s)", n.Field, ErrMissingCapability, a.Name, n.Capability.Can(), strings.Join(can, ", "))
	}
	return nil
}

// Has reports whether l has capability c: l implements its interface and,
// when l is an external client (Abilities), the client claimed it.
func Has(l Locker, c Capability) bool {
	var ok bool
	switch c {
	case CapRenew:
		_, ok = l.(Renewer)
	case CapWait:
		_, ok = l.(Waiter)
	case CapAfterResponse:
		_, ok = l.(ResponseHooker)
	case CapLost:
		_, ok = l.(LeaseWatcher)
	case CapGuarded:
		_, ok = l.(GuardedResource)
	case CapInCall:
		_, ok = l.(InCallHooker)
	}
	if !ok {
		return false
	}
	a, claims := l.(Abilities)
	return !claims || !slices.Contains(lockproto.Abilities, string(c)) || a.Can(string(c))
}

// CanRenew reports whether l can renew a lease (Has CapRenew).
func CanRenew(l Locker) bool { return Has(l, CapRenew) }

// CanWait reports whether l can wait for a lock (Has CapWait).
func CanWait(l Locker) bool { return Has(l, CapWait) }

// The steps and capabilities of the MySQL row locks (mysql-for-update,
// mysql-lease, mysql-unique-row). A connection that failed to open sent
// nothing; mysql-for-update's create and begin take no row lock.
var (
	mysqlForUpdateSteps = []Step{
		{"connect", "open the connection when there is none, and read its CONNECTION_ID", false},
		{"create", "a plain read of the key's row, and INSERT IGNORE of it when there is none", false},
		{"begin", "SET SESSION wait_timeout (the ttl) and innodb_lock_wait_timeout (the wait), then START TRANSACTION", false},
		{"select", "SELECT ... FOR UPDATE NOWAIT, or waiting up to innodb_lock_wait_timeout (an unknown outcome closes the session)", true},
	}
	mysqlLeaseSteps = []Step{
		{"connect", "open the connection when there is none, and read its CONNECTION_ID", false},
		{"acquire", "INSERT ... ON DUPLICATE KEY UPDATE, taking the row when it expired by the server's NOW(6)", true},
	}
	mysqlUniqueRowSteps = []Step{
		{"connect", "open the connection when there is none, and read its CONNECTION_ID", false},
		{"acquire", "INSERT the key's row (a duplicate key is a refusal)", true},
	}
	mysqlLeaseCaps = Capabilities{CapRenew: With, CapWait: With, CapAfterResponse: With}
)
