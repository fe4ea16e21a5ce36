package lockproto

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Check is the outcome of one conformance check.
type Check struct {
	Name   string // what was checked
	Passed bool
	Detail string // what was seen
}

// ConformConfig is what Conform needs: how to start a process (Config, of
// which Init.Worker and Init.Process are set per process) and the ttl of
// its locks.
type ConformConfig struct {
	Config Config
	// TTL is the lease asked for; zero is 5 s.
	TTL time.Duration
	// Key is the lock's name; "" is "protocol-test".
	Key string
}

// Conform checks a client against the protocol with real servers behind
// it, in the manner of Maelstrom's checks: init and its fields; an
// acquire; a second process refused the held lock; a release, and the
// lock taken by the second process; not-held for a lease that is gone;
// renewal and waiting where the client claims them; ids and reply types on
// every call; a clean exit at the end of input; and no reply later than
// the call's timeout. It returns every check in order; it stops at the
// first check that leaves nothing to go on with.
func Conform(ctx context.Context, cc ConformConfig) []Check {
	if cc.TTL <= 0 {
		cc.TTL = 5 * time.Second
	}
	if cc.Key == "" {
		cc.Key = "protocol-test"
	}
	var checks []Check
	add := func(name string, err error, detail string) bool {
		c := Check{Name: name, Passed: err == nil, Detail: detail}
		if err != nil {
			c.Detail = err.Error()
		}
		checks = append(checks, c)
		return err == nil
	}
	start := func(process int) (*Process, error) {
		cfg := cc.Config
		cfg.Init.Worker, cfg.Init.Process = process, process
		return Start(ctx, cfg)
	}
	a, err := start(0)
	if !add("init: the client starts and answers init with init_ok (now_ms, wall_ms, client, abilities)", err, "") {
		return checks
	}
	defer a.Kill()
	checks[len(checks)-1].Detail = fmt.Sprintf("client %q, abilities %v, clock mapped within %v", a.Client(), a.Abilities(), a.ClockBound())
	wall := time.UnixMilli(int64(a.WallMS()))
	add("init: wall_ms is the wall clock", within(wall, time.Now(), time.Minute), wall.UTC().Format(time.RFC3339Nano))

	timeout := cc.TTL + time.Second
	call := func(p *Process, req Request) (Reply, error) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return p.Call(cctx, req, Hooks{})
	}
	want := func(rep Reply, err error, types ...string) error {
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
	// Both processes are up before the first lock is taken, so that no
	// start-up eats into its lease.
	b, err := start(1)
	if !add("init: a second process starts", err, "") {
		return checks
	}
	defer b.Kill()
	ttl := float64(cc.TTL) / float64(time.Millisecond)
	held, err := call(a, Request{Type: TypeAcquire, Key: cc.Key, TTLMS: ttl})
	if !add("acquire: a free lock is granted (ok with owner)", want(held, err, TypeOK), describe(held)) {
		return checks
	}
	rep, err := call(b, Request{Type: TypeAcquire, Key: cc.Key, TTLMS: ttl})
	add("acquire: a held lock is refused to another process (not-acquired)", want(rep, err, TypeNotAcquired), describe(rep))
	rep, err = call(a, Request{Type: TypeRelease, Key: cc.Key, Owner: *held.Owner, Token: token(held)})
	released := rep.Type == TypeOK
	add("release: the holder releases (ok; no-op for a lock that frees itself)", want(rep, err, TypeOK, TypeNoOp), describe(rep))
	if released {
		got, err := call(b, Request{Type: TypeAcquire, Key: cc.Key, TTLMS: ttl})
		if add("acquire: the released lock is granted to the other process", want(got, err, TypeOK), describe(got)) {
			rep, err = call(b, Request{Type: TypeRelease, Key: cc.Key, Owner: *got.Owner, Token: token(got)})
			add("release: the second holder releases", want(rep, err, TypeOK), describe(rep))
		}
		rep, err = call(a, Request{Type: TypeRelease, Key: cc.Key, Owner: *held.Owner, Token: token(held)})
		add("release: a lease that is gone is not-held", want(rep, err, TypeNotHeld), describe(rep))
	}
	if a.Has(AbilityRenew) && released {
		got, err := call(a, Request{Type: TypeAcquire, Key: cc.Key, TTLMS: ttl})
		if add("renew: acquire for the renewal", want(got, err, TypeOK), describe(got)) {
			rep, err = call(a, Request{Type: TypeRenew, Key: cc.Key, Owner: *got.Owner, Token: token(got), TTLMS: ttl})
			add("renew: a held lease is renewed (ok)", want(rep, err, TypeOK), describe(rep))
			rep, err = call(a, Request{Type: TypeRelease, Key: cc.Key, Owner: *got.Owner, Token: token(got)})
			add("renew: release", want(rep, err, TypeOK), describe(rep))
			rep, err = call(a, Request{Type: TypeRenew, Key: cc.Key, Owner: *got.Owner, Token: token(got), TTLMS: ttl})
			add("renew: a released lease is not-held", want(rep, err, TypeNotHeld), describe(rep))
		}
	}
	if b.Has(AbilityWait) && released {
		got, err := call(a, Request{Type: TypeAcquire, Key: cc.Key, TTLMS: ttl})
		if add("wait: acquire for the wait", want(got, err, TypeOK), describe(got)) {
			free := time.AfterFunc(500*time.Millisecond, func() {
				_, _ = call(a, Request{Type: TypeRelease, Key: cc.Key, Owner: *got.Owner, Token: token(got)})
			})
			// a is spoken to by the timer alone until it fired.
			began := time.Now()
			rep, err = call(b, Request{Type: TypeAcquire, Key: cc.Key, TTLMS: ttl, WaitMS: 3000})
			free.Stop()
			waited := time.Since(began)
			if err == nil && rep.Type == TypeOK && waited < 400*time.Millisecond {
				err = fmt.Errorf("granted after %v, before the holder released at 500ms", waited.Round(time.Millisecond))
			}
			add("wait: a waiting acquire gets the lock once the holder releases it", want(rep, err, TypeOK), fmt.Sprintf("%s after %v", describe(rep), waited.Round(time.Millisecond)))
			if err == nil && rep.Type == TypeOK {
				r2, err := call(b, Request{Type: TypeRelease, Key: cc.Key, Owner: *rep.Owner, Token: token(rep)})
				add("wait: release", want(r2, err, TypeOK), describe(r2))
			}
		}
	}
	for i, p := range []*Process{a, b} {
		err := p.Close(DefaultExitGrace)
		add(fmt.Sprintf("exit: process %d exits with status 0 at the end of its input", i), err, "")
	}
	return checks
}

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
