package checker

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// expectation reads testdata/<name>.expect: a "verdict:" line and an
// "anomalies:" line listing exactly the kinds that must be found.
func readExpect(t *testing.T, path string) (Verdict, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var v Verdict
	var kinds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "verdict":
			v = Verdict(strings.TrimSpace(val))
		case "anomalies":
			kinds = strings.Fields(val)
		}
	}
	if v == "" {
		t.Fatalf("%s: no verdict line", path)
	}
	slices.Sort(kinds)
	return v, kinds
}

// readLivenessExpect reads the "liveness:" line of testdata/<name>.expect:
// exactly the liveness anomaly kinds Liveness must find. A fixture without
// the line is not judged for liveness.
func readLivenessExpect(t *testing.T, path string) ([]string, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "liveness" {
			kinds := strings.Fields(val)
			slices.Sort(kinds)
			return kinds, true
		}
	}
	return nil, false
}

func TestFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			wantVerdict, wantKinds := readExpect(t, strings.TrimSuffix(file, ".jsonl")+".expect")
			h, _, err := history.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			out := t.TempDir()
			res := Check(context.Background(), h, Options{OutDir: out})
			var kinds []string
			for _, r := range res {
				for _, a := range r.Anomalies {
					if !slices.Contains(kinds, a.Kind) {
						kinds = append(kinds, a.Kind)
					}
					if a.Message == "" || len(a.Ops) == 0 || strings.Contains(a.Message, "\n") {
						t.Errorf("%s: anomaly without a one-line message or ops: %+v", r.Name, a)
					}
					for _, i := range a.Ops {
						if i < 0 || i >= len(h) {
							t.Errorf("%s: anomaly names op %d, outside the history", r.Name, i)
						}
					}
				}
			}
			slices.Sort(kinds)
			got := Overall(res)
			if got != wantVerdict || !slices.Equal(kinds, wantKinds) {
				s := ""
				for _, r := range res {
					s += "\n" + r.Name + ": " + string(r.Verdict) + " " + r.Note
					for _, a := range r.Anomalies {
						s += "\n  " + a.Kind + ": " + a.Message
					}
				}
				t.Fatalf("got %s %v, want %s %v%s", got, kinds, wantVerdict, wantKinds, s)
			}
			if wantLive, ok := readLivenessExpect(t, strings.TrimSuffix(file, ".jsonl")+".expect"); ok {
				live := Liveness(h, LivenessOptions{})
				var got []string
				for _, a := range live.Anomalies {
					if !slices.Contains(got, a.Kind) {
						got = append(got, a.Kind)
					}
					if a.Message == "" || len(a.Ops) < 4 || a.Window == nil || strings.Contains(a.Message, "\n") {
						t.Errorf("liveness anomaly without a one-line message, its ops or its window: %+v", a)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, wantLive) {
					t.Fatalf("liveness %s %v, want %v (note %q, anomalies %+v)", live.Verdict, got, wantLive, live.Note, live.Anomalies)
				}
			}
			_, statErr := os.Stat(filepath.Join(out, VisualizationFile))
			linInvalid := res[2].Verdict == Invalid
			if linInvalid != (statErr == nil) {
				t.Errorf("linearizability %s but %s exists: %v", res[2].Verdict, VisualizationFile, statErr == nil)
			}
			if testing.Verbose() {
				for _, r := range res {
					for _, a := range r.Anomalies {
						t.Logf("%s %s %v: %s", r.Name, a.Kind, a.Ops, a.Message)
					}
				}
			}
		})
	}
}
