package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

const checkUsage = `Usage: jepsen-lite check <run dir | history.jsonl> [flags]

Checks a stored history offline, with no server running: well-formedness,
double holds, lease-aware linearizability, fencing-token order and the
protected resource. Exits 0 when the history is valid, 1 when it is not,
2 when the checkers could not decide, 254 when the history is malformed.

Examples:
  jepsen-lite check store/latest
  jepsen-lite check store/redis-single-gc-pause/20261122T031500.000Z --json
  jepsen-lite check history.jsonl --check-timeout 30s`

func checkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("check", checkUsage, stderr)
	asJSON := fs.Bool("json", false, "print the results document (results.json's shape) on stdout instead of a table")
	timeout := fs.Duration("check-timeout", 5*time.Minute, "time budget; past it the verdict is unknown, never valid")
	drift := fs.Float64("drift", -1, "clock drift allowance as a fraction of the ttl (default: from the run's scenario.yaml, else the checker's default)")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	if len(pos) != 1 {
		return exitUsage, usagef("want exactly one run dir or history file")
	}
	path, runDir := pos[0], ""
	if st, err := os.Stat(path); err != nil {
		return exitUsage, usageError{err}
	} else if st.IsDir() {
		runDir = path
		path = filepath.Join(path, reports.HistoryFile)
	}
	h, info, err := history.ReadFile(path)
	if err != nil {
		return exitUsage, usageError{err}
	}
	res := &reports.Results{Stats: reports.CountStats(h), Truncated: info.Truncated}
	opts := checker.Options{Timeout: *timeout}
	if runDir != "" {
		if sc, err := scenarios.Load(runDir, runner.Names()); err == nil {
			res.Scenario, res.Seed = sc.Name, sc.Seed
			exp := sc.Expect
			res.Expected = &exp
			if sc.Lock.TTL > 0 {
				opts.Drift = float64(sc.Lock.Drift) / float64(sc.Lock.TTL)
			}
		}
	}
	if *drift >= 0 {
		opts.Drift = *drift
	}
	res.Checkers = checker.Check(ctx, h, opts)
	res.Verdict = checker.Overall(res.Checkers)
	if res.Expected != nil {
		res.ExpectationMet = res.Expected.Met(res.Verdict, res.Checkers)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return exitInternal, err
		}
	} else {
		fmt.Fprintf(stdout, "%s: %d ops\n", path, len(h))
		if info.Truncated {
			fmt.Fprintf(stdout, "  the last line was incomplete and was left out: checked the %d complete lines before it\n", len(h))
		}
		printCheckers(stdout, res.Checkers)
		fmt.Fprintf(stdout, "verdict: %s\n", res.Verdict)
	}
	switch res.Verdict {
	case checker.Valid:
		return exitHeld, nil
	case checker.Invalid:
		return exitViolated, nil
	default:
		return exitUnknown, nil
	}
}
