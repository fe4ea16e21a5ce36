package nemesis

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// DefaultStrobePeriod is the period of a clock-strobe without a period
// option.
const DefaultStrobePeriod = time.Second

// ClockStrobe flips the wall clock of target nodes between the true time and
// the step's Offset every period (option, default DefaultStrobePeriod),
// starting with the offset, until healed; the heal stops the strobe and
// resets the clocks. Like ClockBump, it makes no node unavailable.
type ClockStrobe struct{}

// Facts returns the clock strobe's facts, declared in faultkind.ClockStrobe, on the
// systems whose clocks can be skewed (clockSystems).
func (ClockStrobe) Facts() Facts {
	return onClockSystems(faultkind.ClockStrobe())
}

// Name returns the fault's name.
func (f ClockStrobe) Name() string { return f.Facts().Name }

// Available reports whether the cluster can skew clocks.
func (f ClockStrobe) Available(env *Env) error { return clockAvailable(env, f.Facts()) }

// Check requires an offset and checks the period.
func (ClockStrobe) Check(step Step) error {
	if err := checkClockStep(step, "period"); err != nil {
		return err
	}
	if p, _ := durationOption(step, "period", DefaultStrobePeriod); p <= 0 {
		return fmt.Errorf("%w: clock-strobe period must be positive", ErrOption)
	}
	return nil
}

// Inject starts the strobe.
func (ClockStrobe) Inject(_ context.Context, env *Env, step Step) (Heal, any, error) {
	sk := env.Cluster.(cluster.ClockSkewer)
	period, err := durationOption(step, "period", DefaultStrobePeriod)
	if err != nil {
		return nil, nil, err
	}
	if step.Offset == 0 || period <= 0 {
		return nil, nil, fmt.Errorf("%w: clock-strobe needs an offset and a positive period", ErrOption)
	}
	nodes, err := ResolveNodes(step.Targets, env.Cluster.Nodes(), env.Rand)
	if err != nil {
		return nil, nil, err
	}
	desc := map[string]any{"nodes": nodes, "offset": signed(step.Offset), "period": period.String()}
	done, err := setClocks(sk, nodes, step.Offset)
	if len(done) == 0 {
		return nil, desc, err
	}
	if err != nil {
		return func(context.Context) error { return resetClocks(sk, done) }, desc, err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		skewed := true
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				skewed = !skewed
				off := time.Duration(0)
				if skewed {
					off = step.Offset
				}
				// A failed flip is repaired by the next one and by the heal.
				_, _ = setClocks(sk, done, off)
			}
		}
	}()
	var once sync.Once
	heal := func(context.Context) error {
		once.Do(func() { close(stop) })
		wg.Wait()
		return resetClocks(sk, done)
	}
	return heal, desc, nil
}
