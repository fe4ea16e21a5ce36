// Package synth generates synthetic histories: a simulated correct lock with
// leases, several workers and keys, unknown outcomes and fenced writes, run in
// virtual time; unknown outcomes come at random (InfoRate) or from faults
// (Faults: kills, partitions, waiting acquires that time out, renewals lost
// in flight; UnknownRich draws a history rich in them). Its histories are valid by construction, so checkers must
// find nothing in them; Inject then plants one known violation. The package
// serves the checker's tests, its benchmarks, and anyone who needs a large
// realistic history (WriteFile).
package synth

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// Options shape a synthetic history. Zero fields take the documented
// defaults.
type Options struct {
	Workers int           // simulated workers; default 4
	Keys    int           // lock keys k0, k1, ...; default 1
	Ops     int           // stop invoking once the history has this many ops; default 10000
	TTL     time.Duration // lease length asked for; default 1s
	// InfoRate is the probability that an op's outcome is unknown (info);
	// default 0, negative for none. Half of the unknown ops took effect.
	InfoRate float64
	// Tokens makes the lock hand out fencing tokens (a per-key counter) and
	// the resource reject writes with a token lower than the highest it has
	// accepted.
	Tokens bool
	// Session makes the lock a session lock (ZooKeeper, etcd style): the
	// acquire carries no ttl and its ok no until; the server keeps the lock
	// until it is released or, once its holder has crashed, for TTL more
	// (the session timeout).
	Session bool
	// Latency is the largest one-way delay between a worker and a server;
	// default 2ms. Delays are uniform in [Latency/20, Latency].
	Latency time.Duration
	// NemesisEvery records a nemesis info op (a partition or a heal, which
	// changes nothing in the simulation) about once per this many ops;
	// default 1000, negative for none.
	NemesisEvery int
	// Faults makes unknown outcomes come from faults (faults.go): kills,
	// partitions, waiting acquires that time out and renewals lost in
	// flight. The zero value injects none.
	Faults Faults
}

func (o Options) withDefaults() Options {
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.Keys <= 0 {
		o.Keys = 1
	}
	if o.Ops <= 0 {
		o.Ops = 10000
	}
	if o.TTL <= 0 {
		o.TTL = time.Second
	}
	if o.InfoRate < 0 {
		o.InfoRate = 0
	}
	if o.Latency <= 0 {
		o.Latency = 2 * time.Millisecond
	}
	if o.NemesisEvery == 0 {
		o.NemesisEvery = 1000
	}
	return o
}

// Drift is the client-side validity margin of the simulated lock: a client
// considers its lease valid until its acquire's invoke + TTL × (1 − Drift).
const Drift = 0.01

type phase int

const (
	phAcquire phase = iota
	phRead
	phWrite
	phRelease
	phRenew
)

const forever = time.Duration(math.MaxInt64)

type lockState struct {
	holder int // process; -1 free
	token  uint64
	expiry time.Duration
}

type register struct {
	value    int64
	maxToken uint64
}

type worker struct {
	id, proc int
	cur      *request // the request in flight
	phase    phase
	key      string
	token    uint64 // the lease's token as recorded (0 without tokens)
	lease    uint64 // the server's identity of the lease
	until    time.Duration
	read     int64
	// outcome of the op in flight
	info    bool
	reached bool
	okay    bool
	applied time.Duration
	value   int64
	gotTok  uint64
	gotTill time.Duration
	invokeT time.Duration
	errText string // the error of an info completion
}

type event struct {
	at   time.Duration
	seq  int
	kind int // evInvoke, evServer, ...
	w    *worker
	r    *request // the request a server event or a completion is about
}

// The kinds of event.
const (
	evInvoke    = iota // a worker invokes its next op
	evServer           // a request reaches the server
	evComplete         // the worker completes its op
	evGiveUp           // a waiting client's timer: it gives up (info) unless answered
	evPartition        // a partition begins
	evHeal             // the partition heals
)

// request is one op sent to the server, as it was sent: the server reads
// it, and its worker may have moved on before it arrives (a request held
// by a partition, or a waiting acquire whose client gave up).
type request struct {
	w        *worker
	proc     int
	phase    phase
	key      string
	token    uint64
	lease    uint64
	read     int64
	invokeT  time.Duration
	deadline time.Duration // a waiting acquire: the server gives up at this time
	done     bool          // its worker has completed the op
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if e[i].at != e[j].at {
		return e[i].at < e[j].at
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

type sim struct {
	o     Options
	rng   *rand.Rand
	n     int              // ops emitted
	out   func(history.Op) // where they go
	q     events
	seq   int
	locks map[string]*lockState
	regs  map[string]*register
	ctr   map[string]uint64
	f     faultState
}

// Generate runs the simulation with rng and returns its history. The same
// options and the same rng state give the same history.
func Generate(rng *rand.Rand, opts Options) history.History {
	h := make(history.History, 0, opts.withDefaults().Ops+4*opts.withDefaults().Workers)
	Stream(rng, opts, func(op history.Op) { h = append(h, op) })
	return h
}

// Stream runs the simulation with rng and hands its ops to out as they
// happen, in order, holding none of them: what Generate returns, for
// histories too long to hold.
func Stream(rng *rand.Rand, opts Options, out func(history.Op)) {
	o := opts.withDefaults()
	s := &sim{o: o, rng: rng, out: out, locks: map[string]*lockState{}, regs: map[string]*register{}, ctr: map[string]uint64{}}
	for k := 0; k < o.Keys; k++ {
		key := fmt.Sprintf("k%d", k)
		s.locks[key] = &lockState{holder: -1}
		s.regs[key] = &register{}
	}
	for i := 0; i < o.Workers; i++ {
		w := &worker{id: i, proc: i}
		s.schedule(time.Duration(rng.Int64N(int64(time.Millisecond))), 0, w)
	}
	s.startFaults()
	nextNemesis := 0
	for s.q.Len() > 0 {
		e := heap.Pop(&s.q).(event)
		switch e.kind {
		case evInvoke:
			if s.n >= o.Ops {
				continue
			}
			if o.NemesisEvery > 0 && s.n >= nextNemesis {
				f := "partition"
				if nextNemesis/o.NemesisEvery%2 == 1 {
					f = "heal"
				}
				s.emit(history.Op{Process: history.NemesisProcess, Type: history.Info, F: f, Value: history.JSONValue("n1")}, e.at)
				nextNemesis += o.NemesisEvery/2 + rng.IntN(o.NemesisEvery)
			}
			s.invoke(e.w, e.at)
		case evServer:
			s.server(e.r, e.at)
		case evComplete:
			if e.r == e.w.cur && !e.r.done {
				s.complete(e.w, e.at)
			}
		default:
			s.faultEvent(e)
		}
	}
}

func (s *sim) schedule(at time.Duration, kind int, w *worker) {
	s.scheduleReq(at, kind, w, w.cur)
}

// scheduleReq schedules an event about request r of worker w.
func (s *sim) scheduleReq(at time.Duration, kind int, w *worker, r *request) {
	s.seq++
	heap.Push(&s.q, event{at: at, seq: s.seq, kind: kind, w: w, r: r})
}

func (s *sim) delay() time.Duration {
	lo := s.o.Latency / 20
	return lo + time.Duration(s.rng.Int64N(int64(s.o.Latency-lo)+1))
}

func (s *sim) emit(op history.Op, at time.Duration) {
	op.Index = s.n
	op.Time = at
	if op.Process != history.NemesisProcess && op.Client == 0 {
		op.Client = op.Process % s.o.Workers
	}
	s.n++
	s.out(op)
}

func (s *sim) fOf(w *worker) string {
	return [...]string{history.FAcquire, history.FRead, history.FWrite, history.FRelease, history.FRenew}[w.phase]
}

func (s *sim) invoke(w *worker, at time.Duration) {
	op := history.Op{Process: w.proc, Client: w.id, Type: history.Invoke, F: s.fOf(w), Key: w.key}
	switch w.phase {
	case phAcquire:
		w.key = fmt.Sprintf("k%d", s.rng.IntN(s.o.Keys))
		op.Key = w.key
		if !s.o.Session {
			op.TTL = s.o.TTL
		}
	case phWrite:
		op.Token = w.token
		op.Value = history.IntValue(w.read + 1)
	case phRelease:
		op.Token = w.token
	case phRenew:
		op.Token = w.token
		if !s.o.Session {
			op.TTL = s.o.TTL
		}
	}
	s.emit(op, at)
	w.invokeT = at
	w.cur = &request{w: w, proc: w.proc, phase: w.phase, key: w.key, token: w.token, lease: w.lease, read: w.read, invokeT: at}
	w.info = s.rng.Float64() < s.o.InfoRate
	w.reached = !w.info || s.rng.IntN(2) == 0
	w.errText = "timeout"
	if !w.info && s.o.Faults.on() && s.faultInvoke(w, at) {
		return
	}
	d1, d2 := s.delay(), s.delay()
	if w.reached {
		s.schedule(at+d1, 1, w)
	}
	if w.info {
		d2 += 5 * s.o.Latency // the client times out
	}
	s.schedule(at+d1+d2, 2, w)
}

// server applies request q at the server (or the resource) at time at,
// and tells its worker the outcome unless the worker has moved on.
func (s *sim) server(q *request, at time.Duration) {
	w := q.w
	if w.cur != q || q.done {
		w = &worker{} // nobody is waiting for the outcome
	}
	l, r := s.locks[q.key], s.regs[q.key]
	switch q.phase {
	case phAcquire:
		w.okay = false
		if s.grantable(l, q, at) {
			s.ctr[q.key]++
			l.holder, l.expiry = q.proc, at+s.o.TTL
			l.token = s.ctr[q.key]
			w.okay = true
			w.gotTok = l.token
			w.gotTill = q.invokeT + time.Duration(float64(s.o.TTL)*(1-Drift))
			if s.o.Session {
				l.expiry, w.gotTill = s.sessionEnd(q.proc), 0
			}
		}
		if q.deadline > 0 {
			s.waited(q, w, at)
		}
	case phRead:
		w.value = r.value
		w.okay = true
	case phWrite:
		w.applied = at
		w.okay = !(s.o.Tokens && q.token < r.maxToken)
		if w.okay {
			r.value = q.read + 1
			r.maxToken = max(r.maxToken, q.token)
		}
	case phRelease:
		w.okay = l.holder == q.proc && l.token == q.lease && at < l.expiry
		if w.okay {
			l.holder = -1
		}
	case phRenew:
		w.okay = l.holder == q.proc && l.token == q.lease && at < l.expiry
		if w.okay && !s.o.Session {
			l.expiry = at + s.o.TTL
		}
		w.gotTill = q.invokeT + time.Duration(float64(s.o.TTL)*(1-Drift))
	}
}

func (s *sim) complete(w *worker, at time.Duration) {
	w.cur.done = true
	op := history.Op{Process: w.proc, Client: w.id, F: s.fOf(w), Key: w.key}
	if w.info {
		s.crashed(w, op, at)
		return
	}
	next := phAcquire
	switch w.phase {
	case phAcquire:
		if w.okay {
			op.Type = history.OK
			if s.o.Tokens {
				op.Token = w.gotTok
			}
			op.Until = w.gotTill
			w.token, w.until, w.lease = op.Token, w.gotTill, w.gotTok
			next = phRead
		} else {
			op.Type = history.Fail
			op.Error = "lock is held"
			s.emit(op, at)
			w.phase = phAcquire
			// back off like a real client: 5 to 25 round trips
			s.schedule(at+time.Duration(5+s.rng.IntN(21))*s.o.Latency, 0, w)
			return
		}
	case phRead:
		op.Type = history.OK
		op.Value = history.IntValue(w.value)
		w.read = w.value
		next = phWrite
		// write only when it surely lands before the lease can expire
		if !s.o.Session && at+3*s.o.Latency >= w.until {
			next = phRelease
		}
		if s.o.Faults.RenewRate > 0 && s.rng.Float64() < s.o.Faults.RenewRate {
			next = phRenew
		}
	case phRenew:
		next = s.renewed(w, &op)
	case phWrite:
		op.Token = w.token
		op.Value = history.IntValue(w.read + 1)
		op.Applied = w.applied
		if w.okay {
			op.Type = history.OK
		} else {
			op.Type = history.Fail
			op.Error = "stale token"
		}
		next = phRelease
	case phRelease:
		op.Token = w.token
		if w.okay {
			op.Type = history.OK
		} else {
			op.Type = history.Fail
			op.Error = "not held"
		}
	}
	s.emit(op, at)
	w.phase = next
	s.schedule(at+s.think(), 0, w)
}

func (s *sim) think() time.Duration {
	return time.Duration(s.rng.Int64N(int64(s.o.Latency)))
}

// ErrNoSpot is returned by Inject when the history has no place where the
// asked-for violation can be planted.
var ErrNoSpot = errors.New("synth: no place to inject the violation")

// crashed records w's op (op, completed at time at) as of unknown outcome:
// its process has crashed, and the worker goes on under a new one.
func (s *sim) crashed(w *worker, op history.Op, at time.Duration) {
	op.Type = history.Info
	op.Error = w.errText
	if w.phase == phWrite || w.phase == phRelease || w.phase == phRenew {
		op.Token = w.token
	}
	if w.phase == phWrite {
		op.Value = history.IntValue(w.read + 1)
	}
	s.emit(op, at)
	if s.o.Session {
		// the crashed process's session times out
		s.f.died(w.proc, at)
		for _, l := range s.locks {
			if l.holder == w.proc && l.expiry == forever {
				l.expiry = at + s.o.TTL
			}
		}
	}
	w.proc += s.o.Workers
	w.phase = phAcquire
	s.schedule(at+s.think(), 0, w)
}
