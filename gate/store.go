package gate

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/reports"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// StoredRunDirs returns the directories of the newest n runs of sc among
// the stores that have a history, ordered by their seeds (as their
// results.json gives them), then by their times; an error when no store
// has a directory for sc. A run directory without a
// history (the run died before it started) is left out. Run directories are
// named by their start time, so the newest are the greatest names, whatever
// store holds them.
func StoredRunDirs(stores []string, sc *scenarios.Scenario, n int) ([]string, error) {
	runs, err := storedRuns(stores, sc)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(runs, func(a, b storedRun) int { return strings.Compare(b.stamp, a.stamp) })
	runs = runs[:min(n, len(runs))]
	for i := range runs {
		if res, err := reports.ReadResults(runs[i].dir); err == nil {
			runs[i].seed = res.Seed
		}
	}
	slices.SortStableFunc(runs, func(a, b storedRun) int {
		if a.seed != b.seed {
			return cmp.Compare(a.seed, b.seed)
		}
		return strings.Compare(a.stamp, b.stamp)
	})
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.dir
	}
	return out, nil
}

// storedRun is a run directory of a store, named by its start stamp.
type storedRun struct {
	dir, stamp string
	seed       uint64
}

// storedRuns returns the run directories of sc that have a history, in
// every store that has a directory for sc; an error when none has.
func storedRuns(stores []string, sc *scenarios.Scenario) ([]storedRun, error) {
	var runs []storedRun
	var missing []error
	for _, store := range stores {
		dir := filepath.Join(store, sc.Name)
		entries, err := os.ReadDir(dir)
		if err != nil {
			// A shard's store holds only the scenarios of its part.
			missing = append(missing, err)
			continue
		}
		for _, e := range entries {
			runDir := filepath.Join(dir, e.Name())
			if !e.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(runDir, reports.HistoryFile)); errors.Is(err, os.ErrNotExist) {
				continue
			}
			runs = append(runs, storedRun{dir: runDir, stamp: e.Name()})
		}
	}
	if len(missing) == len(stores) {
		return nil, fmt.Errorf("no stored runs of %s: %w", sc.Name, errors.Join(missing...))
	}
	return runs, nil
}
