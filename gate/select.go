package gate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// Select returns the scenarios of a gate: those named (built-in names or
// scenario files), else every built-in one carrying all of tags and none of
// skipTags (each comma-separated, "" for none), in the catalog's order. A
// name that does not load, or a selection of none, is an InputError.
func Select(named []string, tags, skipTags string) ([]*scenarios.Scenario, error) {
	names := runner.Names()
	var selected []*scenarios.Scenario
	if len(named) > 0 {
		for _, p := range named {
			sc, err := scenarios.Load(p, names)
			if err != nil {
				return nil, InputError{err}
			}
			selected = append(selected, sc)
		}
	} else {
		cat, err := scenarios.Catalog(names)
		if err != nil {
			return nil, err
		}
		var want []string
		if tags != "" {
			want = strings.Split(tags, ",")
		}
		selected = withoutTags(scenarios.Select(cat, want...), skipTags)
	}
	if len(selected) == 0 {
		return nil, InputError{fmt.Errorf("no scenario carries the tags %q", tags)}
	}
	return selected, nil
}

// withoutTags returns the scenarios of selected that carry none of
// skipTags (comma-separated, "" for none).
func withoutTags(selected []*scenarios.Scenario, skipTags string) []*scenarios.Scenario {
	if skipTags == "" {
		return selected
	}
	skip := strings.Split(skipTags, ",")
	kept := selected[:0]
	for _, sc := range selected {
		if !slices.ContainsFunc(skip, sc.HasTag) {
			kept = append(kept, sc)
		}
	}
	return kept
}
