package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/jepsen-lite/jepsen-lite/datasheet"
)

// mergeFlags are the flags hunt --merge takes: the merged campaign's file
// (--json, which it needs), its table as Markdown and --quiet; the others
// set a campaign, which the parts' files already say.
var mergeFlags = []string{"merge", "json", "markdown", "quiet"}

// checkMerge refuses a hunt --merge without part files or --json, or with
// a flag of a campaign's own.
func (f *huntFlags) checkMerge() error {
	var other []string
	f.fs.Visit(func(fl *flag.Flag) {
		if !slices.Contains(mergeFlags, fl.Name) {
			other = append(other, "--"+fl.Name)
		}
	})
	switch {
	case len(other) > 0:
		return usagef("--merge takes the parts' campaign files, --json, --markdown and --quiet, not %v: the parts' files say how their campaign ran", other)
	case len(f.files) == 0:
		return usagef("--merge wants the campaign files of a campaign's parts (hunt --shard i/n --json FILE)")
	case f.jsonOut == "":
		return usagef("--merge wants --json FILE, the merged campaign's file")
	}
	return nil
}

// huntMerge merges the campaign files of a campaign's parts into one
// (datasheet.ReadParts), writes it to --json, prints the whole campaign's
// table (and writes its Markdown), and exits as the whole campaign would
// have; a set of files that is not every part of one campaign, once, is
// bad input.
func huntMerge(ctx context.Context, f *huntFlags, stdout, stderr io.Writer) (int, error) {
	cf, err := datasheet.ReadParts(f.files)
	if err != nil {
		return exitUsage, usageError{err}
	}
	if err := cf.Write(f.jsonOut); err != nil {
		return exitInternal, err
	}
	printHunt(stdout, cf.Report)
	if f.markdown != "" {
		if err := os.WriteFile(f.markdown, []byte(huntMarkdown(cf.Report, cf.Target)), 0o644); err != nil {
			return exitInternal, err
		}
	}
	fmt.Fprintf(stdout, "hunt: merged %d parts of `hunt %s` into %s (its time is the sum of theirs)\n", cf.MergedParts, cf.Target, f.jsonOut)
	return huntExit(ctx, cf.Report, nil, stdout, stderr)
}
