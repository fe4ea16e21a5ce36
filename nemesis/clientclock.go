package nemesis

import (
	"context"
	"errors"

	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// ClientClock skews the wall clock of target workers by the step's Offset,
// for the algorithms that send client timestamps (the timeout locks). It is
// healed by restoring the true time. It makes no node unavailable.
type ClientClock struct{}

// Facts returns the client clock's facts, declared in faultkind.ClientClock.
func (ClientClock) Facts() Facts {
	return faultkind.ClientClock()
}

// Name returns the fault's name.
func (f ClientClock) Name() string { return f.Facts().Name }

// Check requires an offset and rejects options.
func (ClientClock) Check(step Step) error { return checkClockStep(step) }

// Available reports whether the run has workers.
func (ClientClock) Available(env *Env) error { return ClientPause{}.Available(env) }

// Inject skews each target worker's clock.
func (ClientClock) Inject(_ context.Context, env *Env, step Step) (Heal, any, error) {
	workers, err := ResolveWorkers(step.Targets, env.Workers.Count(), env.Rand)
	if err != nil {
		return nil, nil, err
	}
	desc := map[string]any{"workers": workers, "offset": signed(step.Offset)}
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
