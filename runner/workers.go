package runner

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
)

// workerClock is a worker's own wall clock: the host's, plus an offset the
// nemesis may set (client-clock). The host's clock is never touched. An
// external client's process reads it through the clock-skew library and a
// clock file of the worker's (Env), which set rewrites.
type workerClock struct {
	offset atomic.Int64
	// dir is where the worker's clock file goes (the run's temporary
	// directory); needed says that the scenario skews client clocks, so
	// that a process whose clock cannot be reached is an error.
	dir    string
	needed bool
	mu     sync.Mutex
	file   *os.File
}

var _ clients.ProcessEnv = (*workerClock)(nil)

// Now returns the host's time plus the worker's offset.
func (c *workerClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// set sets the worker's offset, in its clock file too.
func (c *workerClock) set(offset time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset.Store(int64(offset))
	if c.file == nil {
		return nil
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], uint64(offset))
	_, err := c.file.WriteAt(b[:], 0)
	return err
}

// Env returns the environment that makes a process read the worker's clock:
// the clock-skew library and the worker's clock file (made on first use,
// holding the offset). Without the library it returns nothing, or an error
// when the scenario skews client clocks.
func (c *workerClock) Env() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dir == "" {
		if c.needed {
			return nil, errors.New("client-clock cannot reach the client's process: the run keeps no clock files for it")
		}
		return nil, nil
	}
	lib, err := local.FindClockSkewLibrary(c.dir)
	if err != nil {
		if c.needed {
			return nil, fmt.Errorf("client-clock cannot reach the client's process: %w", err)
		}
		return nil, nil
	}
	if c.file == nil {
		f, err := os.CreateTemp(c.dir, "clock-*")
		if err != nil {
			return nil, err
		}
		var b [8]byte
		binary.NativeEndian.PutUint64(b[:], uint64(c.offset.Load()))
		if _, err := f.WriteAt(b[:], 0); err != nil {
			f.Close()
			return nil, err
		}
		c.file = f
	}
	preload := lib
	if old := os.Getenv("LD_PRELOAD"); old != "" {
		preload += " " + old
	}
	return []string{"LD_PRELOAD=" + preload, "JEPSEN_LITE_CLOCK_FILE=" + c.file.Name()}, nil
}

// close closes the clock file (the run removes its directory).
func (c *workerClock) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.file != nil {
		c.file.Close()
		c.file = nil
	}
}

// worker is one simulated client running the workload loop.
type worker struct {
	id     int
	locker *clients.Recorded
	// queue is the worker's queue client in the queue workload (locker is
	// nil then).
	queue *clients.RecordedQueue
	rec   *history.Recorder
	// register is the resource as the current process sees it; attach
	// builds it with newRegister for each new Locker (a guarded register
	// lives in it). The runner checked at setup that the algorithm has one.
	register    register
	newRegister func(clients.Locker) (register, error)
	rng         *rand.Rand
	clock       *workerClock
	keys        []string
	ttl         time.Duration
	think       time.Duration
	hold        time.Duration // how long the holder keeps the lock after its write
	renew       time.Duration // the watchdog's period while holding; 0 never renews
	wait        time.Duration // how long an acquire waits for the lock; 0 tries once
	opTime      time.Duration

	// hooked is set when the locker runs the after-response pause itself.
	hooked bool
	// isolate cuts and heals the worker's own links (set by the runner).
	isolate func(cut bool) error
	// pauseFailed records a pause armed at point for d that failed with
	// err (set by the runner).
	pauseFailed func(point string, d time.Duration, err error)
	// fatal ends the run with err: the lock client broke its protocol
	// (set by the runner).
	fatal func(err error)

	mu     sync.Mutex
	pauses map[string]pause // armed pauses by point
	// inCall tells a call in flight that a pause was armed at in-call.
	inCall chan struct{}
}

// isolateSettle is how long a worker whose isolating pause ended waits for
// its lock client to reconnect before it goes on.
const isolateSettle = 300 * time.Millisecond

// pause is an armed client pause.
type pause struct {
	d       time.Duration
	isolate bool
}

// armPause arms a pause at point for d; the next time the worker reaches
// point it stops for d.
func (w *worker) armPause(point string, p pause) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pauses[point] = p
	if point == nemesis.InCall && w.inCall != nil {
		select {
		case w.inCall <- struct{}{}:
		default:
		}
	}
}

// pauseAt stops the worker if a pause is armed at point. The pause is
// recorded as a nemesis op when it begins and when it ends. It is cut short
// only by abort (Ctrl-C), never by the normal end of the run, so that the
// late write it delays still happens.
func (w *worker) pauseAt(abort context.Context, point string) {
	w.mu.Lock()
	p, ok := w.pauses[point]
	delete(w.pauses, point)
	w.mu.Unlock()
	if !ok {
		return
	}
	desc := map[string]any{"worker": w.id, "point": point, "duration": p.d.String(), "isolate": p.isolate}
	w.rec.Record(nemesis.ClientPauseOp(desc))
	var cutErr error
	if p.isolate && w.isolate != nil {
		cutErr = w.isolate(true)
	}
	// A client that is a process of its own is stopped whole, its
	// background threads with it, as a stop-the-world pause stops them.
	pp, whole := w.processPauser()
	if whole {
		cutErr = errors.Join(cutErr, pp.Stop())
	}
	t := time.NewTimer(p.d)
	select {
	case <-t.C:
	case <-abort.Done():
		t.Stop()
	}
	if whole {
		cutErr = errors.Join(cutErr, pp.Continue())
	}
	resume := nemesis.ClientResumeOp(desc)
	if p.isolate && w.isolate != nil {
		cutErr = errors.Join(cutErr, w.isolate(false))
		// Healing a cut closes the connections that lived through it (their
		// streams lost data). Give the lock client a moment to notice and
		// reconnect, as a resumed process finds its sockets in order, so
		// that the late write reaches the system rather than a dead socket.
		w.sleep(abort, isolateSettle)
	}
	if cutErr != nil {
		resume.Error = cutErr.Error()
	}
	w.rec.Record(resume)
}

// processPauser returns the worker's current client when it is a process
// of its own that a pause stops whole.
func (w *worker) processPauser() (clients.ProcessPauser, bool) {
	var c any
	switch {
	case w.locker != nil:
		c = w.locker.Locker
	case w.queue != nil:
		c = w.queue.Queue
	}
	pp, ok := c.(clients.ProcessPauser)
	return pp, ok
}

// run is the workload loop (docs/design.md §4): acquire; check the lease is still
// valid; read the resource; write read+1 with the lease's token; hold the
// lock for the scenario's hold time (the holder's other work); release.
// It stops between iterations when stop ends, and everywhere when abort ends.
func (w *worker) run(stop, abort context.Context) {
	w.attach(abort)
	for stop.Err() == nil {
		if w.ready(abort) {
			w.iterate(stop, abort)
		}
		w.sleep(stop, w.think)
	}
}

// attach connects the worker to its process's current Locker: the pause
// hook and the register.
func (w *worker) attach(abort context.Context) {
	w.hooked = false
	if h, ok := w.locker.Locker.(clients.ResponseHooker); ok {
		h.SetAfterResponse(func() { w.pauseAt(abort, nemesis.AfterResponse) })
		w.hooked = true
	}
	if h, ok := w.locker.Locker.(clients.InCallHooker); ok {
		h.SetInCall(func() { w.pauseAt(abort, nemesis.InCall) }, w.inCall)
	}
	if h, ok := w.locker.Locker.(clients.UnmarkedGranter); ok {
		h.SetUnmarkedGrant(func() { w.pauseNeverFired(nemesis.AfterResponse, errNoHandshake) })
	}
	if reg, err := w.newRegister(w.locker.Locker); err == nil {
		w.register = reg
	}
}

// ready gives the worker's current process a Locker: after a crash the old
// one was closed, and a new one is opened here. It reports false, after a
// back-off, when the new one cannot be opened yet (its servers are out of
// reach); nothing is recorded then, as nothing was sent.
func (w *worker) ready(abort context.Context) bool {
	ctx, cancel := context.WithTimeout(abort, w.opTime)
	opened, err := w.locker.Ready(ctx)
	cancel()
	if w.broke(err) {
		return false
	}
	if err != nil {
		w.sleep(abort, time.Duration(w.rng.Int64N(int64(w.ttl/10)+1)))
		return false
	}
	if opened {
		w.attach(abort)
	}
	return true
}

// iterate runs one turn of the workload loop. A waiting acquire is cut
// short when stop ends (the run is over), and then left pending in the
// history when its outcome is unknown (clients.ErrRunEnded).
//
// The context given to Acquire (and AcquireWait) lives as long as the hold
// (holdContext): a library may tie its heartbeat to it.
func (w *worker) iterate(stop, abort context.Context) {
	key := w.keys[w.rng.IntN(len(w.keys))]
	ctx := newHoldContext(abort, w.opTime+w.wait, stop, w.wait > 0)
	var lease clients.Lease
	var err error
	if w.wait > 0 {
		lease, err = w.locker.AcquireWait(ctx, key, w.ttl, w.wait)
	} else {
		lease, err = w.locker.Acquire(ctx, key, w.ttl)
	}
	ctx.returned()
	if err != nil {
		ctx.end() // nothing is held: no hold to outlive the call
	} else {
		defer ctx.end() // after the release, or when the process crashed
	}
	if w.broke(err) {
		return
	}
	if !w.hooked {
		// The algorithm processes its reply inside a library: the pause
		// point is right after Acquire returns.
		w.pauseAt(abort, nemesis.AfterResponse)
	}
	if err != nil {
		// Busy or indeterminate: back off for a random part of the ttl.
		w.sleep(abort, time.Duration(w.rng.Int64N(int64(w.ttl/10)+1)))
		return
	}
	holder := w.locker.Proc.ID()
	defer func() {
		if w.locker.Proc.ID() != holder {
			return // the process crashed; its successor holds nothing
		}
		ctx, cancel := context.WithTimeout(abort, w.opTime)
		defer cancel()
		w.broke(w.locker.Release(ctx, lease))
	}()
	// A careful client checks its lease before it touches the resource.
	if !lease.Until.IsZero() && !time.Now().Before(lease.Until) {
		return
	}
	if w.lost(lease) {
		return
	}
	if w.increment(abort, key, lease) {
		w.holdLock(abort, &lease)
	}
}

// increment reads the register of key under lease and writes it plus one:
// the holder's work on the resource. It reports whether the holder goes on
// holding: false when the read failed or the write's outcome is unknown
// (the process crashed).
func (w *worker) increment(abort context.Context, key string, lease clients.Lease) bool {
	w.rec.Record(w.op(history.Invoke, history.FRead, key, 0))
	rctx, cancel := context.WithTimeout(abort, w.opTime)
	v, err := w.register.Read(rctx, lease)
	cancel()
	read := w.op(history.OK, history.FRead, key, 0)
	if err != nil {
		// A read changes nothing: it fails whatever the cause.
		read.Type, read.Error = history.Fail, err.Error()
		w.rec.Record(read)
		return false
	}
	read.Value = history.IntValue(v)
	w.rec.Record(read)

	// The pause point lies between the holder's last check and its write,
	// as in Kleppmann's GC pause: a paused holder learns nothing until it
	// has written.
	w.pauseAt(abort, nemesis.BeforeWrite)

	inv := w.op(history.Invoke, history.FWrite, key, lease.Token)
	inv.Value = history.IntValue(v + 1)
	w.rec.Record(inv)
	wctx, cancel := context.WithTimeout(abort, w.opTime)
	applied, err := w.register.Write(wctx, lease, v+1)
	cancel()
	done := w.op(history.OK, history.FWrite, key, lease.Token)
	done.Value = inv.Value
	done.Applied = applied
	if writeOutcome(&done, err) == history.Info {
		done.Kept = w.locker.Keeps(err)
	}
	w.rec.Record(done)
	if done.Type == history.Info {
		w.locker.Crash(done.Kept)
		return false
	}
	return true
}

// holdLock keeps the lock for the hold time, the holder's other work. With a
// watchdog period it renews the lease for the ttl every period while it
// holds, and stops holding at the first renewal that fails (the lease may be
// gone; a renewal of unknown outcome crashes the process).
func (w *worker) holdLock(abort context.Context, lease *clients.Lease) {
	if w.renew <= 0 {
		w.sleep(abort, w.hold)
		return
	}
	for left := w.hold; left > 0 && abort.Err() == nil; {
		d := min(w.renew, left)
		w.sleep(abort, d)
		left -= d
		if left <= 0 {
			return
		}
		ctx, cancel := context.WithTimeout(abort, w.opTime)
		renewed, err := w.locker.Renew(ctx, *lease, w.ttl)
		cancel()
		if w.broke(err) || err != nil {
			return
		}
		*lease = renewed
	}
}

// broke reports whether err is the lock client's break of its protocol,
// and then ends the run with it (fatal); the worker does nothing more.
func (w *worker) broke(err error) bool {
	if err == nil || !errors.Is(err, clients.ErrProtocol) {
		return false
	}
	if w.fatal != nil {
		w.fatal(err)
	}
	return true
}

// lost reports whether a session lock already knows lease is gone, and
// records the loss when it does.
func (w *worker) lost(lease clients.Lease) bool {
	lw, ok := w.locker.Locker.(clients.LeaseWatcher)
	if !ok {
		return false
	}
	select {
	case <-lw.Lost(lease):
		w.locker.LeaseLost(lease.Key, lease.Token)
		return true
	default:
		return false
	}
}

func (w *worker) op(t history.Type, f, key string, token uint64) history.Op {
	return history.Op{Process: w.locker.Proc.ID(), Client: w.id, Type: t, F: f, Key: key, Token: token}
}

func (w *worker) sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// workerSet implements nemesis.Workers over the run's workers.
type workerSet []*worker

var _ nemesis.Workers = workerSet(nil)

func (ws workerSet) Count() int { return len(ws) }

func (ws workerSet) PauseAt(worker int, point string, d time.Duration, isolate bool) error {
	if worker < 0 || worker >= len(ws) {
		return errors.New("runner: no such worker")
	}
	ws[worker].armPause(point, pause{d: d, isolate: isolate})
	return nil
}

func (ws workerSet) SetClockOffset(worker int, offset time.Duration) error {
	if worker < 0 || worker >= len(ws) {
		return errors.New("runner: no such worker")
	}
	return ws[worker].clock.set(offset)
}

// register is the protected resource as the workload sees it: the harness's
// own register (fenced or not), or one kept inside the locked system and
// guarded by the lease (clients.GuardedResource).
type register interface {
	Read(ctx context.Context, l clients.Lease) (int64, error)
	// Write stores value and returns the harness time at which it was
	// accepted or rejected, or 0 when the harness cannot know that moment
	// exactly; a rejection wraps clients.ErrStaleToken.
	Write(ctx context.Context, l clients.Lease, value int64) (time.Duration, error)
}

// harnessRegister is the harness's own register.
type harnessRegister struct{ r *clients.Resource }

func (h harnessRegister) Read(_ context.Context, l clients.Lease) (int64, error) {
	return h.r.Read(l.Key), nil
}

func (h harnessRegister) Write(_ context.Context, l clients.Lease, value int64) (time.Duration, error) {
	return h.r.Write(l.Key, l.Token, value)
}

// guardedRegister is a register kept in the locked system. The moment the
// system applied a write is not visible to the harness: it lies somewhere
// between the write's invoke and its completion, so Write reports none and
// the history leaves `applied` out (docs/history.md §1).
type guardedRegister struct {
	g clients.GuardedResource
}

func (g guardedRegister) Read(ctx context.Context, l clients.Lease) (int64, error) {
	return g.g.ReadGuarded(ctx, l)
}

func (g guardedRegister) Write(ctx context.Context, l clients.Lease, value int64) (time.Duration, error) {
	return 0, g.g.WriteGuarded(ctx, l, value)
}

// writeOutcome records how the write done ended, from the error of its
// call: ok without one; fail when the resource refused its stale token
// (nothing was applied); otherwise unknown, with no applied time (the
// write may or may not have landed). It returns done's type.
func writeOutcome(done *history.Op, err error) history.Type {
	switch {
	case err == nil:
	case errors.Is(err, clients.ErrStaleToken):
		done.Type, done.Error = history.Fail, err.Error()
	default:
		done.Type, done.Error, done.Applied = history.Info, err.Error(), 0
	}
	return done.Type
}
