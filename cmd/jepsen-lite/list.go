package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

const listUsage = `Usage: jepsen-lite list [--scenarios | --algorithms | --faults] [--tags quick]

Lists the built-in scenarios (the default), the lock algorithms with the
queue implementations (workload: queue) and their capture statements, or
the fault kinds.

Examples:
  jepsen-lite list
  jepsen-lite list --tags quick
  jepsen-lite list --algorithms
  jepsen-lite list --faults`

func listCmd(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("list", listUsage, stderr)
	algs := fs.Bool("algorithms", false, "list the lock algorithms and the queue implementations")
	faults := fs.Bool("faults", false, "list the fault kinds")
	_ = fs.Bool("scenarios", false, "list the built-in scenarios (the default)")
	tags := fs.String("tags", "", "comma-separated tags a scenario must all carry")
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
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	defer tw.Flush()
	switch {
	case *algs:
		fmt.Fprintln(tw, "ALGORITHM\tSYSTEM\tFENCING TOKEN\tVALIDITY\tLEASE (WHAT FREES IT)\tACQUIRE STEP THAT CAN TAKE THE LOCK")
		for _, a := range clients.Algorithms() {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, a.System, a.Token, a.Validity, a.Lease, a.GrantsText())
		}
		tw.Flush()
		fmt.Fprintln(stdout)
		fmt.Fprintln(tw, "QUEUE (workload: queue)\tSYSTEM\tRETRY BUDGET\tCAPTURE")
		for _, a := range clients.QueueAlgorithms() {
			budget := "none"
			switch {
			case a.Name == clients.ExecAlgorithm:
				budget = "the client's (retries_left)"
			case a.Budget:
				budget = "retries_left"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, a.System, budget, a.Capture)
		}
	case *faults:
		fmt.Fprintln(tw, "FAULT\tHEAL\tCLASS\tTARGETS\tNODES DOWN\tSYSTEMS\tBACKENDS\tDESCRIPTION")
		for _, k := range nemesis.Faults() {
			f := k.Facts()
			heal, down := f.Heal, "no"
			if f.Moment {
				heal = "(a moment)"
			}
			desc := f.Description
			if f.Unavailable != "" {
				down = "yes"
				desc += "; nodes down: " + f.Unavailable
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f.Name, heal, f.Class, f.Targets, down, everyOr(f.Systems), everyOr(f.Backends), desc)
		}
	default:
		cat, err := scenarios.Catalog(runner.Names())
		if err != nil {
			return exitInternal, err
		}
		var want []string
		if *tags != "" {
			want = strings.Split(*tags, ",")
		}
		fmt.Fprintln(tw, "SCENARIO\tALGORITHM\tEXPECT\tTAGS")
		for _, s := range scenarios.Select(cat, want...) {
			exp := expectText(s.Expect)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Lock.Algorithm, exp, strings.Join(s.Tags, ","))
		}
	}
	return exitHeld, nil
}

// everyOr returns the names joined by commas, or "every" when there are none
// (a fault's Systems and Backends: nil for every one).
func everyOr(names []string) string {
	if len(names) == 0 {
		return "every"
	}
	return strings.Join(names, ",")
}
