package synth

import (
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

func TestGenerateIsWellFormedAndDeterministic(t *testing.T) {
	opts := Options{Workers: 5, Keys: 3, Ops: 5000, TTL: 20 * time.Millisecond, InfoRate: 0.05, Tokens: true}
	a := Generate(rand.New(rand.NewPCG(1, 2)), opts)
	b := Generate(rand.New(rand.NewPCG(1, 2)), opts)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different histories")
	}
	if err := history.Validate(a); err != nil {
		t.Fatal(err)
	}
	count := map[history.Type]int{}
	keys := map[string]bool{}
	for _, op := range a {
		count[op.Type]++
		keys[op.Key] = true
	}
	if len(a) < opts.Ops || count[history.Info] == 0 || count[history.Fail] == 0 || count[history.OK] == 0 || len(keys) < opts.Keys {
		t.Fatalf("thin history: %d ops, %v, keys %v", len(a), count, keys)
	}
}

func TestInjectLeavesInputAlone(t *testing.T) {
	h := Generate(rand.New(rand.NewPCG(4, 4)), Options{Workers: 4, Keys: 2, Ops: 2000, Tokens: true})
	before := append(history.History(nil), h...)
	for _, kind := range Kinds {
		bad, err := Inject(rand.New(rand.NewPCG(5, 5)), h, kind)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if reflect.DeepEqual(bad, h) {
			t.Fatalf("%s: nothing changed", kind)
		}
	}
	if !reflect.DeepEqual(before, h) {
		t.Fatal("Inject modified its input")
	}
	if _, err := Inject(rand.New(rand.NewPCG(5, 5)), h, "no-such-kind"); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

func TestWriteFileReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	n, err := WriteFile(path, rand.New(rand.NewPCG(9, 9)), Options{Ops: 500})
	if err != nil {
		t.Fatal(err)
	}
	h, info, err := history.ReadFile(path)
	if err != nil || len(h) != n || info.Truncated {
		t.Fatalf("read %d of %d ops, %+v, %v", len(h), n, info, err)
	}
}

func TestSessionMode(t *testing.T) {
	h := Generate(rand.New(rand.NewPCG(3, 3)), Options{Workers: 4, Keys: 2, Ops: 3000, InfoRate: 0.05, Session: true, TTL: 10 * time.Millisecond})
	if err := history.Validate(h); err != nil {
		t.Fatal(err)
	}
	acquired := 0
	for _, op := range h {
		if op.F == history.FAcquire && (op.TTL != 0 || op.Until != 0) {
			t.Fatalf("session lock op with ttl or until: %+v", op)
		}
		if op.F == history.FAcquire && op.Type == history.OK {
			acquired++
		}
	}
	if acquired < 50 {
		t.Fatalf("only %d acquisitions", acquired)
	}
}
