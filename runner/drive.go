package runner

import (
	"context"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/hostwatch"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/reports"
)

// recorded is what the workload hands to the check stage: what was
// recorded and how the run ended.
type recorded struct {
	// ops is the number of ops recorded in history.jsonl, the header
	// included (0 when the clock never started); stats counts them.
	ops   int
	stats reports.Stats
	// nem is the run's nemesis, nil when the run never got to it.
	nem         *nemesis.Runner
	interrupted bool
	// err says why the run stopped early or could not be recorded: its
	// setup failed (ErrSetup), its lock client broke its protocol
	// (ErrLockClient), a worker panicked, or the history could not be
	// written.
	err        error
	lockClient *reports.LockClient
	// silent names the workers whose external client answered no call
	// over the run (silentWorkers).
	silent []string
	// historyErr says why the history could not be written.
	historyErr error
}

// drive is the workload and nemesis stage: it runs the workers and the
// nemesis for the scenario's duration, heals every fault (heal, once),
// lets the system settle for the quiet period, stops the workers and
// records the end of the history.
func drive(ctx context.Context, p *plan, st *runStore, run *started) recorded {
	s := &p.s
	env := &nemesis.Env{Cluster: run.cluster, Network: run.net, Workers: run.workers, Recorder: run.rec, Rand: nemesis.TargetRand(s.Seed)}
	for _, w := range run.workers {
		w.isolate = isolator(env, fmt.Sprintf("w%d", w.id))
	}
	nem := nemesis.NewRunner(env)
	for _, w := range run.workers {
		w.pauseFailed = func(point string, d time.Duration, err error) { nem.ClientPauseFailed(w.id, point, d, err) }
	}
	heal := healOnce(context.WithoutCancel(ctx), nem, run.net, st.log)
	defer heal() // a panic on the way
	// The run's clock: the recorder's start. Nemesis steps are timed from
	// it, so "at: 1s" means 1s of harness time.
	start := run.rec.Start()
	stopWatch := watchHost(p.cfg.hostClock, start, run.rec, st.log)
	defer stopWatch()
	stop, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	nemDone := make(chan error, 1)
	nemCtx, stopNemesis := context.WithDeadline(stop, start.Add(s.Duration))
	defer stopNemesis()
	go func() { nemDone <- nem.Run(nemCtx, start, s.Nemesis.Steps) }()
	// Faults due at the start are in force before the first worker asks.
	select {
	case <-nem.Begun():
	case <-stop.Done():
	}
	c := startCrew(ctx, stop, stopWorkers, run, st.log)
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		reportProgress(stop, p.cfg.progress, start, s.Duration+s.Quiet, st.counts, nem)
	}()
	// Faults until the duration ends; then heal and let the system settle.
	waitUntil(stop, start.Add(s.Duration))
	stopNemesis()
	if nerr := <-nemDone; nerr != nil {
		st.log.Printf("nemesis: %v", nerr)
	}
	heal()
	waitUntil(stop, start.Add(s.Duration+s.Quiet))
	stopWorkers()
	c.wg.Wait()
	stopWatch()
	// The end record: the history says until when it recorded, so a wait
	// still pending is known to have waited until now.
	run.rec.Record(history.EndOp())
	<-progressDone
	rd := recorded{nem: nem, interrupted: ctx.Err() != nil, lockClient: run.lockClient, err: c.err(), silent: silentWorkers(s, &st.answers)}
	for _, line := range rd.silent {
		st.log.Printf("silent lock client: %s", line)
	}
	if rd.err == nil {
		st.log.Printf("workers stopped after %d ops", run.rec.Len())
	}
	return rd
}

// watchHost starts the watch of the host's clocks and of the harness's
// stalls (package hostwatch) on the clocks clockAt gives for the run's clock
// start (nil: the host's own, hostwatch.SystemClock), whose monotonic
// readings are then the run's harness time; it records each clock step and
// stall in the history and in the run's log. It returns the watch's stop:
// it ends the watch and returns once the watch has recorded its last; later
// calls do nothing. The run stops it once every worker has stopped, before
// the end record.
func watchHost(clockAt func(start time.Time) hostwatch.Clock, start time.Time, rec *history.Recorder, logger *log.Logger) func() {
	if clockAt == nil {
		clockAt = hostwatch.SystemClock
	}
	clock := clockAt(start)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hostwatch.Watch(ctx, clock, func(op history.Op) {
			if e, ok, _ := history.HostEventOf(rec.Record(op)); ok {
				logger.Print(e.Describe())
			}
		})
	}()
	return func() {
		cancel()
		<-done
	}
}

// healOnce returns the heal stage: it heals every fault of the nemesis and
// every link of the network, the first time it is called; later calls do
// nothing. The run calls it when the duration ends, and on its way out
// when a panic kept it from getting there.
func healOnce(ctx context.Context, nem *nemesis.Runner, net *linknet.Network, logger *log.Logger) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := nem.HealAll(ctx); err != nil {
				logger.Printf("healing: %v", err)
			}
			if err := net.HealAll(); err != nil {
				logger.Printf("healing network: %v", err)
			}
		})
	}
}

// crew is the running workers: wg ends when every one has stopped, and err
// then says why the run stopped early, if it did.
type crew struct {
	wg               sync.WaitGroup
	panicked, broken atomic.Value
}

// startCrew starts each worker's loop: a worker whose lock client broke
// its protocol, or that panicked, stops every worker.
func startCrew(abort, stop context.Context, stopWorkers func(), run *started, logger *log.Logger) *crew {
	c := &crew{}
	for _, w := range run.workers {
		w.fatal = func(err error) {
			if c.broken.CompareAndSwap(nil, err) {
				logger.Printf("stopping the run: %v", err)
			}
			stopWorkers()
		}
	}
	for i, w := range run.workers {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer func() {
				if p := recover(); p != nil {
					c.panicked.Store(fmt.Sprintf("worker %d panicked: %v", w.id, p))
					stopWorkers()
				}
			}()
			run.run(i, stop, abort)
		}()
	}
	return c
}

// err says why the workers stopped early: a panic, or a lock client that
// broke its protocol (ErrLockClient); nil when they ran to the end.
func (c *crew) err() error {
	if p := c.panicked.Load(); p != nil {
		return fmt.Errorf("runner: %s", p)
	}
	if err, ok := c.broken.Load().(error); ok {
		return fmt.Errorf("%w: %w", ErrLockClient, err)
	}
	return nil
}
