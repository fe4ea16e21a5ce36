package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/jepsen-lite/jepsen-lite/reports"
)

var reportUsage = fmt.Sprintf(`Usage: jepsen-lite report <run dir>

Regenerates report.html in a run directory, offline, from its stored
history.jsonl, results.json and scenario.yaml. A history of more than
%d ops is read op by op and drawn in summary: the whole run
downsampled, every fault, anomaly and liveness window exactly, and the
full detail around every anomaly (served by "jepsen-lite serve", the
report loads the detail of any window on demand).

Examples:
  jepsen-lite report store/latest
  jepsen-lite check store/latest --json > /dev/null && jepsen-lite report store/latest`, reports.LongHistoryOps)

func reportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("report", reportUsage, stderr)
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	if len(pos) != 1 {
		return exitUsage, usagef("want exactly one run dir")
	}
	if st, err := os.Stat(pos[0]); err != nil || !st.IsDir() {
		return exitUsage, usagef("%s is not a run directory", pos[0])
	}
	// The reading, which may be long, stops at Ctrl-C; the report is
	// written under a temporary name and renamed, so it is whole or absent.
	var in reports.ReportInput
	err = unlessInterrupted(ctx, func() (err error) {
		in, err = reports.LoadReportInput(pos[0])
		return err
	})
	if errors.Is(err, errInterrupted) {
		fmt.Fprintf(stderr, "jepsen-lite report: interrupted; %s is as it was\n", pos[0])
		return exitUnknown, nil
	}
	if err == nil {
		err = reports.WriteReport(pos[0], in)
	}
	if err != nil {
		return exitUsage, usageError{err}
	}
	fmt.Fprintln(stdout, filepath.Join(pos[0], reports.ReportFile))
	return exitHeld, nil
}

const serveUsage = `Usage: jepsen-lite serve [--store DIR] [--addr 127.0.0.1:8080]

Serves a page listing the stored runs (scenario, time, verdict, expectation,
anomalies; filter by scenario and verdict; newest first) with links to each
report and file. A long run's report, served, loads the full detail of
the window it is zoomed into from the run's stored history
(runs/<scenario>/<timestamp>/detail.json?from=<µs>&to=<µs>). Binds to
loopback unless --allow-remote is given.

Examples:
  jepsen-lite serve
  jepsen-lite serve --store /tmp/store --addr 127.0.0.1:9000`

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("serve", serveUsage, stderr)
	store := fs.String("store", "store", "the store directory")
	addr := fs.String("addr", "127.0.0.1:8080", "the address to listen on")
	remote := fs.Bool("allow-remote", false, "allow a non-loopback --addr")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 {
		return exitUsage, usagef("unexpected argument %q", pos[0])
	}
	opts := []reports.ServeOption{reports.OnListen(func(a net.Addr) {
		fmt.Fprintf(stdout, "serving %s on http://%s/ (Ctrl-C to stop)\n", *store, a)
	})}
	if *remote {
		opts = append(opts, reports.AllowNonLoopback())
	}
	if err := reports.Serve(ctx, *store, *addr, opts...); err != nil {
		if ctx.Err() != nil {
			return exitHeld, nil
		}
		return exitUsage, usageError{err}
	}
	return exitHeld, nil
}
