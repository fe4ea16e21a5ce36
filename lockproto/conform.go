package lockproto

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Check is the outcome of one conformance check.
type Check struct {
	Name   string // what was checked
	Passed bool
	Detail string // what was seen
}

// ConformConfig is what Conform needs: how to start a process (Config, of
// which Init.Worker, Init.Process and Init.Seed are set per process) and
// the ttl of its locks.
type ConformConfig struct {
	Config Config
	// TTL is the lease asked for; zero is 5 s.
	TTL time.Duration
	// Key is the lock's name; "" is "protocol-test".
	Key string
	// Seed is the test's seed, from which each process's own is drawn
	// (ProcessSeed); zero is 1.
	Seed uint64
}

// ProcessSeed returns process's own seed, drawn from seed: two processes
// of one test (or one run) never share one, so that owners drawn from
// their seeds differ.
func ProcessSeed(seed uint64, process int) uint64 {
	return rand.New(rand.NewPCG(seed, uint64(process)+1)).Uint64()
}

// Lease bounds of a grant that is not a session's (docs/lock-protocol.md
// §4, "protocol-test"): its lease_ms lies between the ttl asked divided
// by leaseFactor and the ttl times leaseFactor plus leaseRounding (a
// service that grants whole seconds, or a minimum of its own, as etcd
// does). A lease in seconds (1000 times too short) or in microseconds
// (1000 times too long) lies outside.
const (
	leaseFactor   = 10
	leaseRounding = time.Second
)

// conformance is one run of the conformance checks: the checks so far, the
// two processes, and what the grants showed.
type conformance struct {
	ctx    context.Context
	cc     ConformConfig
	checks []Check
	a, b   *Process
	// seeds are the processes' seeds.
	seeds [2]uint64
	// grants counts the oks to acquires and renewals; badGrants says
	// which broke the window of until_ms or the bounds of lease_ms.
	grants    int
	badGrants []string
	// acquired counts the oks to acquires from a client that claimed
	// after-response; unmarked those without their handshake.
	acquired, unmarked int
}

// Conform checks a client against the protocol with real servers behind
// it, in the manner of Maelstrom's checks: init and its fields; an
// acquire; a second process refused the held lock; a release, and the
// lock taken by the second process, under an owner of its own; not-held
// for a lease that is gone; renewal and waiting where the client claims
// them; the after-response handshake before every granted acquire where
// the client claims it; every until_ms within its call's window and every
// lease_ms a lease in ms; ids and reply types on every call; a clean exit
// at the end of input; and no reply later than the call's timeout. It
// returns every check in order; it stops at the first check that leaves
// nothing to go on with.
func Conform(ctx context.Context, cc ConformConfig) []Check {
	if cc.TTL <= 0 {
		cc.TTL = 5 * time.Second
	}
	if cc.Key == "" {
		cc.Key = "protocol-test"
	}
	if cc.Seed == 0 {
		cc.Seed = 1
	}
	c := &conformance{ctx: ctx, cc: cc}
	if !c.startBoth() {
		return c.checks
	}
	defer c.a.Kill()
	defer c.b.Kill()
	if c.exclusion() {
		c.renewal()
		c.waiting()
	}
	c.grantChecks()
	for i, p := range []*Process{c.a, c.b} {
		err := p.Close(DefaultExitGrace)
		c.add(fmt.Sprintf("exit: process %d exits with status 0 at the end of its input", i), err, "")
	}
	return c.checks
}

// add appends a check that passed when err is nil; err is its detail
// otherwise.
func (c *conformance) add(name string, err error, detail string) bool {
	ch := Check{Name: name, Passed: err == nil, Detail: detail}
	if err != nil {
		ch.Detail = err.Error()
	}
	c.checks = append(c.checks, ch)
	return err == nil
}

// start starts process number process with its own seed.
func (c *conformance) start(process int) (*Process, error) {
	cfg := c.cc.Config
	cfg.Init.Worker, cfg.Init.Process = process, process
	cfg.Init.Seed = ProcessSeed(c.cc.Seed, process)
	c.seeds[process] = cfg.Init.Seed
	return Start(c.ctx, cfg)
}

// startBoth starts both processes before the first lock is taken, so
// that no start-up eats into its lease.
func (c *conformance) startBoth() bool {
	a, err := c.start(0)
	if !c.add("init: the client starts and answers init with init_ok (now_ms, wall_ms, client, abilities)", err, "") {
		return false
	}
	c.a = a
	c.checks[len(c.checks)-1].Detail = fmt.Sprintf("client %q, abilities %v, clock mapped within %v", a.Client(), a.Abilities(), a.ClockBound())
	wall := time.UnixMilli(int64(a.WallMS()))
	c.add("init: wall_ms is the wall clock", within(wall, time.Now(), time.Minute), wall.UTC().Format(time.RFC3339Nano))
	b, err := c.start(1)
	if !c.add("init: a second process starts", err, fmt.Sprintf("seeds %d and %d", c.seeds[0], c.seeds[1])) {
		a.Kill()
		return false
	}
	c.b = b
	return true
}

// call makes one call with the checks' timeout, and checks every grant it
// returns (grant).
func (c *conformance) call(p *Process, req Request) (Reply, error) {
	cctx, cancel := context.WithTimeout(c.ctx, c.cc.TTL+time.Second)
	defer cancel()
	sent := time.Now()
	rep, err := p.Call(cctx, req, Hooks{})
	if err == nil && rep.Type == TypeOK && (req.Type == TypeAcquire || req.Type == TypeRenew) {
		c.grant(p, req, rep, sent, time.Now())
	}
	return rep, err
}

// grant notes what an ok to an acquire or renewal shows: its until_ms
// within the call's window, its lease_ms within the lease bounds, and for
// an acquire of a client that claimed after-response, its handshake.
func (c *conformance) grant(p *Process, req Request, rep Reply, sent, received time.Time) {
	c.grants++
	if req.Type == TypeAcquire && p.Has(AbilityAfterResponse) {
		c.acquired++
		if rep.Unmarked {
			c.unmarked++
		}
	}
	ttl := msDuration(req.TTLMS)
	var problems []string
	if err := untilWindow(p, rep, ttl, sent, received); err != nil {
		problems = append(problems, err.Error())
	}
	if err := leaseBounds(rep, ttl); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		c.badGrants = append(c.badGrants, fmt.Sprintf("%s id %d (%s): %s", req.Type, req.ID, describe(rep), strings.Join(problems, "; ")))
	}
}

// untilWindow checks that a grant's until_ms, mapped onto the harness's
// clock (§3), lies within the call's window: no earlier than the moment
// the request was written less the mapping's bound, no later than the
// moment the reply was read plus the lease (the longer of the ttl asked
// and the lease_ms granted).
func untilWindow(p *Process, rep Reply, ttl time.Duration, sent, received time.Time) error {
	if rep.UntilMS == nil {
		return nil
	}
	until := p.Time(*rep.UntilMS)
	lease := ttl
	if rep.LeaseMS != nil {
		lease = max(lease, msDuration(*rep.LeaseMS))
	}
	from, to := sent.Add(-p.ClockBound()), received.Add(lease)
	switch {
	case until.Before(from):
		return fmt.Errorf("until_ms %g lies %v before the request was written: a moment on the client's monotonic clock in ms since it read init is no earlier than that", *rep.UntilMS, from.Sub(until).Round(time.Millisecond))
	case until.After(to):
		return fmt.Errorf("until_ms %g lies %v after the reply plus the lease %v: a moment on the client's monotonic clock in ms since it read init, not the wall clock, is no later than that", *rep.UntilMS, until.Sub(to).Round(time.Millisecond), lease)
	}
	return nil
}

// leaseBounds checks that a grant's lease_ms, unless it is a session's
// (whose lease is the timeout the session was made with, not the ttl
// asked), lies within the lease bounds of the ttl asked.
func leaseBounds(rep Reply, ttl time.Duration) error {
	if rep.LeaseMS == nil || rep.Session {
		return nil
	}
	lease := msDuration(*rep.LeaseMS)
	lo, hi := ttl/leaseFactor, ttl*leaseFactor+leaseRounding
	if lease < lo || lease > hi {
		return fmt.Errorf("lease_ms %g is not a lease of the ttl asked (%v) in ms: it lies outside [%v, %v]", *rep.LeaseMS, ttl, lo, hi)
	}
	return nil
}

// grantChecks adds the checks of what every grant showed.
func (c *conformance) grantChecks() {
	var err error
	if len(c.badGrants) > 0 {
		err = errors.New(strings.Join(c.badGrants, "\n  "))
	}
	c.add("grants: every until_ms lies within its call's window and every lease_ms is a lease of the ttl asked, in ms", err, fmt.Sprintf("%d grants", c.grants))
	if !c.a.Has(AbilityAfterResponse) {
		return
	}
	err = nil
	if c.unmarked > 0 {
		err = fmt.Errorf("%d of %d granted acquires came without an after-response handshake, though the client claims the ability: a pause armed there never fires", c.unmarked, c.acquired)
	}
	c.add("after-response: every granted acquire sends its handshake before its ok", err, fmt.Sprintf("%d granted acquires", c.acquired))
}

// want returns an error unless the call returned one of types.
func want(rep Reply, err error, types ...string) error {
	if err != nil {
		return err
	}
	for _, t := range types {
		if rep.Type == t {
			return nil
		}
	}
	return fmt.Errorf("got %q (%s), want %v", rep.Type, rep.Message, types)
}

// exclusion checks the lock's exclusion between the two processes: a
// grant, a refusal, a release, the other's grant under an owner of its
// own, and not-held for the lease that is gone. It reports whether the
// first holder released the lock (a lock that frees itself answers
// no-op).
func (c *conformance) exclusion() bool {
	key, ttl := c.cc.Key, ms(c.cc.TTL)
	held, err := c.call(c.a, Request{Type: TypeAcquire, Key: key, TTLMS: ttl})
	if !c.add("acquire: a free lock is granted (ok with owner)", want(held, err, TypeOK), describe(held)) {
		return false
	}
	rep, err := c.call(c.b, Request{Type: TypeAcquire, Key: key, TTLMS: ttl})
	c.add("acquire: a held lock is refused to another process (not-acquired)", want(rep, err, TypeNotAcquired), describe(rep))
	rep, err = c.call(c.a, Request{Type: TypeRelease, Key: key, Owner: *held.Owner, Token: token(held)})
	released := err == nil && rep.Type == TypeOK
	c.add("release: the holder releases (ok; no-op for a lock that frees itself)", want(rep, err, TypeOK, TypeNoOp), describe(rep))
	if !released {
		return false
	}
	got, err := c.call(c.b, Request{Type: TypeAcquire, Key: key, TTLMS: ttl})
	if c.add("acquire: the released lock is granted to the other process", want(got, err, TypeOK), describe(got)) {
		var same error
		if *got.Owner == *held.Owner {
			same = fmt.Errorf("both processes were granted the lock as owner %q, though their seeds differ (%d, %d): a release by one would free the other's lock", *got.Owner, c.seeds[0], c.seeds[1])
		}
		c.add("owner: the two processes' grants have owners of their own", same, fmt.Sprintf("%q and %q", *held.Owner, *got.Owner))
		rep, err = c.call(c.b, Request{Type: TypeRelease, Key: key, Owner: *got.Owner, Token: token(got)})
		c.add("release: the second holder releases", want(rep, err, TypeOK), describe(rep))
	}
	rep, err = c.call(c.a, Request{Type: TypeRelease, Key: key, Owner: *held.Owner, Token: token(held)})
	c.add("release: a lease that is gone is not-held", want(rep, err, TypeNotHeld), describe(rep))
	return true
}

// renewal checks renewal, for a client that claims it.
func (c *conformance) renewal() {
	if !c.a.Has(AbilityRenew) {
		return
	}
	key, ttl := c.cc.Key, ms(c.cc.TTL)
	got, err := c.call(c.a, Request{Type: TypeAcquire, Key: key, TTLMS: ttl})
	if !c.add("renew: acquire for the renewal", want(got, err, TypeOK), describe(got)) {
		return
	}
	rep, err := c.call(c.a, Request{Type: TypeRenew, Key: key, Owner: *got.Owner, Token: token(got), TTLMS: ttl})
	c.add("renew: a held lease is renewed (ok)", want(rep, err, TypeOK), describe(rep))
	rep, err = c.call(c.a, Request{Type: TypeRelease, Key: key, Owner: *got.Owner, Token: token(got)})
	c.add("renew: release", want(rep, err, TypeOK), describe(rep))
	rep, err = c.call(c.a, Request{Type: TypeRenew, Key: key, Owner: *got.Owner, Token: token(got), TTLMS: ttl})
	c.add("renew: a released lease is not-held", want(rep, err, TypeNotHeld), describe(rep))
}

// waiting checks a waiting acquire, for a client that claims it: granted
// once the holder releases, not before.
func (c *conformance) waiting() {
	if !c.b.Has(AbilityWait) {
		return
	}
	key, ttl := c.cc.Key, ms(c.cc.TTL)
	got, err := c.call(c.a, Request{Type: TypeAcquire, Key: key, TTLMS: ttl})
	if !c.add("wait: acquire for the wait", want(got, err, TypeOK), describe(got)) {
		return
	}
	free := time.AfterFunc(500*time.Millisecond, func() {
		_, _ = c.call(c.a, Request{Type: TypeRelease, Key: key, Owner: *got.Owner, Token: token(got)})
	})
	// a is spoken to by the timer alone until it fired.
	began := time.Now()
	rep, err := c.call(c.b, Request{Type: TypeAcquire, Key: key, TTLMS: ttl, WaitMS: 3000})
	free.Stop()
	waited := time.Since(began)
	if err == nil && rep.Type == TypeOK && waited < 400*time.Millisecond {
		err = fmt.Errorf("granted after %v, before the holder released at 500ms", waited.Round(time.Millisecond))
	}
	c.add("wait: a waiting acquire gets the lock once the holder releases it", want(rep, err, TypeOK), fmt.Sprintf("%s after %v", describe(rep), waited.Round(time.Millisecond)))
	if err == nil && rep.Type == TypeOK {
		r2, err := c.call(c.b, Request{Type: TypeRelease, Key: key, Owner: *rep.Owner, Token: token(rep)})
		c.add("wait: release", want(r2, err, TypeOK), describe(r2))
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func token(r Reply) uint64 {
	if r.Token == nil {
		return 0
	}
	return *r.Token
}

func describe(r Reply) string {
	s := r.Type
	if r.Owner != nil {
		s += " owner=" + *r.Owner
	}
	if r.Token != nil {
		s += fmt.Sprintf(" token=%d", *r.Token)
	}
	if r.UntilMS != nil {
		s += fmt.Sprintf(" until_ms=%g", *r.UntilMS)
	}
	if r.LeaseMS != nil {
		s += fmt.Sprintf(" lease_ms=%g", *r.LeaseMS)
	}
	if r.Never {
		s += " never"
	}
	if r.Session {
		s += " session"
	}
	if r.Message != "" {
		s += " (" + r.Message + ")"
	}
	return s
}

func within(a, b time.Time, d time.Duration) error {
	if a.Sub(b) > d || b.Sub(a) > d {
		return errors.New("off the host's clock by " + a.Sub(b).Round(time.Second).String())
	}
	return nil
}
