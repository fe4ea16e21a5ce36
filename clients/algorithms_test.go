package clients

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
)

func TestAlgorithmsListIsComplete(t *testing.T) {
	want := []string{"redis-single", "redis-fenced", "redlock", "redsync",
		"redis-zadd-mutex", "redis-zadd-timeout", "redis-zadd-state",
		"pg-mutex", "pg-timeout", "pg-state", "pg-unique-row", "pg-advisory",
		"zk-recipe", "zk-lock", "etcd-mutex", "exec"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	systems := []string{systemRedis, systemPostgres, systemZooKeeper, systemEtcd, "any"}
	for _, a := range Algorithms() {
		if !slices.Contains(systems, a.System) || a.Token == "" || a.Validity == "" || len(a.Steps) == 0 || a.New == nil {
			t.Errorf("%s: incomplete description %+v", a.Name, a)
		}
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
// the options AlgorithmOptions documents and accepts their defaults.
//
// The exec algorithm is checked by TestExecOptions: it hands every option
// but its command to the client.
func TestAlgorithmOptionsMatchFactories(t *testing.T) {
	for _, a := range Algorithms() {
		if a.Name == ExecAlgorithm {
			continue
		}
		t.Run(a.Name, func(t *testing.T) {
			docs, err := AlgorithmOptions(a.Name)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			defaults := map[string]string{}
			for _, d := range docs {
				names = append(names, d.Name)
				defaults[d.Name] = d.Default
			}
			slices.Sort(names)
			_, err = a.New(t.Context(), Target{Endpoints: []Endpoint{{Addr: "127.0.0.1:1"}}, Options: map[string]string{"bogus": "1"}})
			if want := "(known: " + strings.Join(names, ", ") + ")"; err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("unknown-option error %v does not list %s", err, want)
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
	if _, err := AlgorithmOptions("nope"); !errors.Is(err, ErrUnknownAlgorithm) {
		t.Errorf("AlgorithmOptions(nope) error = %v", err)
	}
}

func TestOptionReader(t *testing.T) {
	tests := []struct {
		name    string
		options map[string]string
		want    time.Duration
		wantErr string
	}{
		{name: "default", options: nil, want: 50 * time.Millisecond},
		{name: "set", options: map[string]string{"node-timeout": "20ms"}, want: 20 * time.Millisecond},
		{name: "unparsable", options: map[string]string{"node-timeout": "soon"}, wantErr: `option node-timeout="soon"`},
		{name: "negative", options: map[string]string{"node-timeout": "-1s"}, wantErr: "must not be negative"},
		{name: "unknown", options: map[string]string{"node-timeuot": "1s"}, wantErr: "unknown node-timeuot (known: node-timeout)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newOptionReader("redlock", tt.options)
			got := r.duration("node-timeout", 50*time.Millisecond)
			err := r.done()
			if tt.wantErr != "" {
				if !errors.Is(err, ErrBadOption) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want ErrBadOption containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
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
			taken, failed, quorumTaken := redsyncAnswers(tt.err)
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
		{"one master deleted it, all answered", 5, 1, nil, "fail"},
		{"a minority deleted it, silent masters could make a quorum", 5, 2, []error{lost}, "info"},
		{"a minority deleted it, silent masters could not make a quorum", 5, 1, []error{lost}, "fail"},
		{"none answered", 3, 0, []error{lost, lost, lost}, "info"},
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
	docs, err := AlgorithmOptions(ExecAlgorithm)
	if err != nil || len(docs) != 1 || docs[0].Name != ExecCommandOption {
		t.Errorf("documented options %v, %v: want the command alone", docs, err)
	}
}
