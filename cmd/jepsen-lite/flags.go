package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// maxRunCount bounds every flag that counts runs: gate --seeds (runs per
// scenario), hunt --runs (runs per fault kind) and shrink --tries,
// --confirm and --max-runs. A gate or hunt lists the runs it plans before
// it starts them.
const maxRunCount = 10_000

// maxParallel bounds gate --parallel: each run side by side starts servers
// of its own.
const maxParallel = 64

// checkCount returns a usage error naming the flag when its value v is
// outside [lo, hi].
func checkCount(flag string, v, lo, hi int) error {
	if v < lo || v > hi {
		return usagef("--%s %d: must be from %d to %d", flag, v, lo, hi)
	}
	return nil
}

// checkOverrides returns a usage error naming the flag when an override of
// a scenario's duration (--time-limit) or workers (--workers) is negative
// or beyond the bound a scenario has (scenarios.MaxDuration,
// scenarios.MaxWorkers); zero keeps the scenario's own.
func checkOverrides(timeLimit time.Duration, workers int) error {
	if timeLimit < 0 || timeLimit > scenarios.MaxDuration {
		return usagef("--time-limit %v: must be from 0 (the scenario's own) to %v", timeLimit, scenarios.MaxDuration)
	}
	if workers < 0 || workers > scenarios.MaxWorkers {
		return usagef("--workers %d: must be from 0 (the scenario's own) to %d", workers, scenarios.MaxWorkers)
	}
	return nil
}

// newFlagSet returns a flag set whose --help prints usage (with examples)
// and the flags.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, strings.TrimSpace(usage))
		fmt.Fprintln(stderr, "\nFlags:")
		fs.PrintDefaults()
	}
	return fs
}

// errHelp is returned when --help was asked for; the command exits 0.
var errHelp = flag.ErrHelp

// parseArgs parses flags that may stand before, between or after the
// positional arguments, and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, usageError{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// isSet reports whether the flag called name was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}
