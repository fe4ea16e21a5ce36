package checker

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

func TestCheckRunsOutOfTimeIsUnknown(t *testing.T) {
	h := synth.Generate(rand.New(rand.NewPCG(7, 7)), synth.Options{Workers: 4, Keys: 2, Ops: 3000, InfoRate: 0.01, Tokens: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := Check(ctx, h, Options{})
	if v := Overall(res); v != Unknown {
		t.Fatalf("cancelled check: %s", v)
	}
	for _, r := range res[1:] {
		if r.Verdict == Valid {
			t.Errorf("%s is valid after its context ended", r.Name)
		}
	}
	if v := Overall(Check(context.Background(), h, Options{Timeout: time.Minute})); v != Valid {
		t.Fatalf("same history with time to spare: %s", v)
	}
}

func TestCheckersOrderAndNames(t *testing.T) {
	var names []string
	for _, c := range Checkers(Options{}) {
		names = append(names, c.Name())
	}
	want := "well-formed double-hold linearizability resource fencing-tokens queue"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("Checkers = %s, want %s", got, want)
	}
}

func TestMalformedStopsOtherCheckers(t *testing.T) {
	h := history.History{{Index: 0, Time: 1, Process: 0, Type: history.OK, F: history.FAcquire, Key: "k"}}
	res := Check(context.Background(), h, Options{})
	if res[0].Verdict != Unknown || len(res[0].Anomalies) != 1 || res[0].Anomalies[0].Kind != Malformed || res[0].Anomalies[0].Ops[0] != 0 {
		t.Fatalf("well-formed: %+v", res[0])
	}
	for _, r := range res[1:] {
		if r.Verdict != Unknown || len(r.Anomalies) != 0 {
			t.Fatalf("%s ran on a malformed history: %+v", r.Name, r)
		}
	}
	// each checker on its own refuses too
	for _, c := range Checkers(Options{})[1:] {
		if r := c.Check(context.Background(), h); r.Verdict != Unknown {
			t.Fatalf("%s alone: %s", c.Name(), r.Verdict)
		}
	}
}

func TestVisualizationHasNemesisAnnotations(t *testing.T) {
	h, _, err := history.ReadFile("testdata/double-grant.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// a nemesis op during the overlap
	nem := history.Op{Time: h[2].Time, Process: history.NemesisProcess, Type: history.Info, F: "clock-bump", Value: json.RawMessage(`{"node":"n1","delta":"+30s"}`)}
	h = append(h[:3], append(history.History{nem}, h[3:]...)...)
	for i := range h {
		h[i].Index = i
	}
	dir := t.TempDir()
	res := Check(context.Background(), h, Options{OutDir: dir})
	if res[2].Verdict != Invalid {
		t.Fatalf("linearizability: %+v", res[2])
	}
	b, err := os.ReadFile(filepath.Join(dir, VisualizationFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "clock-bump") || !strings.Contains(res[2].Note, VisualizationFile) {
		t.Fatalf("visualization lacks the nemesis op, or the note does not point at it: %q", res[2].Note)
	}
}

func TestDeterministicAnomalies(t *testing.T) {
	h := synth.Generate(rand.New(rand.NewPCG(3, 3)), synth.Options{Workers: 6, Keys: 3, Ops: 3000, InfoRate: 0.02, Tokens: true})
	bad, err := synth.Inject(rand.New(rand.NewPCG(3, 4)), h, DoubleHold)
	if err != nil {
		t.Fatal(err)
	}
	first := Check(context.Background(), bad, Options{})
	for i := 0; i < 3; i++ {
		again := Check(context.Background(), bad, Options{})
		for j := range first {
			a, _ := json.Marshal(first[j].Anomalies)
			b, _ := json.Marshal(again[j].Anomalies)
			if string(a) != string(b) {
				t.Fatalf("%s: anomalies differ between runs:\n%s\n%s", first[j].Name, a, b)
			}
		}
	}
}

func FuzzCheck(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, _, err := history.Read(strings.NewReader(string(data)), "fuzz")
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res := Check(ctx, h, Options{})
		if len(res) != 6 {
			t.Fatalf("%d results", len(res))
		}
		for _, r := range res {
			if r.Verdict != Valid && r.Verdict != Invalid && r.Verdict != Unknown {
				t.Fatalf("%s: verdict %q", r.Name, r.Verdict)
			}
			if r.Verdict == Invalid && len(r.Anomalies) == 0 {
				t.Fatalf("%s: invalid without anomalies", r.Name)
			}
		}
	})
}
