package checker

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker/internal/fixture"
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

// anomalyClaims are the lines of testdata/<name>.expect that pin what the
// anomalies say, each "<field>: <kind> <rest>":
//   - "ops: early-grant 9 5": some anomaly of the kind names exactly these
//     ops, in this order;
//   - "says: early-grant <phrase>": some anomaly of the kind says the phrase;
//   - "never: early-grant <phrase>": no anomaly of the kind says it;
//   - "grouped: double-hold 1 20": the kind is reported as that many
//     anomalies, which together have that many followers (Follows, each
//     with its ops in Followers).
type anomalyClaim struct {
	field, kind, rest string
}

func readClaims(t *testing.T, path string) []anomalyClaim {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cs []anomalyClaim
	for _, line := range strings.Split(string(b), "\n") {
		field, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch field = strings.TrimSpace(field); field {
		case "ops", "says", "never", "grouped":
			kind, rest, _ := strings.Cut(strings.TrimSpace(val), " ")
			cs = append(cs, anomalyClaim{field, kind, strings.TrimSpace(rest)})
		}
	}
	return cs
}

// checkClaim reports whether the anomalies as of the claim's kind satisfy
// it.
func checkClaim(c anomalyClaim, as []Anomaly) bool {
	var of []Anomaly
	for _, a := range as {
		if a.Kind == c.kind {
			of = append(of, a)
		}
	}
	switch c.field {
	case "ops":
		for _, a := range of {
			if strings.Trim(fmt.Sprint(a.Ops), "[]") == c.rest {
				return true
			}
		}
	case "says":
		for _, a := range of {
			if strings.Contains(a.Message, c.rest) {
				return true
			}
		}
	case "never":
		for _, a := range of {
			if strings.Contains(a.Message, c.rest) {
				return false
			}
		}
		return true
	case "grouped":
		follows := 0
		for _, a := range of {
			follows += a.Follows
			if len(a.Followers) != a.Follows {
				return false
			}
		}
		return fmt.Sprintf("%d %d", len(of), follows) == c.rest
	}
	return false
}

func TestFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) { checkFixture(t, file) })
	}
}

// checkFixture checks the history in file against its .expect: the
// verdict and kinds of the checks, the claims about the anomalies, the
// liveness kinds, the shape of every anomaly and the visualization.
func checkFixture(t *testing.T, file string) {
	expect := strings.TrimSuffix(file, ".jsonl") + ".expect"
	wantVerdict, wantKinds := readExpect(t, expect)
	h, _, err := history.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	res := Check(context.Background(), h, Options{OutDir: out})
	kinds := fixtureKinds(t, h, res)
	all := fixtureAnomalies(t, h, res)
	// liveness anomalies (lost-task) are claimed about too
	all = append(all, Liveness(h, LivenessOptions{}).Anomalies...)
	checkFixtureClaims(t, expect, all)
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
	checkFixtureLiveness(t, expect, h)
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
}

// fixtureKinds returns the sorted kinds of the anomalies of res, and fails
// t for each anomaly without a one-line message or ops, or naming an op
// outside h.
func fixtureKinds(t *testing.T, h history.History, res []Result) []string {
	t.Helper()
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
	return kinds
}

// fixtureAnomalies returns every anomaly of res, and fails t for each
// follower naming an op outside h.
func fixtureAnomalies(t *testing.T, h history.History, res []Result) []Anomaly {
	t.Helper()
	var all []Anomaly
	for _, r := range res {
		all = append(all, r.Anomalies...)
		for _, a := range r.Anomalies {
			for _, ops := range a.Followers {
				for _, i := range ops {
					if i < 0 || i >= len(h) {
						t.Errorf("%s: a follower names op %d, outside the history", r.Name, i)
					}
				}
			}
		}
	}
	return all
}

// checkFixtureClaims fails t for each claim of the .expect file expect
// that is not so of the anomalies all.
func checkFixtureClaims(t *testing.T, expect string, all []Anomaly) {
	t.Helper()
	for _, c := range readClaims(t, expect) {
		if !checkClaim(c, all) {
			s := ""
			for _, a := range all {
				s += fmt.Sprintf("\n  %s %v (follows %d): %s", a.Kind, a.Ops, a.Follows, a.Message)
			}
			t.Errorf("%s: %s %s: not so of%s", c.field, c.kind, c.rest, s)
		}
	}
}

// checkFixtureLiveness checks h's liveness kinds against the .expect file
// expect, when it judges liveness, and the shape of each liveness anomaly.
func checkFixtureLiveness(t *testing.T, expect string, h history.History) {
	t.Helper()
	wantLive, judged, err := fixture.Liveness(expect)
	if err != nil {
		t.Fatal(err)
	}
	if !judged {
		return
	}
	live := Liveness(h, LivenessOptions{})
	var got []string
	for _, a := range live.Anomalies {
		if !slices.Contains(got, a.Kind) {
			got = append(got, a.Kind)
		}
		if a.Message == "" || len(a.Ops) < 3 || a.Kind != LostTask && len(a.Ops) < 4 || a.Window == nil || strings.Contains(a.Message, "\n") {
			t.Errorf("liveness anomaly without a one-line message, its ops or its window: %+v", a)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, wantLive) {
		t.Fatalf("liveness %s %v, want %v (note %q, anomalies %+v)", live.Verdict, got, wantLive, live.Note, live.Anomalies)
	}
}
