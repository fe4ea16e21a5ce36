package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
)

// gate is one gate's runs under way.
type gate struct {
	ctx    context.Context
	opts   Options
	pairs  []Pair
	stored map[string][]string // scenario -> run dirs, by seed
	log    io.Writer

	// mu guards invalid, unmet and done, which the runs read as they
	// start, and log, which runs side by side share.
	mu                   sync.Mutex
	invalid, unmet, done int
}

// outcome is what became of one pair.
type outcome struct {
	res           *runner.Result
	err           error
	skip, stopped bool
}

// collect runs the pairs, Parallel at a time, in the gate's order, and
// takes their outcomes in that order too, so that the rows and the cases
// are those of runs made one after another. After an interrupted run it
// starts no other and takes no other outcome.
func (g *gate) collect() (rows []*Row, cases []reports.Case, interrupted bool) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	outcomes := g.start(&stop, &wg)
	var r *Row
	for i, p := range g.pairs {
		o := <-outcomes[i]
		if interrupted || o.stopped {
			continue
		}
		if r == nil || r.Scenario != p.Scenario {
			r = newRow(p.Scenario)
			rows = append(rows, r)
		}
		if o.skip {
			continue
		}
		c := r.add(p, o.res, o.err)
		if errors.Is(o.err, runner.ErrInterrupted) {
			interrupted = true
			stop.Store(true)
		}
		g.count(c)
		cases = append(cases, c)
	}
	wg.Wait()
	return rows, cases, interrupted
}

// start starts the pool: each pair's outcome arrives on its channel, one
// that was never started (stop was set, ctx ended) as stopped.
func (g *gate) start(stop *atomic.Bool, wg *sync.WaitGroup) []chan outcome {
	outcomes := make([]chan outcome, len(g.pairs))
	for i := range outcomes {
		outcomes[i] = make(chan outcome, 1)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		slots := make(chan struct{}, max(g.opts.Parallel, 1))
		for i := range g.pairs {
			slots <- struct{}{}
			if stop.Load() || g.ctx.Err() != nil {
				outcomes[i] <- outcome{stopped: true}
				<-slots
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				res, skip, err := g.runPair(i)
				outcomes[i] <- outcome{res: res, err: err, skip: skip}
			}()
		}
	}()
	return outcomes
}

// runPair runs (or re-checks) pair i; skip when a re-checked store has no
// run of its seed.
func (g *gate) runPair(i int) (res *runner.Result, skip bool, err error) {
	sc, seed := g.pairs[i].Scenario, g.pairs[i].Seed
	g.mu.Lock()
	g.opts.Status.Start(Progress{Run: fmt.Sprintf("%s seed %d", sc.Name, seed), Done: g.done, Total: len(g.pairs), Invalid: g.invalid, Unmet: g.unmet})
	g.mu.Unlock()
	if g.opts.FromStore != nil {
		if seed > len(g.stored[sc.Name]) {
			return nil, true, nil
		}
		runDir := g.stored[sc.Name][seed-1]
		g.say("gate: re-checking %s ...\n", runDir)
		res, err = g.opts.Recheck(g.ctx, runDir, sc)
		if g.ctx.Err() != nil {
			err = fmt.Errorf("re-checking %s: %w", runDir, runner.ErrInterrupted)
		}
		return res, false, err
	}
	g.say("gate: %s seed %d ...\n", sc.Name, seed)
	res, err = g.opts.Run(g.ctx, sc, seed)
	return res, false, err
}

// say writes a log line under the gate's lock: runs side by side share the
// log.
func (g *gate) say(format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fmt.Fprintf(g.log, format, args...)
}

// count adds a case taken to the tally that the runs starting read.
func (g *gate) count(c reports.Case) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !c.Met {
		g.unmet++
	}
	if c.Verdict == checker.Invalid {
		g.invalid++
	}
	g.done++
}
