package checker

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// hostClaims reads testdata/host/<name>.expect: its "verdict:" line, and
// lines "host: <kind> <phrase>" (some anomaly of the kind has a host note
// that says the phrase) and "nohost: <kind>" (no anomaly of the kind has a
// host note).
func hostClaims(t *testing.T, path string) (Verdict, map[string]string, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var v Verdict
	host := map[string]string{}
	var nohost []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		field, val, _ := strings.Cut(sc.Text(), ":")
		val = strings.TrimSpace(val)
		switch field {
		case "verdict":
			v = Verdict(val)
		case "host":
			kind, phrase, _ := strings.Cut(val, " ")
			host[kind] = phrase
		case "nohost":
			nohost = append(nohost, val)
		}
	}
	if v == "" {
		t.Fatalf("%s: no verdict line", path)
	}
	return v, host, nohost
}

// allAnomalies returns every anomaly of results and live.
func allAnomalies(results []Result, live *LivenessResult) []Anomaly {
	var all []Anomaly
	forEachAnomaly(results, live, func(a *Anomaly) { all = append(all, *a) })
	return all
}

// withoutHostRecords returns h without its host records, indexed again.
func withoutHostRecords(h history.History) history.History {
	var out history.History
	for _, op := range h {
		if !op.IsHostRecord() {
			op.Index = len(out)
			out = append(out, op)
		}
	}
	return out
}

// TestHostNotes checks each history of testdata/host: read whole and read
// from its file, it gets the verdict of its .expect, and its anomalies
// the host notes the .expect claims, the same both ways; without its host
// records it gets the same verdict and anomalies, with no host note: the
// records change no verdict.
func TestHostNotes(t *testing.T) {
	files, err := filepath.Glob("testdata/host/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no histories: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".jsonl"), func(t *testing.T) {
			want, host, nohost := hostClaims(t, strings.TrimSuffix(file, ".jsonl")+".expect")
			h, _, err := history.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if v := history.Version(h); v < 7 {
				t.Fatalf("the history is of version %d; host records are of version 7", v)
			}
			results, live := CheckWithLiveness(context.Background(), h, Options{}, LivenessOptions{})
			fr, err := CheckFile(context.Background(), file, FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got, gotFile := Overall(results), Overall(fr.Results); got != want || gotFile != want {
				t.Fatalf("verdict %s (read from the file: %s), want %s", got, gotFile, want)
			}
			whole, read := allAnomalies(results, live), allAnomalies(fr.Results, fr.Liveness)
			if len(whole) != len(read) {
				t.Fatalf("%d anomalies read whole, %d from the file", len(whole), len(read))
			}
			for i := range whole {
				if whole[i].Host != read[i].Host {
					t.Errorf("%s's host note read whole %q, from the file %q", whole[i].Kind, whole[i].Host, read[i].Host)
				}
			}
			for kind, phrase := range host {
				if !hasHostNote(whole, kind, phrase) {
					t.Errorf("no %s says %q in its host note: %+v", kind, phrase, whole)
				}
			}
			for _, kind := range nohost {
				if hasHostNote(whole, kind, "") {
					t.Errorf("a %s has a host note: %+v", kind, whole)
				}
			}
			bare := withoutHostRecords(h)
			bareResults, bareLive := CheckWithLiveness(context.Background(), bare, Options{}, LivenessOptions{})
			if Overall(bareResults) != want || bareLive.Verdict != live.Verdict {
				t.Fatalf("without its host records: verdict %s, liveness %s; with them %s, %s", Overall(bareResults), bareLive.Verdict, want, live.Verdict)
			}
			plain := allAnomalies(bareResults, bareLive)
			if len(plain) != len(whole) {
				t.Fatalf("without its host records: %d anomalies, with them %d", len(plain), len(whole))
			}
			for i := range plain {
				if plain[i].Kind != whole[i].Kind || plain[i].Message != whole[i].Message || plain[i].Host != "" {
					t.Errorf("without its host records: %+v; with them %+v", plain[i], whole[i])
				}
			}
		})
	}
}

// hasHostNote reports whether some anomaly of kind has a host note that
// says phrase.
func hasHostNote(as []Anomaly, kind, phrase string) bool {
	for _, a := range as {
		if a.Kind == kind && a.Host != "" && strings.Contains(a.Host, phrase) {
			return true
		}
	}
	return false
}

// TestHostNoteWindows: an anomaly's window covers its liveness window and
// its ops' calls, and its note names at most hostEventsListed events and
// counts the rest.
func TestHostNoteWindows(t *testing.T) {
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	stall := func(at, length float64) history.HostEvent {
		return history.HostEvent{Kind: history.FStall, Time: sec(at), Size: sec(length), From: sec(at - length)}
	}
	spans := map[int]*opSpan{3: {from: sec(1), to: sec(1.2)}, 7: {from: sec(2), to: sec(2.5)}}
	tests := []struct {
		name   string
		a      Anomaly
		events []history.HostEvent
		want   string // "" for no note
	}{
		{"liveness window", Anomaly{Kind: Stuck, Window: &Window{Start: sec(10), End: sec(12)}}, []history.HostEvent{stall(11, 0.2)},
			"harness stalled 200ms at 10.800s inside this finding's window (10.000s–12.000s)"},
		{"stall ending as the window begins", Anomaly{Kind: Stuck, Window: &Window{Start: sec(10), End: sec(12)}}, []history.HostEvent{stall(10, 0.5)},
			"harness stalled 500ms at 9.500s inside this finding's window (10.000s–12.000s)"},
		{"stall before the window", Anomaly{Kind: Stuck, Window: &Window{Start: sec(10), End: sec(12)}}, []history.HostEvent{stall(9.9, 0.5)}, ""},
		{"ops' calls", Anomaly{Kind: EarlyGrant, Ops: []int{7, 3}}, []history.HostEvent{stall(1.9, 0.3)},
			"harness stalled 300ms at 1.600s inside this finding's window (1.000s–2.500s)"},
		{"ops with no span found", Anomaly{Kind: EarlyGrant, Ops: []int{9}}, []history.HostEvent{stall(1.9, 0.3)}, ""},
		{"many events", Anomaly{Kind: Stuck, Window: &Window{Start: sec(0), End: sec(100)}},
			[]history.HostEvent{stall(1, 0.2), stall(2, 0.2), stall(3, 0.2), stall(4, 0.2), stall(5, 0.2)},
			"harness stalled 200ms at 2.800s; 2 more host events inside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			results := []Result{{Anomalies: []Anomaly{tt.a}}}
			noteHost(tt.events, results, nil, spans)
			got := results[0].Anomalies[0].Host
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("host note %q, want one saying %q", got, tt.want)
			}
		})
	}
}
