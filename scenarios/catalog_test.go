package scenarios_test

import (
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/runner"
	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

func realNames() scenarios.Names { return runner.Names() }

// TestCatalog requires every built-in scenario to parse, to be named after
// its file, and to say what it shows, where it comes from and its tags.
func TestCatalog(t *testing.T) {
	cat, err := scenarios.Catalog(realNames())
	if err != nil {
		t.Fatal(err)
	}
	if len(cat) < 3 {
		t.Fatalf("catalog has %d scenarios", len(cat))
	}
	seen := map[string]bool{}
	for _, s := range cat {
		t.Run(s.Name, func(t *testing.T) {
			if seen[s.Name] {
				t.Errorf("duplicate name")
			}
			seen[s.Name] = true
			if want := s.Name + ".yaml"; path.Base(s.File) != want {
				t.Errorf("file %s, want %s", s.File, want)
			}
			if s.Description == "" || s.Source == "" || len(s.Tags) == 0 {
				t.Errorf("missing description, source or tags")
			}
			if s.Expect.Verdict == "invalid" && len(s.Expect.Anomalies) == 0 {
				t.Errorf("expects invalid without naming the anomalies")
			}
		})
	}
	if len(scenarios.Select(cat, "quick")) == 0 {
		t.Error("no quick scenario")
	}
}

func TestLoadUnknownNameListsKnown(t *testing.T) {
	_, err := scenarios.Load("no-such-scenario", realNames())
	if !errors.Is(err, scenarios.ErrUnknownScenario) {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "redis-single-gc-pause") {
		t.Errorf("error does not list the catalog: %v", err)
	}
}
