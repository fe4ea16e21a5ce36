package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/history/jepsen"
	"github.com/jepsen-lite/jepsen-lite/progress"
	"github.com/jepsen-lite/jepsen-lite/reports"
)

// The history formats check reads (--format).
const (
	formatJSONL  = "jsonl"
	formatJepsen = "jepsen"
)

const checkUsage = `Usage: jepsen-lite check <run dir | history.jsonl> [flags]
       jepsen-lite check --format jepsen <history.edn | Jepsen store dir> --ttl D [flags]

Checks a stored history offline, with no server running: well-formedness,
double holds, lease-aware linearizability, fencing-token order and the
protected resource. Exits 0 when the history is valid, 1 when it is not,
2 when the checkers could not decide or the check was interrupted, 254
when the history cannot be read or is not well-formed (the message names
the line), and when there is nothing to judge: no worker op in it, or a
run directory whose setup failed. Past --check-timeout each check not yet
decided is unknown and says "timed out after" the budget; Ctrl-C stops
the reading and the checks within a second and says "interrupted".

With --format jepsen it reads a Jepsen or Knossos EDN history of a lock
workload instead (docs/history.md §5); --ttl, required then, is the lease
every grant got.

` + progressHelp + ` For a jsonl history: the part of the file read, the ops read
and their rate, then the deciding of what the ops left open.

Examples:
  jepsen-lite check store/latest
  jepsen-lite check store/redis-single-gc-pause/20261122T031500.000Z --json
  jepsen-lite check history.jsonl --check-timeout 30s
  jepsen-lite check --format jepsen store/etcd-lock/latest/history.edn --ttl 5s`

func checkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("check", checkUsage, stderr)
	asJSON := fs.Bool("json", false, "print the results document (results.json's shape) on stdout instead of a table")
	timeout := fs.Duration("check-timeout", 5*time.Minute, "time budget; past it the verdict is unknown, never valid")
	drift := fs.Float64("drift", 0, "clock drift allowance as a fraction of the lease, in [0, 1); 0 means none (default: from the run's scenario.yaml, else 0.01)")
	format := fs.String("format", formatJSONL, "the history's format: jsonl (this project's history.jsonl) or jepsen (a Jepsen/Knossos EDN history)")
	ttl := fs.Duration("ttl", 0, "with --format jepsen (required there): the lease every grant got, set as the ttl of each acquire")
	quiet := fs.Bool("quiet", false, quietUsage)
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
	driftSet := false
	fs.Visit(func(f *flag.Flag) { driftSet = driftSet || f.Name == "drift" })
	if driftSet && (*drift < 0 || *drift >= 1) {
		return exitUsage, usagef("--drift %v: want a fraction in [0, 1)", *drift)
	}
	if err := checkFormat(*format, isSet(fs, "ttl"), *ttl); err != nil {
		return exitUsage, err
	}
	path := pos[0]
	st, err := os.Stat(path)
	if err != nil {
		return exitUsage, usageError{err}
	}
	var res *reports.Results
	var ops int
	if *format == formatJepsen {
		res, ops, path, err = checkJepsen(ctx, path, st.IsDir(), *ttl, *drift, driftSet, *timeout)
	} else {
		line := newStatusLine(stderr, *quiet)
		res, ops, path, err = checkJSONL(ctx, path, st.IsDir(), *drift, driftSet, *timeout, line)
		line.Done()
	}
	if errors.Is(err, checker.ErrInterrupted) || errors.Is(err, errInterrupted) {
		fmt.Fprintf(stderr, "jepsen-lite check: interrupted; the history is untouched: check it again with 'jepsen-lite check %s'\n", pos[0])
		return exitUnknown, nil
	}
	if err != nil {
		return exitUsage, usageError{err}
	}
	if wf := res.Checkers[0]; wf.Verdict != checker.Valid && len(wf.Anomalies) > 0 {
		// not well-formed: bad input, not a verdict about the lock
		return exitUsage, usagef("%s: %s", path, wf.Anomalies[0].Message)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return exitInternal, err
		}
	} else {
		fmt.Fprintf(stdout, "%s: %d ops\n", path, ops)
		if res.Truncated {
			fmt.Fprintf(stdout, "  the last line was incomplete and was left out: checked the %d complete lines before it\n", ops)
		}
		printHostEvents(stdout, res)
		printCheckers(stdout, res.Checkers)
		printLiveness(stdout, res.Liveness)
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

// checkFormat returns a usage error when --format does not name a format
// check reads, or --ttl is given (ttlSet) where it does not apply or is
// missing or not positive where it does.
func checkFormat(format string, ttlSet bool, ttl time.Duration) error {
	switch format {
	case formatJSONL:
		if ttlSet {
			return usagef("--ttl applies to --format jepsen only: a jsonl history records each lease")
		}
	case formatJepsen:
		if !ttlSet {
			return usagef("--format jepsen needs --ttl, the lease every grant got (a Jepsen history does not record it)")
		}
		if ttl <= 0 {
			return usagef("--ttl %v: want a positive duration", ttl)
		}
	default:
		return usagef("--format %q: want jsonl or jepsen", format)
	}
	return nil
}

// checkJepsen checks a Jepsen or Knossos EDN history (a file, or the one
// of a Jepsen store directory), read whole, and returns the results, the
// number of ops and the file's path.
func checkJepsen(ctx context.Context, path string, isDir bool, ttl time.Duration, drift float64, driftSet bool, timeout time.Duration) (*reports.Results, int, string, error) {
	if isDir {
		path = filepath.Join(path, jepsen.HistoryFile)
	}
	var h history.History
	err := unlessInterrupted(ctx, func() (err error) {
		h, err = jepsen.ReadFile(path, jepsen.Options{TTL: ttl})
		return err
	})
	if err != nil {
		return nil, 0, path, err
	}
	if err := judgeable(path, tallyOf(h), history.ReadInfo{}); err != nil {
		return nil, 0, path, err
	}
	run := &storedRun{h: h}
	res := run.check(ctx, run.options(drift, driftSet, checker.Options{Timeout: timeout}))
	if ctx.Err() != nil {
		return nil, 0, path, errInterrupted
	}
	return res, len(h), path, nil
}

// checkJSONL checks a history.jsonl (a file, or a run directory's) as it
// reads it, showing how far it has come on line, and returns the results,
// the number of ops and the file's path.
func checkJSONL(ctx context.Context, path string, isDir bool, drift float64, driftSet bool, timeout time.Duration, line *progress.Line) (*reports.Results, int, string, error) {
	run, file, err := openStored(path, isDir)
	if err != nil {
		return nil, 0, path, err
	}
	show := func(p checker.FileProgress) { line.Update(fileStatus(p)) }
	res, ops, err := run.checkFile(ctx, file, run.options(drift, driftSet, checker.Options{Timeout: timeout}), show)
	return res, ops, file, err
}
