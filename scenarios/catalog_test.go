package scenarios_test

import (
	"errors"
	"path"
	"strings"
	"testing"
	"time"

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

// TestSelectLeavesOutHourLongSoaks requires a selection by any tags but
// soak-long to leave the hour-long soaks out, and soak-long to select
// exactly them, one per system.
func TestSelectLeavesOutHourLongSoaks(t *testing.T) {
	cat, err := scenarios.Catalog(realNames())
	if err != nil {
		t.Fatal(err)
	}
	for _, tags := range [][]string{nil, {"redis"}, {"postgres"}, {"zookeeper"}, {"etcd"}, {"quick"}} {
		for _, s := range scenarios.Select(cat, tags...) {
			if s.HasTag(scenarios.SoakLongTag) {
				t.Errorf("tags %v select %s", tags, s.Name)
			}
		}
	}
	systems := map[string]bool{}
	for _, s := range scenarios.Select(cat, scenarios.SoakLongTag) {
		if !s.HasTag(scenarios.SoakLongTag) || s.Duration < time.Hour {
			t.Errorf("%s: tags %v, duration %v", s.Name, s.Tags, s.Duration)
		}
		systems[s.System.Name] = true
	}
	for _, sys := range []string{"redis", "postgres", "zookeeper", "etcd"} {
		if !systems[sys] {
			t.Errorf("no soak-long scenario of %s", sys)
		}
	}
}
