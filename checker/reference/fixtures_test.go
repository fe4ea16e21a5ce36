package reference_test

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/checker/internal/fixture"
	"github.com/jepsen-lite/jepsen-lite/checker/reference"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// TestFixtures runs the reference over checker/testdata: each NAME.jsonl
// must get exactly the verdict and kinds of NAME.expect, under the drift
// checker.TestFixtures uses (the default, 0.01), and, where NAME.expect has
// a "liveness:" line, exactly its liveness kinds under the default bounds.
// A malformed fixture must be refused.
func TestFixtures(t *testing.T) {
	files, err := filepath.Glob("../testdata/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			verdict, kinds := readExpect(t, strings.TrimSuffix(file, ".jsonl")+".expect")
			h, _, err := history.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			res, err := reference.Check(h, checker.DefaultDrift)
			if errors.Is(err, history.ErrMalformed) {
				if verdict != checker.Unknown {
					t.Fatalf("the reference refused it (%v), want %s %v", err, verdict, kinds)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := res.All(); res.Verdict != verdict || !slices.Equal(got, kinds) {
				t.Fatalf("reference: %s %v, want %s %v", res.Verdict, got, verdict, kinds)
			}
			want, judged, err := fixture.Liveness(strings.TrimSuffix(file, ".jsonl") + ".expect")
			if err != nil {
				t.Fatal(err)
			}
			if !judged {
				return
			}
			live, err := reference.Liveness(h, reference.LivenessOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range live.Findings {
				got = append(got, f.Kind)
			}
			slices.Sort(got)
			if got = slices.Compact(got); !slices.Equal(got, want) {
				t.Fatalf("reference liveness: %s %+v, want %v", live.Verdict, live.Findings, want)
			}
		})
	}
}

// readExpect reads NAME.expect: a "verdict:" line and an "anomalies:" line
// listing exactly the kinds found (malformed-history left out: it is no
// verdict about the lock, and the reference refuses such a history).
func readExpect(t *testing.T, path string) (checker.Verdict, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var v checker.Verdict
	var kinds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "verdict":
			v = checker.Verdict(strings.TrimSpace(val))
		case "anomalies":
			for _, kind := range strings.Fields(val) {
				if kind != checker.Malformed {
					kinds = append(kinds, kind)
				}
			}
		}
	}
	if v == "" {
		t.Fatalf("%s: no verdict line", path)
	}
	slices.Sort(kinds)
	return v, kinds
}
