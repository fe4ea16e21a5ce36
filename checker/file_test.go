package checker

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker/anomaly"
	"github.com/jepsen-lite/jepsen-lite/checker/synth"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// fileCases are the stored histories CheckFile is compared on: every
// saved history of the checker's and the history package's testdata and
// synthetic histories with each anomaly kind the generator can inject.
func fileCases(t *testing.T) map[string]string {
	t.Helper()
	cases := map[string]string{}
	for pkg, glob := range map[string]string{"checker": "testdata/*.jsonl", "history": "../history/testdata/*.jsonl"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			cases[pkg+"/"+filepath.Base(f)] = f
		}
	}
	dir := t.TempDir()
	kinds := []string{"", anomaly.DoubleHold, anomaly.ForeignRelease, anomaly.StaleWrite, anomaly.LostUpdate, anomaly.TokenReuse, anomaly.TokenRegression}
	for i, kind := range kinds {
		rng := rand.New(rand.NewPCG(uint64(i), 5))
		h := synth.Generate(rng, synth.Options{Workers: 5, Keys: 3, Ops: 4000, InfoRate: 0.02, Tokens: i%2 == 0 || i >= 5, Session: i == 3})
		if kind != "" {
			var err error
			if h, err = synth.Inject(rng, h, kind); err != nil {
				t.Fatalf("inject %s: %v", kind, err)
			}
		} else {
			kind = "none"
		}
		path := filepath.Join(dir, "synth-"+kind+".jsonl")
		if err := synth.Write(path, h); err != nil {
			t.Fatal(err)
		}
		cases["synth/"+kind] = path
	}
	return cases
}

// comparable renders results without their times.
func comparable(t *testing.T, results []Result, live *LivenessResult) string {
	t.Helper()
	rs := make([]Result, len(results))
	for i, r := range results {
		r.Elapsed = 0
		rs[i] = r
	}
	b, err := json.MarshalIndent(struct {
		R []Result
		L *LivenessResult
	}{rs, live}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCheckFileEqualsCheck requires the streaming check of a stored
// history to say exactly what the check of the history read whole says.
func TestCheckFileEqualsCheck(t *testing.T) {
	for name, path := range fileCases(t) {
		t.Run(name, func(t *testing.T) {
			h, info, err := history.ReadFile(path)
			got, gerr := CheckFile(context.Background(), path, FileOptions{})
			if err != nil {
				if gerr == nil || gerr.Error() != err.Error() {
					t.Fatalf("CheckFile: %v, want the reading's error %v", gerr, err)
				}
				return
			}
			if gerr != nil {
				t.Fatalf("CheckFile: %v", gerr)
			}
			want, wantLive := CheckWithLiveness(context.Background(), h, Options{}, LivenessOptions{})
			if got.Results[0].Verdict == Valid && (got.Ops != len(h) || got.Info != info || got.Version != history.Version(h)) {
				t.Errorf("read %d ops %+v, want %d %+v", got.Ops, got.Info, len(h), info)
			}
			if g, w := comparable(t, got.Results, got.Liveness), comparable(t, want, wantLive); g != w {
				t.Errorf("CheckFile says\n%s\nCheck says\n%s", g, w)
			}
		})
	}
}

// TestCheckFileMalformed requires a history that stops being well-formed
// to give the well-formed checker's unknown verdict naming the op, and
// every other checker's "not run".
func TestCheckFileMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	lines := []string{
		`{"index":0,"time":1,"process":0,"client":0,"type":"invoke","f":"acquire","key":"k","ttl":1000}`,
		`{"index":1,"time":2,"process":0,"client":0,"type":"ok","f":"acquire","key":"k"}`,
		`{"index":2,"time":3,"process":0,"client":0,"type":"ok","f":"release","key":"k"}`,
		`{"index":3,"time":4,"process":1,"client":1,"type":"invoke","f":"acquire","key":"k","ttl":1000}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := CheckFile(context.Background(), path, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, _, _ := history.ReadFile(path)
	want := Check(context.Background(), h, Options{})
	if g, w := comparable(t, got.Results, nil), comparable(t, want, nil); g != w {
		t.Fatalf("CheckFile says\n%s\nCheck says\n%s", g, w)
	}
	if got.Results[0].Verdict != Unknown || got.Liveness != nil {
		t.Fatalf("well-formed %s, liveness %v", got.Results[0].Verdict, got.Liveness)
	}
}

// TestCheckFileProgress requires the phases in order, ending with done,
// and the op count at the end.
func TestCheckFileProgress(t *testing.T) {
	var phases []string
	var last FileProgress
	res, err := CheckFile(context.Background(), "testdata/double-grant.jsonl", FileOptions{Progress: func(p FileProgress) {
		if len(phases) == 0 || phases[len(phases)-1] != p.Phase {
			phases = append(phases, p.Phase)
		}
		last = p
	}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(phases, ",") != "reading,deciding,done" {
		t.Errorf("phases %v", phases)
	}
	if last.Ops != res.Ops || last.Total == 0 || last.Bytes != last.Total {
		t.Errorf("last progress %+v, %d ops", last, res.Ops)
	}
}

// TestCheckFileBadLine requires a line that is not an op to be an error
// naming it.
func TestCheckFileBadLine(t *testing.T) {
	_, err := CheckFile(context.Background(), "../history/testdata/badline.jsonl", FileOptions{})
	var le *history.LineError
	if !errors.As(err, &le) || le.Line == 0 {
		t.Fatalf("err %v, want a line error", err)
	}
}

// FuzzCheckFile requires the streaming check of any input to say what the
// check of the history read whole says, or to fail to read it as Read
// does.
func FuzzCheckFile(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.jsonl")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "h.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		h, _, rerr := history.ReadFile(path)
		got, err := CheckFile(context.Background(), path, FileOptions{})
		if rerr != nil || err != nil {
			if rerr == nil || err == nil || rerr.Error() != err.Error() {
				t.Fatalf("CheckFile: %v, reading: %v", err, rerr)
			}
			return
		}
		want, live := CheckWithLiveness(context.Background(), h, Options{}, LivenessOptions{})
		if g, w := comparable(t, got.Results, got.Liveness), comparable(t, want, live); g != w {
			t.Fatalf("CheckFile says\n%s\nCheck says\n%s", g, w)
		}
	})
}
