package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// ErrOption reports a step option that is unknown to its fault or has an
// impossible value.
var ErrOption = errors.New("nemesis: bad option")

// CheckStep checks a step against its fault: the fault must exist and
// accept the step (Fault.Check), and a moment (Facts.Moment), which has no
// heal, takes no duration. The pseudo-faults heal and heal-all are accepted.
func CheckStep(step Step) error {
	if step.Fault == "heal" || step.Fault == "heal-all" {
		return nil
	}
	f, err := Lookup(step.Fault)
	if err != nil {
		return err
	}
	if f.Facts().Moment && step.Duration > 0 {
		return fmt.Errorf("%w: %s is a moment, which nothing heals: it takes no duration", ErrOption, step.Fault)
	}
	return f.Check(step)
}

// checkOptions rejects options not in known and durations that do not
// parse or are negative; durations lists the keys that hold durations.
func checkOptions(step Step, known []string, durations ...string) error {
	var keys []string
	for k := range step.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) {
			if len(known) == 0 {
				return fmt.Errorf("%w: %s takes no options, got %q", ErrOption, step.Fault, k)
			}
			return fmt.Errorf("%w: %s has no option %q (known: %s)", ErrOption, step.Fault, k, strings.Join(known, ", "))
		}
	}
	for _, k := range durations {
		if _, err := durationOption(step, k, 0); err != nil {
			return err
		}
	}
	return nil
}

// durationOption returns the duration option key of step, or def when it is
// absent.
func durationOption(step Step, key string, def time.Duration) (time.Duration, error) {
	v, ok := step.Options[key]
	if !ok || v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%w: %s option %s=%q: want a duration such as 500ms", ErrOption, step.Fault, key, v)
	}
	return d, nil
}

// choiceOption returns the option key of step, which must be one of
// choices; the first choice is the default.
func choiceOption(step Step, key string, choices ...string) (string, error) {
	v, ok := step.Options[key]
	if !ok || v == "" {
		return choices[0], nil
	}
	if !slices.Contains(choices, v) {
		return "", fmt.Errorf("%w: %s option %s=%q (known: %s)", ErrOption, step.Fault, key, v, strings.Join(choices, ", "))
	}
	return v, nil
}

// signed formats an offset with its sign, as "+30s" or "-5s".
func signed(d time.Duration) string {
	if d > 0 {
		return "+" + d.String()
	}
	return d.String()
}
