package synth

import (
	"math/rand/v2"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// faults.go holds the faults that make unknown outcomes (Options.Faults):
// kills, partitions that hold requests back, waiting acquires that time out
// and renewals and releases lost in flight, under an honest lock service.

// Faults shape how faults make ops of unknown outcome. Zero fields inject
// nothing (but Timeout, which has a default).
type Faults struct {
	// KillRate is the probability that a call's process is killed during
	// it: the op ends `info` ("killed"), its request having reached the
	// server or not (half each), and the worker goes on under a new process.
	KillRate float64
	// PartitionEvery is the mean time from one partition's heal to the next
	// partition; zero for no partitions. While one is in force (a
	// `partition` nemesis op to its `heal`), the requests of the workers it
	// cuts off are held back: their clients give up after Timeout (`info`,
	// "timeout") and go on under a new process, and at the heal each held
	// lock request (acquire, renew, release) reaches the server, half of
	// them, and takes effect as the server then decides; held reads and
	// writes never arrive.
	PartitionEvery time.Duration
	// PartitionLength is how long a partition lasts; default 50ms.
	PartitionLength time.Duration
	// PartitionShare is the fraction of the workers a partition cuts off
	// (each drawn with this probability, at least one); default 0.5.
	PartitionShare float64
	// Timeout is how long a client waits for a reply before it gives up;
	// default 10 × Latency.
	Timeout time.Duration
	// Wait, when positive, makes acquires wait at the server while the
	// lock is held (`lock.acquire: wait`): the server grants the request as
	// soon as the lock is free, up to Wait after its invoke (half the
	// requests) or 2 × Wait (the others, which outlive their client); the
	// client gives up at Wait + 2 × Latency (`info`, "timeout"), so that a
	// request granted after that is one of unknown outcome that took
	// effect, and one the server gave up on in time fails.
	Wait time.Duration
	// RenewRate is the probability that a holder renews its lease after
	// its read (its renew ok, for a lease lock, moves its until on).
	RenewRate float64
	// LostRate is the probability that a renewal or a release is lost in
	// flight: the client gives up after Timeout (`info`, "timeout"), the
	// request having reached the server or not (half each).
	LostRate float64
}

// on reports whether any fault is asked for.
func (f Faults) on() bool {
	return f.KillRate > 0 || f.PartitionEvery > 0 || f.Wait > 0 || f.RenewRate > 0 || f.LostRate > 0
}

func (f Faults) withDefaults(latency time.Duration) Faults {
	if f.PartitionLength <= 0 {
		f.PartitionLength = 50 * time.Millisecond
	}
	if f.PartitionShare <= 0 {
		f.PartitionShare = 0.5
	}
	if f.Timeout <= 0 {
		f.Timeout = 10 * latency
	}
	return f
}

// faultState is the simulation's faults: the partition in force, the
// workers it cuts off and the requests it holds, and when each crashed
// process crashed (Session: its session ends TTL later).
type faultState struct {
	inForce bool
	cut     map[int]bool
	held    []*request
	deadAt  map[int]time.Duration
}

// died records that process p crashed at time at.
func (f *faultState) died(p int, at time.Duration) {
	if f.deadAt == nil {
		f.deadAt = map[int]time.Duration{}
	}
	f.deadAt[p] = at
}

// sessionEnd is when the session of process p ends: TTL after its crash,
// never while it lives.
func (s *sim) sessionEnd(p int) time.Duration {
	if at, ok := s.f.deadAt[p]; ok {
		return at + s.o.TTL
	}
	return forever
}

// grantable reports whether the honest server grants request q the lock l
// at time at: the lock is free or its lease has run out, and (Session) the
// process's session has not ended.
func (s *sim) grantable(l *lockState, q *request, at time.Duration) bool {
	return (l.holder < 0 || at >= l.expiry) && (!s.o.Session || at < s.sessionEnd(q.proc))
}

// startFaults schedules the first partition.
func (s *sim) startFaults() {
	s.o.Faults = s.o.Faults.withDefaults(s.o.Latency)
	if s.o.Faults.PartitionEvery > 0 {
		s.scheduleReq(s.interval(), evPartition, nil, nil)
	}
}

// interval draws the time to the next partition: uniform in [½, 1½] ×
// PartitionEvery.
func (s *sim) interval() time.Duration {
	e := int64(s.o.Faults.PartitionEvery)
	return time.Duration(e/2 + s.rng.Int64N(e+1))
}

// faultEvent handles the events of the faults: a partition, its heal, a
// waiting client that gives up.
func (s *sim) faultEvent(e event) {
	switch e.kind {
	case evGiveUp:
		if e.r == e.w.cur && !e.r.done {
			e.w.info, e.w.errText = true, "timeout"
			s.complete(e.w, e.at)
		}
	case evPartition:
		if s.n >= s.o.Ops {
			return
		}
		s.f.inForce, s.f.cut = true, map[int]bool{}
		var cut []int
		for i := range s.o.Workers {
			if s.rng.Float64() < s.o.Faults.PartitionShare {
				cut = append(cut, i)
			}
		}
		if len(cut) == 0 {
			cut = []int{s.rng.IntN(s.o.Workers)}
		}
		for _, i := range cut {
			s.f.cut[i] = true
		}
		s.emit(history.Op{Process: history.NemesisProcess, Type: history.Info, F: "partition", Value: history.JSONValue(map[string]any{"workers": cut})}, e.at)
		s.scheduleReq(e.at+s.o.Faults.PartitionLength, evHeal, nil, nil)
	case evHeal:
		s.emit(history.Op{Process: history.NemesisProcess, Type: history.Info, F: "heal"}, e.at)
		s.f.inForce = false
		for _, q := range s.f.held {
			if q.phase != phRead && q.phase != phWrite && s.rng.IntN(2) == 0 {
				s.scheduleReq(e.at+s.delay(), evServer, q.w, q)
			}
		}
		s.f.held = nil
		if s.n < s.o.Ops {
			s.scheduleReq(e.at+s.interval(), evPartition, nil, nil)
		}
	}
}

// faultInvoke decides how the faults treat w's request, just sent at time
// at, and schedules its arrival and its completion: held by a partition,
// killed, lost in flight, or a waiting acquire. It reports whether it did;
// otherwise the request goes as without faults.
func (s *sim) faultInvoke(w *worker, at time.Duration) bool {
	f, q := s.o.Faults, w.cur
	switch {
	case s.f.inForce && s.f.cut[w.id]:
		w.info, w.errText = true, "timeout"
		s.f.held = append(s.f.held, q)
		s.schedule(at+f.Timeout, evComplete, w)
	case f.KillRate > 0 && s.rng.Float64() < f.KillRate:
		w.info, w.errText = true, "killed"
		d := s.delay()
		if s.rng.IntN(2) == 0 {
			s.schedule(at+d, evServer, w)
		}
		s.schedule(at+d+s.delay(), evComplete, w)
	case (w.phase == phRenew || w.phase == phRelease) && f.LostRate > 0 && s.rng.Float64() < f.LostRate:
		w.info, w.errText = true, "timeout"
		if s.rng.IntN(2) == 0 {
			s.schedule(at+s.delay(), evServer, w)
		}
		s.schedule(at+f.Timeout, evComplete, w)
	case w.phase == phAcquire && f.Wait > 0:
		q.deadline = at + f.Wait*time.Duration(1+s.rng.IntN(2))
		s.schedule(at+s.delay(), evServer, w)
		s.schedule(at+f.Wait+2*s.o.Latency, evGiveUp, w)
	default:
		return false
	}
	return true
}

// waited goes on with the waiting acquire q after the server tried it at
// time at (w is its worker, or a stand-in when nobody waits for it any
// more): a grant is answered while the client waits; a refusal waits on,
// polling every Latency, until q's deadline, when the server answers that
// it gave up, if the client still waits.
func (s *sim) waited(q *request, w *worker, at time.Duration) {
	giveUp := q.invokeT + s.o.Faults.Wait + 2*s.o.Latency
	live := q.w.cur == q && !q.done
	if w.okay {
		if d := s.delay(); live && at+d < giveUp {
			s.scheduleReq(at+d, evComplete, q.w, q)
		}
		return
	}
	if at+s.o.Latency < q.deadline {
		s.scheduleReq(at+s.o.Latency, evServer, q.w, q)
		return
	}
	if d := s.delay(); live && at+d < giveUp {
		s.scheduleReq(at+d, evComplete, q.w, q)
	}
}

// renewed records the completion of w's renewal in op and returns the
// worker's next phase: on to its write when its lease still allows, else
// its release; back to acquiring when the renewal failed.
func (s *sim) renewed(w *worker, op *history.Op) phase {
	if s.o.Tokens {
		op.Token = w.token
	}
	if !w.okay {
		op.Type, op.Error = history.Fail, "not held"
		return phAcquire
	}
	op.Type = history.OK
	if !s.o.Session {
		op.Until, w.until = w.gotTill, w.gotTill
	}
	if !s.o.Session && op.Time+3*s.o.Latency >= w.until {
		return phRelease
	}
	return phWrite
}

// UnknownFraction is the share of h's client invokes whose outcome is
// unknown: completed `info`, or still pending at the end.
func UnknownFraction(h history.History) float64 {
	invokes, unknown := 0, 0
	open := map[int]bool{}
	for i := range h {
		op := &h[i]
		if op.IsNemesis() {
			continue
		}
		switch op.Type {
		case history.Invoke:
			invokes++
			open[op.Process] = true
		case history.Info:
			unknown++
			delete(open, op.Process)
		default:
			delete(open, op.Process)
		}
	}
	if invokes == 0 {
		return 0
	}
	return float64(unknown+len(open)) / float64(invokes)
}

// UnknownRich draws, from seed, the options of a history rich in ops of
// unknown outcome made by faults: 2 to 16 workers, 1 to 3 keys, lease or
// session locks, waits on or off, tokens on or off, up to 10,000 ops, kills,
// partitions, renewals and lost renewals and releases, at rates that leave
// at least 20% of the client invokes of unknown outcome (UnknownFraction).
// Generate it with UnknownRichRand(seed).
func UnknownRich(seed uint64) Options {
	r := rand.New(rand.NewPCG(seed, 0x756e6b))
	o := Options{
		Workers: 2 + r.IntN(15), Keys: 1 + r.IntN(3), Ops: 200 + r.IntN(9801),
		TTL:      time.Duration(100+r.IntN(900)) * time.Millisecond,
		InfoRate: 0.02, Tokens: r.IntN(2) == 0, Session: r.IntN(2) == 0, NemesisEvery: -1,
	}
	o.Faults = Faults{
		KillRate:        0.2 + 0.1*r.Float64(),
		PartitionEvery:  time.Duration(100+r.IntN(500)) * time.Millisecond,
		PartitionLength: time.Duration(20+r.IntN(130)) * time.Millisecond,
		PartitionShare:  0.3 + 0.7*r.Float64(),
		RenewRate:       0.3 + 0.4*r.Float64(),
		LostRate:        0.2 + 0.3*r.Float64(),
	}
	if r.IntN(2) == 0 {
		o.Faults.Wait = time.Duration(5+r.IntN(45)) * 2 * time.Millisecond
	}
	return o
}

// UnknownRichRand is the random source Generate takes for the history of
// UnknownRich(seed).
func UnknownRichRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x68697374)) }
