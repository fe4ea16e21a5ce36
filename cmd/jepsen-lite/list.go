package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/gate"
	"github.com/jepsen-lite/jepsen-lite/nemesis"
	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

const listUsage = `Usage: jepsen-lite list [--scenarios | --algorithms | --faults | --anomalies] [--tags quick]

Lists the built-in scenarios (the default); the lock algorithms with their
capabilities and options, and the queue implementations (workload: queue)
with their capture statements; the fault kinds; or the anomaly kinds with
the checker that reports each.

Examples:
  jepsen-lite list
  jepsen-lite list --tags quick
  jepsen-lite list --algorithms
  jepsen-lite list --faults
  jepsen-lite list --anomalies`

func listCmd(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("list", listUsage, stderr)
	algs := fs.Bool("algorithms", false, "list the lock algorithms and the queue implementations")
	faults := fs.Bool("faults", false, "list the fault kinds")
	anomalies := fs.Bool("anomalies", false, "list the anomaly kinds and the checker that reports each")
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
		listAlgorithms(tw, stdout)
		fmt.Fprintln(tw, "QUEUE (workload: queue)\tSYSTEM\tRETRY BUDGET\tOPTIONS\tCAPTURE")
		for _, a := range clients.QueueAlgorithms() {
			budget := "none"
			switch a.Budget {
			case clients.ByClient:
				budget = "the client's (retries_left)"
			case clients.With:
				budget = "retries_left"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Name, a.System, budget, optionNames(a.Options, a.OtherOptions), a.Capture)
		}
	case *anomalies:
		fmt.Fprintln(tw, "ANOMALY\tCHECKER\tMEANING (docs/history.md §4)")
		for _, k := range anomaly.Kinds {
			checker := k.Checker
			if k.Liveness() {
				checker += " (apart from the verdict)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Name, checker, k.Meaning)
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
		listed := cat // a listing shows the hour-long soaks too: it runs nothing
		if len(want) > 0 {
			listed = scenarios.Select(cat, want...)
		}
		for _, s := range listed {
			exp := gate.ExpectText(s.Expect)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Lock.Algorithm, exp, strings.Join(s.Tags, ","))
		}
	}
	return exitHeld, nil
}

// listAlgorithms writes the lock algorithms' declarations to tw (flushed
// to stdout): what they are, then their options, each table followed by an
// empty line.
func listAlgorithms(tw *tabwriter.Writer, stdout io.Writer) {
	fmt.Fprintln(tw, "ALGORITHM\tSYSTEM\tFENCING TOKEN\tVALIDITY\tLEASE (WHAT FREES IT)\tCAPABILITIES")
	for _, a := range clients.Algorithms() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.Name, a.System, a.Lease.TokenText(), a.Validity, a.Lease.Text(), a.Capabilities.Text())
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	// The steps up to the first that can take the lock: a failure before
	// it is fail, at it info (docs/usage.md, "Which step of an acquire
	// takes the lock").
	fmt.Fprintln(tw, "ALGORITHM\tACQUIRE STEP\tCAN TAKE THE LOCK\tSENDS")
	for _, a := range clients.Algorithms() {
		for _, s := range a.Steps {
			can := "no: a failure is fail"
			if s.Grants {
				can = "yes: a failure is info unless it provably took nothing"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, s.Name, can, s.Sends)
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	fmt.Fprintln(tw, "ALGORITHM\tOPTION (lock.options)\tDEFAULT\tMEANING")
	for _, a := range clients.Algorithms() {
		for _, o := range a.Options {
			def := o.Default
			if o.Required() {
				def = "(required)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, o.Name, def, o.Doc)
		}
		if a.OtherOptions != "" {
			fmt.Fprintf(tw, "%s\t(any other)\t\tgoes to %s\n", a.Name, a.OtherOptions)
		}
	}
	tw.Flush()
	fmt.Fprintln(stdout)
}

// optionNames lists the names of options, and whether others go elsewhere.
func optionNames(options []clients.Option, others string) string {
	var names []string
	for _, o := range options {
		names = append(names, o.Name)
	}
	if others != "" {
		names = append(names, "any other (to "+others+")")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// everyOr returns the names joined by commas, or "every" when there are none
// (a fault's Systems and Backends: nil for every one).
func everyOr(names []string) string {
	if len(names) == 0 {
		return "every"
	}
	return strings.Join(names, ",")
}
