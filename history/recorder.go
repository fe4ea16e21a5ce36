package history

import (
	"sync"
	"time"
)

// Sink receives every op the Recorder stamps, in recording order, under the
// Recorder's lock. A Writer is a Sink.
type Sink interface {
	Append(op Op) error
}

// Recorder stamps ops with a dense index and a time from one monotonic clock,
// both taken under one lock, so that the order of indexes is the order of
// times, and hands each to its sinks. It keeps no op itself, only their
// count, so a run's memory does not grow with its length: a run streams its
// ops to a Writer and reads the history back from the file. It is safe for
// concurrent use. The zero Recorder is not usable; use NewRecorder.
type Recorder struct {
	mu    sync.Mutex
	start time.Time
	n     int
	// mem is the Memory sink of a Recorder made without sinks, nil
	// otherwise.
	mem   *Memory
	sinks []Sink
	err   error
}

// NewRecorder returns a Recorder whose clock starts now and which forwards
// every op to the given sinks. A Recorder made without sinks records into a
// Memory of its own, whose ops History returns (tests and short in-process
// uses); one made with sinks keeps nothing but the count.
func NewRecorder(sinks ...Sink) *Recorder {
	r := &Recorder{start: time.Now(), sinks: sinks}
	if len(sinks) == 0 {
		r.mem = &Memory{}
		r.sinks = []Sink{r.mem}
	}
	return r
}

// Memory is a Sink that keeps every op it receives, in order. Its memory
// grows with the history: it serves tests and short in-process recordings,
// never a run, which streams to a Writer. It is safe for concurrent use.
type Memory struct {
	mu  sync.Mutex
	ops History
}

var _ Sink = (*Memory)(nil)

// Append keeps op; it never fails.
func (m *Memory) Append(op Op) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops = append(m.ops, op)
	return nil
}

// History returns a copy of every op kept so far.
func (m *Memory) History() History {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append(History(nil), m.ops...)
}

// Start returns the instant the run's clock counts from. Its monotonic
// reading makes Start().Add(d) and t.Sub(Start()) immune to wall-clock jumps.
func (r *Recorder) Start() time.Time { return r.start }

// Now returns the harness time: the monotonic duration since Start.
func (r *Recorder) Now() time.Duration { return time.Since(r.start) }

// Since converts an instant taken with time.Now (or derived from one by Add)
// into harness time.
func (r *Recorder) Since(t time.Time) time.Duration { return t.Sub(r.start) }

// Record stamps op with the next index and the current harness time, hands
// it to every sink, and returns the stamped op. The first error from a sink
// is kept (see Err) and later ops still reach every sink.
func (r *Recorder) Record(op Op) Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Time = time.Since(r.start)
	return r.commit(op)
}

// commit gives op the next index and hands it to every sink; r.mu is held.
func (r *Recorder) commit(op Op) Op {
	op.Index = r.n
	r.n++
	for _, s := range r.sinks {
		if err := s.Append(op); err != nil && r.err == nil {
			r.err = err
		}
	}
	return op
}

// History returns a copy of every op recorded so far by a Recorder made
// without sinks (NewRecorder), and nil for one made with sinks, which keeps
// no op: read its history back from its Writer's file.
func (r *Recorder) History() History {
	if r.mem == nil {
		return nil
	}
	return r.mem.History()
}

// Len returns the number of ops recorded so far.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Err returns the first error any sink returned, or nil.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Hold takes the Recorder's lock and the current harness time, and keeps
// both until the returned Held is committed or released: no op is recorded
// meanwhile, so whatever the caller does in between happened after the held
// time and before every op recorded later. It lets the caller record an op,
// stamped with the held time, only once it knows the op is true (a node
// taken down before a kill, recorded only when the kill succeeded). Every
// Hold must be ended by exactly one Commit or Release; the caller must not
// record meanwhile.
func (r *Recorder) Hold() *Held {
	r.mu.Lock()
	return &Held{r: r, time: time.Since(r.start)}
}

// Held is a Recorder held by Hold.
type Held struct {
	r    *Recorder
	time time.Duration
}

// Commit records op with the held time and the next index, as Record would
// have when the Recorder was held, and lets the Recorder go.
func (h *Held) Commit(op Op) Op {
	r := h.r
	defer r.mu.Unlock()
	op.Time = h.time
	return r.commit(op)
}

// Release lets the Recorder go without recording anything.
func (h *Held) Release() { h.r.mu.Unlock() }
