package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
)

//go:embed catalog/*.yaml
var catalogFS embed.FS

// Catalog parses every built-in scenario, sorted by name. A catalog entry
// that does not parse is an error naming its file.
func Catalog(names Names) ([]*Scenario, error) {
	entries, err := fs.Glob(catalogFS, "catalog/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	var out []*Scenario
	for _, e := range entries {
		data, err := catalogFS.ReadFile(e)
		if err != nil {
			return nil, fmt.Errorf("scenarios: %w", err)
		}
		s, err := Parse(data, path.Join("scenarios", e), names)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// SoakLongTag marks the hour-long soaks: Select leaves them out unless
// asked for by this tag, so that a selection by other tags (a gate of the
// whole catalog, of one system, of the quick scenarios) never starts an
// hour-long run. By name they run like any scenario.
const SoakLongTag = "soak-long"

// Select returns the catalog scenarios carrying every one of tags (all when
// tags is empty), leaving out those tagged SoakLongTag unless tags names it.
func Select(cat []*Scenario, tags ...string) []*Scenario {
	var out []*Scenario
	long := slices.Contains(tags, SoakLongTag)
	for _, s := range cat {
		ok := long || !s.HasTag(SoakLongTag)
		for _, t := range tags {
			if !s.HasTag(t) {
				ok = false
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}
