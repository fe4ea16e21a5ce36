package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// ClientPause stops workers at a pause point of the workload loop for the
// step's Duration, our stand-in for a stop-the-world GC pause (DESIGN §4).
// Targets name workers ("w0", "w3"); Point is after-response or
// before-write (the default). The pause ends on its own, so it has no heal;
// the worker records the pause in the history when it actually begins.
type ClientPause struct{}

// Name returns "client-pause".
func (ClientPause) Name() string { return "client-pause" }

// Available reports whether the run has workers to pause.
func (ClientPause) Available(env *Env) error {
	if env.Workers == nil || env.Workers.Count() == 0 {
		return fmt.Errorf("%w: no workers", cluster.ErrUnavailable)
	}
	return nil
}

// Inject arms the pause on every target worker.
func (ClientPause) Inject(_ context.Context, env *Env, step Step) (Heal, any, error) {
	point := step.Point
	if point == "" {
		point = BeforeWrite
	}
	workers, err := ParseWorkers(step.Targets, env.Workers.Count())
	if err != nil {
		return nil, nil, err
	}
	d := step.Duration
	if d <= 0 {
		d = DefaultPause
	}
	desc := map[string]any{"workers": workers, "point": point, "duration": d.String(), "armed": true}
	var errs []error
	for _, w := range workers {
		errs = append(errs, env.Workers.PauseAt(w, point, d))
	}
	return nil, desc, errors.Join(errs...)
}

// ClientClock skews the wall clock of target workers by the step's Offset,
// for the algorithms that send client timestamps (the timeout locks). It is
// healed by restoring the true time.
type ClientClock struct{}

// Name returns "client-clock".
func (ClientClock) Name() string { return "client-clock" }

// Available reports whether the run has workers.
func (ClientClock) Available(env *Env) error { return ClientPause{}.Available(env) }

// Inject skews each target worker's clock.
func (ClientClock) Inject(_ context.Context, env *Env, step Step) (Heal, any, error) {
	workers, err := ParseWorkers(step.Targets, env.Workers.Count())
	if err != nil {
		return nil, nil, err
	}
	desc := map[string]any{"workers": workers, "offset": step.Offset.String()}
	for _, w := range workers {
		if err := env.Workers.SetClockOffset(w, step.Offset); err != nil {
			return nil, desc, err
		}
	}
	heal := func(context.Context) error {
		var errs []error
		for _, w := range workers {
			errs = append(errs, env.Workers.SetClockOffset(w, 0))
		}
		return errors.Join(errs...)
	}
	return heal, desc, nil
}

// ParseWorkers turns worker targets ("w0", "w3", "all") into worker numbers
// below count.
func ParseWorkers(targets []string, count int) ([]int, error) {
	if len(targets) == 0 {
		return nil, errors.New("nemesis: no worker targets (want w0, w1, ... or all)")
	}
	var out []int
	for _, t := range targets {
		if t == "all" {
			out = out[:0]
			for i := 0; i < count; i++ {
				out = append(out, i)
			}
			return out, nil
		}
		n, err := strconv.Atoi(strings.TrimPrefix(t, "w"))
		if err != nil || !strings.HasPrefix(t, "w") || n < 0 || n >= count {
			return nil, fmt.Errorf("nemesis: worker target %q: want w0..w%d or all", t, count-1)
		}
		out = append(out, n)
	}
	return out, nil
}

// DefaultPause is the length of a client pause whose step has no Duration.
const DefaultPause = 5 * time.Second
