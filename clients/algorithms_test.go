package clients

import (
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
)

// TestAlgorithmNamesAreDistinct keeps every name to one declaration: no
// two algorithms share a name, and no queue implementation takes a lock
// algorithm's but the exec algorithm's, which serves both (CheckOptions
// finds either by its name).
func TestAlgorithmNamesAreDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range Names() {
		if name == "" || seen[name] {
			t.Errorf("algorithm name %q declared twice or empty", name)
		}
		seen[name] = true
	}
	for _, name := range QueueNames() {
		if seen[name] && name != ExecAlgorithm {
			t.Errorf("queue %q has a lock algorithm's name", name)
		}
	}
	if len(seen) < 16 {
		t.Errorf("%d algorithms, want the 16 of the catalog at least", len(seen))
	}
}

// TestEveryAlgorithmDeclaresItsFacts fails when a declaration lacks a fact:
// a known system, its validity, its lease semantics (only an algorithm that
// runs on any system, an external client, leaves them to the client), its
// steps with one that can take the lock, its factory, documented options,
// and capabilities among AllCapabilities.
func TestEveryAlgorithmDeclaresItsFacts(t *testing.T) {
	systems := []string{systemRedis, systemPostgres, systemZooKeeper, systemEtcd, systemMariaDB, systemAny}
	for _, a := range Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			if !slices.Contains(systems, a.System) || a.Validity == "" || a.New == nil {
				t.Errorf("incomplete declaration %+v", a)
			}
			if (a.Lease == nil) != (a.System == systemAny) {
				t.Errorf("lease semantics %v on system %s: only an external client's are its own", a.Lease, a.System)
			}
			if a.Lease != nil && a.Lease.Detail == "" {
				t.Error("lease semantics without their detail")
			}
			if !slices.ContainsFunc(a.Steps, func(s Step) bool { return s.Grants }) {
				t.Error("no step can take the lock")
			}
			for _, o := range a.Options {
				if o.Name == "" || o.Doc == "" || o.check == nil {
					t.Errorf("option %+v is not fully declared", o)
				}
			}
			for c, s := range a.Capabilities {
				if !slices.Contains(AllCapabilities(), c) || s > ByClient {
					t.Errorf("capability %q: %d", c, s)
				}
				if s == ByClient && a.System != systemAny {
					t.Errorf("capability %q decided by the client of an algorithm of its own system", c)
				}
			}
		})
	}
}

func TestLookup(t *testing.T) {
	a, err := Lookup("redlock")
	if err != nil || a.Name != "redlock" || a.System != systemRedis {
		t.Fatalf("Lookup(redlock) = %+v, %v", a, err)
	}
	_, err = Lookup("red-lock")
	if !errors.Is(err, ErrUnknownAlgorithm) {
		t.Fatalf("Lookup(red-lock) error = %v, want ErrUnknownAlgorithm", err)
	}
	if !strings.Contains(err.Error(), "redis-single") || !strings.Contains(err.Error(), "etcd-mutex") {
		t.Errorf("error %q does not list the known names", err)
	}
}

// TestAlgorithmOptionsMatchFactories checks that each factory knows exactly
// the options its declaration lists, accepts their defaults and names
// itself by its declared name.
//
// The exec algorithm is checked by TestExecOptions: it hands every option
// but its command to the client.
func TestAlgorithmOptionsMatchFactories(t *testing.T) {
	for _, a := range Algorithms() {
		if a.OtherOptions != "" {
			continue
		}
		t.Run(a.Name, func(t *testing.T) {
			var names []string
			defaults := map[string]string{}
			for _, d := range a.Options {
				names = append(names, d.Name)
				defaults[d.Name] = d.Default
			}
			slices.Sort(names)
			_, err := a.New(t.Context(), Target{Endpoints: []Endpoint{{Addr: "127.0.0.1:1"}}, Options: map[string]string{"bogus": "1"}})
			if want := "(known: " + strings.Join(names, ", ") + ")"; err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("unknown-option error %v does not list %s", err, want)
			}
			if want := "clients: " + a.Name + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("unknown-option error %q does not begin with %q", err, want)
			}
			l, err := a.New(t.Context(), Target{Endpoints: []Endpoint{{Addr: "127.0.0.1:1"}}, Options: defaults,
				Clock: wallClock{}, Rand: newTestRand(1)})
			if errors.Is(err, ErrBadOption) {
				t.Fatalf("documented defaults rejected: %v", err)
			}
			if err == nil {
				l.Close()
			}
		})
	}
}

func TestReadOptions(t *testing.T) {
	declared := []Option{optRedlockNodeTimeout, optRedsyncDriftFactor, optEtcdRelease, optExecCommand}
	required := map[string]string{ExecCommandOption: "true"}
	with := func(k, v string) map[string]string {
		m := maps.Clone(required)
		m[k] = v
		return m
	}
	tests := []struct {
		name    string
		options map[string]string
		others  bool
		want    time.Duration
		wantErr string
	}{
		{name: "default", options: required, want: 50 * time.Millisecond},
		{name: "set", options: with("node-timeout", "20ms"), want: 20 * time.Millisecond},
		{name: "unparsable", options: with("node-timeout", "soon"), wantErr: `option node-timeout="soon"`},
		{name: "negative", options: with("node-timeout", "-1s"), wantErr: "must not be negative"},
		{name: "fraction out of range", options: with("drift-factor", "1"), wantErr: "must be in [0, 1)"},
		{name: "not a choice", options: with("release", "drop"), wantErr: `must be "unlock" or "txn"`},
		{name: "blank text", options: map[string]string{ExecCommandOption: " "}, wantErr: "must not be empty"},
		{name: "required missing", options: nil, wantErr: "command is required"},
		{name: "unknown", options: with("node-timeuot", "1s"), wantErr: "unknown node-timeuot (known: command, drift-factor, node-timeout, release)"},
		{name: "unknown handed on", options: with("node-timeuot", "1s"), others: true, want: 50 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := readOptions("redlock", tt.options, declared, tt.others)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want ErrBadOption containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := o.duration(optRedlockNodeTimeout); got != tt.want {
				t.Fatalf("node-timeout = %v, want %v", got, tt.want)
			}
			if got := o.fraction(optRedsyncDriftFactor); got != DefaultRedsyncDriftFactor {
				t.Fatalf("drift-factor = %v, want the default %v", got, DefaultRedsyncDriftFactor)
			}
		})
	}
}

func TestFactoriesRejectUnknownOptions(t *testing.T) {
	tgt := Target{Endpoints: []Endpoint{{Name: "n1", Addr: "127.0.0.1:1"}}, Options: map[string]string{"bogus": "1"}}
	for _, a := range Algorithms() {
		t.Run(a.Name, func(t *testing.T) {
			l, err := a.New(t.Context(), tgt)
			if err == nil {
				l.Close()
				t.Fatal("factory accepted an unknown option")
			}
			if !errors.Is(err, ErrBadOption) {
				t.Fatalf("error = %v, want ErrBadOption", err)
			}
		})
	}
}

// TestCheckCapabilities checks a scenario's needs against the declarations
// before anything starts: a capability the algorithm lacks is an error that
// names the field and the algorithms that have it; one the client decides
// passes.
func TestCheckCapabilities(t *testing.T) {
	tests := []struct {
		name      string
		algorithm string
		needs     []Need
		wantErr   string
	}{
		{"declared", "redis-single", []Need{{CapRenew, "lock.renew"}, {CapWait, "lock.acquire"}}, ""},
		{"missing", "redis-zadd-mutex", []Need{{CapWait, "lock.acquire"}, {CapRenew, "lock.renew"}},
			"lock.renew: clients: missing capability: redis-zadd-mutex cannot renew a lease (algorithms that can: redis-single, "},
		{"guarded", "redlock", []Need{{CapGuarded, "resource"}}, "redlock cannot keep the register in its own system"},
		{"decided by the client", ExecAlgorithm, []Need{{CapRenew, "lock.renew"}, {CapInCall, "client-pause"}}, ""},
		{"in-call", "etcd-mutex", []Need{{CapInCall, "client-pause"}}, "(algorithms that can: exec)"},
		{"none", "pg-state", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCapabilities(tt.algorithm, tt.needs)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrMissingCapability) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want ErrMissingCapability containing %q", err, tt.wantErr)
			}
		})
	}
	// The algorithms the error names as able are the ones whose
	// declarations say so, every one of them and no other.
	err := CheckCapabilities("redis-zadd-mutex", []Need{{CapRenew, "lock.renew"}})
	for _, a := range Algorithms() {
		named := strings.Contains(err.Error(), " "+a.Name+",") || strings.Contains(err.Error(), " "+a.Name+")")
		if can := a.Capabilities[CapRenew] != Without; named != can {
			t.Errorf("%s named as able to renew: %v, declared able: %v (%v)", a.Name, named, can, err)
		}
	}
	if err := CheckCapabilities("no-such-lock", nil); !errors.Is(err, ErrUnknownAlgorithm) {
		t.Errorf("an unknown algorithm: %v", err)
	}
}

func TestRedlockOutcome(t *testing.T) {
	g, x, u := voteGranted, voteTaken, voteUnknown
	tests := []struct {
		name     string
		votes    []redlockVote
		validity time.Duration
		want     string // "ok", "fail" (ErrNotAcquired) or "info"
	}{
		{"all granted", []redlockVote{g, g, g, g, g}, time.Second, "ok"},
		{"bare quorum", []redlockVote{g, g, g, x, x}, time.Second, "ok"},
		{"quorum with silent masters", []redlockVote{g, g, g, u, u}, time.Second, "ok"},
		{"minority, all answered", []redlockVote{g, g, x, x, x}, time.Second, "fail"},
		{"minority, silent masters cannot complete quorum", []redlockVote{g, u, x, x, x}, time.Second, "fail"},
		{"minority, silent masters could complete quorum", []redlockVote{g, g, u, x, x}, time.Second, "info"},
		{"none answered", []redlockVote{u, u, u}, time.Second, "info"},
		{"quorum too late, all answered: held until the unlock", []redlockVote{g, g, g, x, x}, 0, "info"},
		{"quorum too late, some silent", []redlockVote{g, g, g, u, x}, -time.Millisecond, "info"},
		{"single master taken", []redlockVote{x}, time.Second, "fail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := redlockOutcome(tt.votes, tt.validity)
			got := "info"
			switch {
			case err == nil:
				got = "ok"
			case errors.Is(err, ErrNotAcquired):
				got = "fail"
			case !errors.Is(err, ErrOutcomeUnknown):
				t.Fatalf("indeterminate error %v does not wrap ErrOutcomeUnknown", err)
			}
			if got != tt.want {
				t.Fatalf("outcome %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}

func TestRedsyncAnswers(t *testing.T) {
	tests := []struct {
		name                  string
		err                   error
		taken, failed         int
		quorumTaken, definite bool // definite: classifyAcquire over 5 masters gives ErrNotAcquired
	}{
		{name: "failed without a reason: a quorum too late, or a wait that ended", err: redsync.ErrFailed, definite: false},
		{name: "quorum taken", err: &redsync.ErrTaken{Nodes: []int{0, 1, 2}}, quorumTaken: true, definite: true},
		{name: "two taken, three granted too late", err: errors.Join(&redsync.ErrNodeTaken{Node: 0}, &redsync.ErrNodeTaken{Node: 1}), taken: 2, definite: false},
		{name: "three taken, one failed", err: errors.Join(&redsync.ErrNodeTaken{Node: 0}, &redsync.ErrNodeTaken{Node: 1}, &redsync.ErrNodeTaken{Node: 2}, &redsync.RedisError{Node: 3, Err: errors.New("i/o timeout")}), taken: 3, failed: 1, definite: true},
		{name: "network errors could hide a quorum",
			err:   errors.Join(&redsync.ErrNodeTaken{Node: 0}, &redsync.RedisError{Node: 1, Err: errors.New("i/o timeout")}, &redsync.RedisError{Node: 2, Err: errors.New("i/o timeout")}),
			taken: 1, failed: 2, definite: false},
		{name: "network errors cannot make a quorum",
			err:   errors.Join(&redsync.ErrNodeTaken{Node: 0}, &redsync.ErrNodeTaken{Node: 1}, &redsync.ErrNodeTaken{Node: 2}, &redsync.RedisError{Node: 3, Err: errors.New("refused")}),
			taken: 3, failed: 1, definite: true},
	}
	r := &Redsync{nodes: 5}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taken, failed, _, quorumTaken := redsyncAnswers(tt.err)
			if taken != tt.taken || failed != tt.failed || quorumTaken != tt.quorumTaken {
				t.Fatalf("redsyncAnswers = %d, %d, %v; want %d, %d, %v", taken, failed, quorumTaken, tt.taken, tt.failed, tt.quorumTaken)
			}
			err := r.classifyAcquire("k", tt.err)
			if got := errors.Is(err, ErrNotAcquired); got != tt.definite {
				t.Fatalf("classifyAcquire = %v; definite %v, want %v", err, got, tt.definite)
			}
			if !tt.definite && !errors.Is(err, ErrOutcomeUnknown) {
				t.Fatalf("indeterminate error %v does not wrap ErrOutcomeUnknown", err)
			}
		})
	}
}

func TestZaddSlot(t *testing.T) {
	tests := []struct {
		name      string
		now       time.Time
		ttl       time.Duration
		wantScore int64
		wantLeft  time.Duration
	}{
		{"seed hourly example", time.Unix(1445412480, 0), time.Hour, 401503, 1920 * time.Second},
		{"seed daily example", time.Unix(1445412480, 0), 24 * time.Hour, 16729, 59520 * time.Second},
		{"slot start", time.UnixMilli(10_000), time.Second, 10, time.Second},
		{"slot end", time.UnixMilli(10_999), time.Second, 10, time.Millisecond},
		{"before 1970 floors", time.UnixMilli(-1), time.Second, -1, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			score, left := zaddSlot(tt.now, tt.ttl)
			if score != tt.wantScore || left != tt.wantLeft {
				t.Fatalf("zaddSlot = %d, %v; want %d, %v", score, left, tt.wantScore, tt.wantLeft)
			}
		})
	}
}

func TestZKPredecessor(t *testing.T) {
	children := []string{
		"_c_aaaa-lock-0000000007",
		"_c_bbbb-lock-0000000003",
		"_c_cccc-lock-0000000010",
		"_c_dddd-lock-0000000005",
		"not-a-lock-node",
	}
	tests := []struct {
		name, ours, want string
	}{
		{"lowest", "_c_bbbb-lock-0000000003", ""},
		{"next", "_c_dddd-lock-0000000005", "_c_bbbb-lock-0000000003"},
		{"highest", "_c_cccc-lock-0000000010", "_c_aaaa-lock-0000000007"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := zkPredecessor(children, tt.ours)
			if err != nil || got != tt.want {
				t.Fatalf("zkPredecessor = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	if _, err := zkPredecessor(children, "short"); err == nil {
		t.Error("a name without a sequence was accepted")
	}
}

func TestEtcdLeaseSeconds(t *testing.T) {
	tests := []struct {
		ttl  time.Duration
		want int64
	}{
		{time.Millisecond, 1}, {time.Second, 1}, {1001 * time.Millisecond, 2}, {10 * time.Second, 10},
	}
	for _, tt := range tests {
		t.Run(tt.ttl.String(), func(t *testing.T) {
			if got := etcdLeaseSeconds(tt.ttl); got != tt.want {
				t.Fatalf("etcdLeaseSeconds(%v) = %d, want %d", tt.ttl, got, tt.want)
			}
		})
	}
}

func TestOwnerValuesAreRandomPerAcquisitionAndReplayable(t *testing.T) {
	a := ownerValues{worker: 3, rand: newTestRand(7)}
	b := ownerValues{worker: 3, rand: newTestRand(7)}
	first, second := a.next(), a.next()
	if first == second {
		t.Fatalf("two acquisitions got the same value %q", first)
	}
	if replay := b.next(); replay != first {
		t.Fatalf("same seed gave %q then %q", first, replay)
	}
	if !strings.HasPrefix(first, "w3-") || len(first) != len("w3-")+32 {
		t.Fatalf("value %q has the wrong shape", first)
	}
}

// newTestRand is a seeded source for tests.
func newTestRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

// TestRedsyncReleaseOutcome checks when an unlock that redsync did not
// report done failed, changing nothing (every master said the key was not
// ours or was gone), and when its outcome is unknown (a master may have
// deleted it).
func TestRedsyncReleaseOutcome(t *testing.T) {
	lost := errors.New("i/o timeout")
	tests := []struct {
		name string
		err  error
		want string // "fail" (ErrNotHeld) or "info"
	}{
		{"a quorum taken, the others unheard of", &redsync.ErrTaken{Nodes: []int{2, 3, 4}}, "info"},
		{"every master taken", &redsync.ErrTaken{Nodes: []int{0, 1, 2, 3, 4}}, "fail"},
		{"two deleted it, three taken (a quorum, reported alone)", &redsync.ErrTaken{Nodes: []int{2, 4, 3}}, "info"},
		{"taken and gone on every master",
			errors.Join(&redsync.ErrNodeTaken{Node: 0}, &redsync.ErrNodeTaken{Node: 1}, redsync.ErrLockAlreadyExpired, redsync.ErrLockAlreadyExpired, redsync.ErrLockAlreadyExpired), "fail"},
		{"two taken, two gone, one deleted it",
			errors.Join(&redsync.ErrNodeTaken{Node: 0}, &redsync.ErrNodeTaken{Node: 1}, redsync.ErrLockAlreadyExpired, redsync.ErrLockAlreadyExpired), "info"},
		{"two taken, three silent",
			errors.Join(&redsync.ErrNodeTaken{Node: 0}, &redsync.ErrNodeTaken{Node: 1}, &redsync.RedisError{Node: 2, Err: lost}, &redsync.RedisError{Node: 3, Err: lost}, &redsync.RedisError{Node: 4, Err: lost}), "info"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := redsyncReleaseOutcome("k", 5, tt.err)
			got := "info"
			if errors.Is(err, ErrNotHeld) {
				got = "fail"
			}
			if got != tt.want {
				t.Fatalf("outcome %s (%v), want %s", got, err, tt.want)
			}
		})
	}
}

func TestRedlockReleaseOutcome(t *testing.T) {
	lost := errors.New("i/o timeout")
	tests := []struct {
		name    string
		masters int
		deleted int
		errs    []error
		want    string // "ok", "fail" (ErrNotHeld) or "info"
	}{
		{"every master deleted it", 5, 5, nil, "ok"},
		{"a bare quorum deleted it", 5, 3, nil, "ok"},
		{"a quorum deleted it, others silent", 5, 3, []error{lost, lost}, "ok"},
		// A release that deleted the key on a minority may have freed the
		// lock: its holder's other keys may have expired.
		{"one master deleted it, all answered", 5, 1, nil, "info"},
		{"two masters deleted it, all answered", 5, 2, nil, "info"},
		{"a minority deleted it, silent masters could make a quorum", 5, 2, []error{lost}, "info"},
		{"a minority deleted it, silent masters could not make a quorum", 5, 1, []error{lost}, "info"},
		{"none deleted it, one silent master may have", 5, 0, []error{lost}, "info"},
		{"none answered", 3, 0, []error{lost, lost, lost}, "info"},
		{"none held it, all answered", 5, 0, nil, "fail"},
		{"single master, not ours", 1, 0, nil, "fail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := redlockReleaseOutcome("k", tt.masters, tt.deleted, tt.errs)
			got := "info"
			switch {
			case err == nil:
				got = "ok"
			case errors.Is(err, ErrNotHeld):
				got = "fail"
			}
			if got != tt.want {
				t.Fatalf("outcome %s (%v), want %s", got, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "%!") {
				t.Errorf("malformed message: %v", err)
			}
		})
	}
}

// TestExecOptions checks the exec algorithm's options: the command is
// required, and every other option goes to the client unchecked.
func TestExecOptions(t *testing.T) {
	if err := CheckOptions(ExecAlgorithm, map[string]string{"session-timeout": "1s"}); !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), "command is required") {
		t.Errorf("no command: %v, want ErrBadOption naming the command", err)
	}
	if err := CheckOptions(ExecAlgorithm, map[string]string{ExecCommandOption: "true", "anything": "goes"}); err != nil {
		t.Errorf("a command and a client option: %v", err)
	}
	a, err := Lookup(ExecAlgorithm)
	if err != nil || len(a.Options) != 1 || a.Options[0].Name != ExecCommandOption || !a.Options[0].Required() || a.OtherOptions == "" {
		t.Errorf("declared options %+v, %v: want the command alone, required, and the others handed on", a.Options, err)
	}
}
