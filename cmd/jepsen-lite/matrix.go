package main

import (
	"context"
	"errors"
	"io"

	"github.com/jepsen-lite/jepsen-lite/datasheet"
)

const matrixUsage = `Usage: jepsen-lite matrix [--out FILE] [--html FILE] [--schedules DIR] campaign.json...

Renders the safety datasheet of hunt campaigns (hunt --json FILE): one row
per campaign file (named by the file, without .json), one column per fault
kind any of them hunted with, in the declarations' order (list --faults),
no fault first. Every cell is one of:

  safe         no run of the kind was invalid: 0/n, with how many runs were
               unknown (a fault that failed, a check out of time);
  unsafe       k/n runs were invalid, with the anomalies they found; a note
               under the table gives the first failing run's first anomaly
               in the checker's words and its schedule;
  not decided  every run was unknown;
  n/a          the kind cannot run on the row's lock, and why: the cluster
               said so (a failover without a replica), or the fault is not
               declared for the lock's system (the system's own reason where
               it gives one: etcd's clock cannot be skewed).

With --schedules DIR each unsafe cell's schedule is written to
DIR/<row>-<fault>.yaml and linked: the shrunk.yaml of the first of the
kind's failing runs that 'jepsen-lite shrink' reduced, else the first
failing run's own stored scenario (its exact fault steps and seed),
expecting the anomalies it found. Either runs
as 'jepsen-lite run DIR/<row>-<fault>.yaml'. A campaign file holds its
failing runs' first anomalies, so once their store is gone the page is
made again from the files alone: each note quotes the file, and each
schedule written before stays.

--out writes Markdown (default: standard output); --html writes the same
page as HTML.

A row is a whole campaign: the file of one part of a campaign (hunt
--shard i/n --json FILE) is refused; merge the parts' files into one
first (hunt --merge part.json... --json FILE), whose row then says that its
time is the sum of the parts'.

Exit 0 when the page was written, 254 for a missing or malformed campaign
file, or the file of a part.

Examples:
  jepsen-lite hunt redlock --runs 10 --json build/redlock.json
  jepsen-lite matrix build/*.json --out docs/matrix.md --schedules docs/matrix`

// matrixCmd renders the datasheet of campaign files (package datasheet).
func matrixCmd(_ context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("matrix", matrixUsage, stderr)
	out := fs.String("out", "", "write the datasheet as Markdown to this file (default: standard output)")
	htmlOut := fs.String("html", "", "write the datasheet as HTML to this file")
	schedules := fs.String("schedules", "", "write each unsafe cell's schedule into this directory and link it")
	pos, err := parseArgs(fs, args)
	if errors.Is(err, errHelp) {
		return exitHeld, nil
	}
	if err != nil {
		return exitUsage, err
	}
	if len(pos) == 0 {
		return exitUsage, usagef("want at least one campaign file (hunt --json FILE)")
	}
	files, names, err := datasheet.ReadCampaigns(pos)
	if err != nil {
		return exitUsage, usageError{err}
	}
	dst := datasheet.Output{Markdown: *out, HTML: *htmlOut, Schedules: *schedules}
	if err := datasheet.Build(files, names).Render(dst, stdout); err != nil {
		return exitInternal, err
	}
	return exitHeld, nil
}
