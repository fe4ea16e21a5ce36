package jepsen_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/checker"
	"github.com/jepsen-lite/jepsen-lite/history"
	"github.com/jepsen-lite/jepsen-lite/history/jepsen"
)

const ttl = 5 * time.Second

func readFixture(t *testing.T, name string) history.History {
	t.Helper()
	h, err := jepsen.ReadFile(filepath.Join("testdata", name), jepsen.Options{TTL: ttl})
	if err != nil {
		t.Fatalf("ReadFile(%s): %v", name, err)
	}
	if err := history.Validate(h); err != nil {
		t.Fatalf("%s: the converted history is not well-formed: %v", name, err)
	}
	return h
}

func read(t *testing.T, edn string) (history.History, error) {
	t.Helper()
	return jepsen.Read(strings.NewReader(edn), "test.edn", jepsen.Options{TTL: ttl})
}

func mustRead(t *testing.T, edn string) history.History {
	t.Helper()
	h, err := read(t, edn)
	if err != nil {
		t.Fatalf("Read: %v\n%s", err, edn)
	}
	return h
}

func kinds(results []checker.Result) []string {
	var ks []string
	for _, r := range results {
		for _, a := range r.Anomalies {
			if !slices.Contains(ks, a.Kind) {
				ks = append(ks, a.Kind)
			}
		}
	}
	slices.Sort(ks)
	return ks
}

// TestFixturesChecked converts each fixture and judges it with the project's
// checkers.
func TestFixturesChecked(t *testing.T) {
	tests := []struct {
		name      string
		file      string
		ops       int
		verdict   checker.Verdict
		wantKinds []string // each must be among the anomalies
	}{
		{"two processes acquire and release in turn", "lock-valid.edn", 16, checker.Valid, nil},
		{"two processes granted the lock at once", "lock-double-grant.edn", 10, checker.Invalid, []string{checker.DoubleHold, checker.EarlyGrant}},
		{"crashes, unknown outcomes and failed acquires", "lock-crashes.edn", 18, checker.Valid, nil},
		{"times that go backwards", "times-backwards.edn", 8, checker.Valid, nil},
		{"a Knossos vector with tokens and no times", "knossos-vector.edn", 6, checker.Valid, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := readFixture(t, tt.file)
			if len(h) != tt.ops {
				t.Errorf("%d ops, want %d", len(h), tt.ops)
			}
			res := checker.Check(context.Background(), h, checker.Options{})
			got := checker.Overall(res)
			ks := kinds(res)
			if got != tt.verdict {
				t.Errorf("verdict %s, want %s; anomalies %v", got, tt.verdict, ks)
			}
			if tt.verdict == checker.Valid && len(ks) > 0 {
				t.Errorf("valid history with anomalies %v", ks)
			}
			for _, k := range tt.wantKinds {
				if !slices.Contains(ks, k) {
					t.Errorf("anomalies %v lack %s", ks, k)
				}
			}
		})
	}
}

func TestAcquireInvokesCarryTheTTL(t *testing.T) {
	h := readFixture(t, "lock-valid.edn")
	n := 0
	for _, op := range h {
		want := time.Duration(0)
		if op.F == history.FAcquire && op.Type == history.Invoke {
			want = ttl
			n++
		}
		if op.TTL != want {
			t.Errorf("op %d (%s %s): ttl %v, want %v", op.Index, op.Type, op.F, op.TTL, want)
		}
	}
	if n != 3 {
		t.Errorf("%d acquire invokes, want 3", n)
	}
}

func TestCrashedProcessesKeepTheirNumbersAndWorker(t *testing.T) {
	h := readFixture(t, "lock-crashes.edn")
	if c := jepsen.Concurrency(h); c != 5 {
		t.Errorf("concurrency %d, want 5", c)
	}
	clients := map[int]int{}
	for _, op := range h {
		if c, ok := clients[op.Process]; ok && c != op.Client {
			t.Errorf("process %d has clients %d and %d", op.Process, c, op.Client)
		}
		clients[op.Process] = op.Client
	}
	want := map[int]int{0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 0, 10: 0}
	for p, c := range want {
		if got, ok := clients[p]; !ok || got != c {
			t.Errorf("process %d: client %d (present %v), want %d", p, got, ok, c)
		}
	}
	if len(clients) != len(want) {
		t.Errorf("processes %v, want those of %v", clients, want)
	}
	tests := []struct {
		name  string
		index int
		proc  int
		typ   history.Type
		f     string
		err   string
	}{
		{"process 0 crashes on acquire", 7, 0, history.Info, history.FAcquire, `[:timeout "no reply after 5 ms"]`},
		{"a failed acquire", 6, 2, history.Fail, history.FAcquire, "lock-busy"},
		{"process 5 goes on for worker 0", 10, 5, history.Invoke, history.FAcquire, ""},
		{"a release of unknown outcome", 15, 5, history.Info, history.FRelease, "conn-refused"},
		{"process 10 goes on for worker 0", 16, 10, history.Invoke, history.FAcquire, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := h[tt.index]
			if op.Process != tt.proc || op.Type != tt.typ || op.F != tt.f || op.Error != tt.err {
				t.Errorf("op %d is process %d %s %s error %q, want process %d %s %s error %q",
					tt.index, op.Process, op.Type, op.F, op.Error, tt.proc, tt.typ, tt.f, tt.err)
			}
		})
	}
}

// ops builds an EDN history from "process type f" triples, one per line.
func ops(triples ...string) string {
	var b strings.Builder
	for i, tr := range triples {
		var p, typ, f string
		fmt.Sscan(tr, &p, &typ, &f)
		fmt.Fprintf(&b, "{:type :%s, :f :%s, :value nil, :process %s, :time %d, :index %d}\n", typ, f, p, (i+1)*1000, i)
	}
	return b.String()
}

func TestConcurrency(t *testing.T) {
	tests := []struct {
		name    string
		edn     string
		want    int
		clients map[int]int // process → client
	}{
		{"no crash", ops("0 invoke acquire", "1 invoke acquire", "2 invoke acquire", "0 ok acquire"), 3,
			map[int]int{0: 0, 1: 1, 2: 2}},
		{"crash: p + concurrency goes on", ops("0 invoke acquire", "1 invoke acquire", "0 info acquire", "2 invoke acquire", "1 fail acquire"), 2,
			map[int]int{0: 0, 1: 1, 2: 0}},
		{"a worker that starts after the first crash", ops(
			"0 invoke acquire", "1 invoke acquire", "2 invoke acquire", "0 info acquire",
			"3 invoke acquire", "4 invoke acquire", "1 fail acquire"), 4,
			map[int]int{0: 0, 1: 1, 2: 2, 3: 3, 4: 0}},
		{"a fragment: the predecessor never crashed", ops("0 invoke acquire", "7 invoke acquire", "0 ok acquire"), 8,
			map[int]int{0: 0, 7: 7}},
		{"only the nemesis", "{:type :info, :f :start, :process :nemesis, :time 1}\n", 1, map[int]int{}},
		{"empty", "", 1, map[int]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := mustRead(t, tt.edn)
			if got := jepsen.Concurrency(h); got != tt.want {
				t.Errorf("concurrency %d, want %d", got, tt.want)
			}
			for _, op := range h {
				if op.IsNemesis() {
					continue
				}
				if want, ok := tt.clients[op.Process]; !ok || op.Client != want {
					t.Errorf("op %d: process %d has client %d, want %d (listed %v)", op.Index, op.Process, op.Client, want, ok)
				}
			}
		})
	}
}

func TestTimesAreRaisedAndOrderKept(t *testing.T) {
	h := readFixture(t, "times-backwards.edn")
	want := []struct {
		proc int
		typ  history.Type
		f    string
		time time.Duration
	}{
		{0, history.Invoke, history.FAcquire, 1000000},
		{1, history.Invoke, history.FAcquire, 1000500},
		{0, history.OK, history.FAcquire, 1000500},     // 996000 in the file: raised
		{0, history.Invoke, history.FRelease, 1000500}, // no :time: the previous op's
		{0, history.OK, history.FRelease, 5000000},
		{1, history.OK, history.FAcquire, 5000000}, // 4998000 in the file: raised
		{1, history.Invoke, history.FRelease, 6000000},
		{1, history.OK, history.FRelease, 7000000},
	}
	if len(h) != len(want) {
		t.Fatalf("%d ops, want %d", len(h), len(want))
	}
	for i, w := range want {
		op := h[i]
		if op.Index != i || op.Process != w.proc || op.Type != w.typ || op.F != w.f || op.Time != w.time {
			t.Errorf("op %d: index %d process %d %s %s at %d, want index %d process %d %s %s at %d",
				i, op.Index, op.Process, op.Type, op.F, op.Time, i, w.proc, w.typ, w.f, w.time)
		}
		if i > 0 && op.Time < h[i-1].Time {
			t.Errorf("op %d: time %d before the previous op's %d", i, op.Time, h[i-1].Time)
		}
	}
}

func TestErrorShapes(t *testing.T) {
	h := readFixture(t, "error-shapes.edn")
	tests := []struct {
		name  string
		index int
		want  string
	}{
		{"vector", 1, `[:timeout "x"]`},
		{"map", 3, `{:cause "y"}`},
		{"keyword", 5, "conn-refused"},
		{"string", 7, "text"},
		{"nested map", 9, `{:type :timeout, :via [:acquire 3], :msg "read timed out"}`},
		{"no error", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := h[tt.index].Error; got != tt.want {
				t.Errorf("op %d: error %q, want %q", tt.index, got, tt.want)
			}
		})
	}
}

func TestValues(t *testing.T) {
	tests := []struct {
		name  string
		value string // EDN
		want  string // JSON; empty for no value
	}{
		{"nil", "nil", ""},
		{"integer", "42", "42"},
		{"big integer", "123456789012345678901234567890N", "123456789012345678901234567890"},
		{"float", "1.5", "1.5"},
		{"boolean", "true", "true"},
		{"string", `"n1"`, `"n1"`},
		{"keyword", ":majority", `"majority"`},
		{"symbol", "heal", `"heal"`},
		{"vector", `[1 :a "b" nil]`, `[1,"a","b",null]`},
		{"list", `(1 2)`, `[1,2]`},
		{"set, in order", `#{"n3" "n1" "n2"}`, `["n1","n2","n3"]`},
		{"map", `{:token 3, :owner "n1", 7 :seven}`, `{"7":"seven","owner":"n1","token":3}`},
		{"partition grudge", `[:isolated {"n1" #{"n2" "n3"}, "n2" #{"n1"}}]`, `["isolated",{"n1":["n2","n3"],"n2":["n1"]}]`},
		{"composite map key: EDN text", `{[1 2] 3}`, `"{[1 2] 3}"`},
		{"clashing keys: EDN text", `{:a 1, "a" 2}`, `"{:a 1, \"a\" 2}"`},
		{"tagged value: EDN text", `[#inst "2024-01-02T03:04:05Z" 1]`, `"[#inst \"2024-01-02T03:04:05Z\" 1]"`},
		{"character: EDN text", `\c`, `"\\c"`},
		{"EDN text on one line", "{[1\n 2] 3}", `"{[1 2] 3}"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := mustRead(t, fmt.Sprintf("{:type :info, :f :start, :process :nemesis, :time 1, :value %s}", tt.value))
			if got := string(h[0].Value); got != tt.want {
				t.Errorf("value %s → %s, want %s", tt.value, got, tt.want)
			}
		})
	}
}

func TestKeysTokensAndNames(t *testing.T) {
	tests := []struct {
		name  string
		op    string // the completion, of process 0, after "{:type :invoke, :f F, :process 0, ...}" with the same :f and :key
		f     string
		key   string
		want  history.Op // only F, Key, Token, Process are compared
		isErr string     // a substring of the error, when one is wanted
	}{
		{"a lock op without :key is of the lock", "{:type :ok, :f :acquire, :process 0}", ":acquire", "", history.Op{F: "acquire", Key: "lock"}, ""},
		{"a release too", "{:type :ok, :f :release, :process 0}", ":release", "", history.Op{F: "release", Key: "lock"}, ""},
		{":key is kept", `{:type :ok, :f :acquire, :process 0, :key "k1"}`, ":acquire", `"k1"`, history.Op{F: "acquire", Key: "k1"}, ""},
		{"a keyword :key", "{:type :ok, :f :acquire, :process 0, :key :k2}", ":acquire", ":k2", history.Op{F: "acquire", Key: "k2"}, ""},
		{"an integer :key", "{:type :ok, :f :acquire, :process 0, :key 3}", ":acquire", "3", history.Op{F: "acquire", Key: "3"}, ""},
		{"a vector :key", "{:type :ok, :f :acquire, :process 0, :key [1  2]}", ":acquire", "[1 2]", history.Op{F: "acquire", Key: "[1 2]"}, ""},
		{"a read has no key", "{:type :ok, :f :read, :process 0, :value 3}", ":read", "", history.Op{F: "read"}, ""},
		{"a :token", "{:type :ok, :f :acquire, :process 0, :token 17}", ":acquire", "", history.Op{F: "acquire", Key: "lock", Token: 17}, ""},
		{"a :token in the value", "{:type :ok, :f :acquire, :process 0, :value {:token 18, :owner \"c1\"}}", ":acquire", "", history.Op{F: "acquire", Key: "lock", Token: 18}, ""},
		{"an integer value is not a token", "{:type :ok, :f :acquire, :process 0, :value 19}", ":acquire", "", history.Op{F: "acquire", Key: "lock"}, ""},
		{"a string token is none", "{:type :ok, :f :acquire, :process 0, :token \"t\"}", ":acquire", "", history.Op{F: "acquire", Key: "lock"}, ""},
		{"a negative token", "{:type :ok, :f :acquire, :process 0, :token -1}", ":acquire", "", history.Op{}, ":token -1 is negative"},
		{"symbols and strings for names", `{type ok, "f" acquire, :process 0}`, "acquire", "", history.Op{F: "acquire", Key: "lock"}, ""},
		{"a nemesis op has no key", "{:type :info, :f :pause, :process :nemesis}", ":pause", "", history.Op{F: "pause", Process: history.NemesisProcess}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := ""
			if tt.key != "" {
				key = ", :key " + tt.key
			}
			h, err := read(t, fmt.Sprintf("{:type :invoke, :f %s, :process 0%s}\n%s\n", tt.f, key, tt.op))
			if tt.isErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.isErr) || !strings.Contains(err.Error(), "op 2") {
					t.Fatalf("error %v, want one naming op 2 and saying %q", err, tt.isErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := h[len(h)-1]
			if got.F != tt.want.F || got.Key != tt.want.Key || got.Token != tt.want.Token || got.Process != tt.want.Process {
				t.Errorf("got f %q key %q token %d process %d, want f %q key %q token %d process %d",
					got.F, got.Key, got.Token, got.Process, tt.want.F, tt.want.Key, tt.want.Token, tt.want.Process)
			}
		})
	}
}

func TestRecordFieldsAsWritten(t *testing.T) {
	h := mustRead(t, `#jepsen.history.Op {:type :invoke, :f :acquire, :process 0, :value {[1 2] 3}}
#jepsen.history.Op{:type :fail, :f :acquire, :process 0, :error [:x
  "y"]}`)
	if got, want := string(h[0].Value), `"{[1 2] 3}"`; got != want {
		t.Errorf("value %s, want %s", got, want)
	}
	if got, want := h[1].Error, `[:x "y"]`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}

// TestForms reads one history written in each of the shapes a Jepsen or
// Knossos history comes in.
func TestForms(t *testing.T) {
	want := mustRead(t, ops("0 invoke acquire", "0 ok acquire", "0 invoke release", "0 ok release"))
	tests := []struct{ name, edn string }{
		{"one map per line", ops("0 invoke acquire", "0 ok acquire", "0 invoke release", "0 ok release")},
		{"a vector", "[" + ops("0 invoke acquire", "0 ok acquire", "0 invoke release", "0 ok release") + "]"},
		{"a list", "(" + ops("0 invoke acquire", "0 ok acquire", "0 invoke release", "0 ok release") + ")\n"},
		{"records, commas and comments", `; a Jepsen history
#jepsen.history.Op{:type :invoke, :f :acquire, :value nil, :process 0, :time 1000, :index 0},
#jepsen.history.Op {:type :ok, :f :acquire, :value nil, :process 0, :time 2000, :index 1} ; granted
{:type :invoke, :f :release, :value nil, :process 0, :time 3000, :index 2, :node "n1"}
#_{:type :invoke, :f :release, :value nil, :process 0, :time 3500}
{:type :ok, :f :release, :value nil, :process 0, :time 4000, :index 3}`},
		{"discarded ops in a vector", `[{:type :invoke, :f :acquire, :value nil, :process 0, :time 1000}
 #_ {:type :invoke, :f :release, :process 0}
 {:type :ok, :f :acquire, :value nil, :process 0, :time 2000}
 {:type :invoke, :f :release, :value nil, :process 0, :time 3000}
 {:type :ok, :f :release, :value nil, :process 0, :time 4000} #_{:type :ok}]`},
		{"maps over several lines", `{:type :invoke,
 :f :acquire, :value nil,
 :process 0, :time 1000}
{:type :ok, :f :acquire, :value nil, :process 0, :time 2000}
{:type :invoke, :f :release, :value nil, :process 0, :time 3000}
{:type :ok, :f :release, :value nil, :process 0, :time 4000}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := mustRead(t, tt.edn)
			if !slices.Equal(toJSON(h), toJSON(want)) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(toJSON(h), "\n"), strings.Join(toJSON(want), "\n"))
			}
		})
	}
}

func toJSON(h history.History) []string {
	var out []string
	for _, op := range h {
		out = append(out, string(history.AppendJSON(nil, op)))
	}
	return out
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		name      string
		file      string // a fixture, or
		edn       string // a history given to Read
		op, line  int
		want      []string // substrings of the message
		malformed bool     // errors.Is(err, history.ErrMalformed)
	}{
		{name: "not EDN", file: "not-edn.edn", op: 3, line: 3, want: []string{"not-edn.edn:3: op 3", "not valid EDN"}},
		{name: "an op without :type", file: "no-type.edn", op: 3, line: 3, want: []string{"no-type.edn:3: op 3", "no :type"}},
		{name: "a completion without an invoke", file: "orphan-completion.edn", op: 3, line: 3,
			want: []string{"orphan-completion.edn:3: op 3", "process 1 completes release (ok) without an outstanding invoke"}, malformed: true},
		{name: "an unknown :type", edn: "{:type :invoke, :f :acquire, :process 0}\n{:type :done, :f :acquire, :process 0}", op: 2, line: 2,
			want: []string{":type :done"}},
		{name: "an op without :process", edn: "{:type :invoke, :f :acquire}", op: 1, line: 1, want: []string{"no :process"}},
		{name: "a process of the wrong shape", edn: `{:type :invoke, :f :acquire, :process "p1"}`, op: 1, line: 1, want: []string{`:process "p1"`}},
		{name: "a negative process", edn: `{:type :invoke, :f :acquire, :process -3}`, op: 1, line: 1, want: []string{":process -3"}},
		{name: "a time that is not an integer", edn: `{:type :invoke, :f :acquire, :process 0, :time "soon"}`, op: 1, line: 1, want: []string{`:time "soon"`}},
		{name: "a negative time", edn: `{:type :invoke, :f :acquire, :process 0, :time -5}`, op: 1, line: 1, want: []string{":time -5 is negative"}},
		{name: "not a map", edn: "{:type :invoke, :f :acquire, :process 0}\n[:invoke :acquire 0]", op: 2, line: 2, want: []string{"not an op map"}},
		{name: "a vector never closed", edn: "[{:type :invoke, :f :acquire, :process 0}\n", op: 2, line: 2, want: []string{"never closed"}},
		{name: "an unterminated map in a vector", edn: "[{:type :invoke, :f :acquire, :process 0}\n {:type :ok, :f :acquire,\n :process 0\n]", op: 2, line: 2,
			want: []string{"not valid EDN"}},
		{name: "a second invoke while one is outstanding, in a vector", edn: "[{:type :invoke, :f :acquire, :process 0}\n {:type :invoke, :f :release, :process 0}]", op: 2, line: 2,
			want: []string{"process 0 invokes release while its acquire (op 0) is outstanding"}, malformed: true},
		{name: "an invoke after a crash", edn: ops("0 invoke acquire", "0 info acquire", "0 invoke acquire"), op: 3, line: 3,
			want: []string{"process 0 invokes acquire after it crashed"}, malformed: true},
		{name: "the first problem in the file is named", edn: "{:f :acquire, :process 0}\n{:type :ok, :f", op: 1, line: 1, want: []string{"no :type"}},
		{name: "a discarded op is not counted", edn: "{:type :invoke, :f :acquire, :process 0}\n#_{:type :ok, :f :acquire, :process 0}\n{:f :acquire, :process 0}", op: 2, line: 3,
			want: []string{"test.edn:3: op 2", "no :type"}},
		{name: "a worker op without :f", edn: "{:type :invoke, :process 0}", op: 1, line: 1, want: []string{"has no f"}, malformed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.file != "" {
				_, err = jepsen.ReadFile(filepath.Join("testdata", tt.file), jepsen.Options{TTL: ttl})
			} else {
				_, err = read(t, tt.edn)
			}
			if err == nil {
				t.Fatal("no error")
			}
			var je *jepsen.Error
			if !errors.As(err, &je) {
				t.Fatalf("%v is not a *jepsen.Error", err)
			}
			if je.Op != tt.op || je.Line != tt.line {
				t.Errorf("error names op %d line %d, want op %d line %d: %v", je.Op, je.Line, tt.op, tt.line, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
			if got := errors.Is(err, history.ErrMalformed); got != tt.malformed {
				t.Errorf("errors.Is(err, history.ErrMalformed) = %v, want %v", got, tt.malformed)
			}
			if strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("the message is not one line: %q", err)
			}
		})
	}
}

func TestReadFileOfAStoreDirectory(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "lock-valid.edn"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, jepsen.HistoryFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := jepsen.ReadFile(dir, jepsen.Options{TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 16 {
		t.Errorf("%d ops, want 16", len(h))
	}
	if _, err := jepsen.ReadFile(filepath.Join(dir, "absent.edn"), jepsen.Options{}); err == nil || !strings.Contains(err.Error(), "absent.edn") {
		t.Errorf("reading a missing file: %v, want an error naming it", err)
	}
}

// TestBlockingAcquireWhileLeaseRuns imports a blocking-acquire lock history
// (Jepsen's lock workloads acquire with blocking calls): worker 1 waits from
// 0.5 s and is granted at 3.002 s, when worker 0 releases, and its lease of
// --ttl (5 s, counted from the grant: the history has no `lease`) runs to
// 8.002 s, past the end at 7.5 s, while worker 2 waits to the end and
// others time out. No stuck and no unavailable while the lease runs; the
// same history run on past the lease, with the refusals going on, is
// stuck and unavailable.
func TestBlockingAcquireWhileLeaseRuns(t *testing.T) {
	h := readFixture(t, "lock-blocking-acquire-lease-runs.edn")
	if v := checker.Overall(checker.Check(context.Background(), h, checker.Options{})); v != checker.Valid {
		t.Fatalf("safety %s, want valid", v)
	}
	live := checker.Liveness(h, checker.LivenessOptions{})
	if live.Verdict != checker.Valid || len(live.Anomalies) != 0 {
		t.Fatalf("liveness %s %+v (note %q), want valid: the grant's lease runs to the end", live.Verdict, live.Anomalies, live.Note)
	}
	// Run on: refusals every 0.5 s to 11 s, past the lease's end.
	data, err := os.ReadFile(filepath.Join("testdata", "lock-blocking-acquire-lease-runs.edn"))
	if err != nil {
		t.Fatal(err)
	}
	edn := string(data)
	for i, ms := 0, 8000; ms <= 11000; i, ms = i+1, ms+500 {
		p := 3 + i%2
		edn += fmt.Sprintf("{:type :invoke, :f :acquire, :process %d, :time %d}\n{:type :fail, :f :acquire, :process %d, :time %d, :error :timeout}\n", p, ms*1e6, p, (ms+100)*1e6)
	}
	live = checker.Liveness(mustRead(t, edn), checker.LivenessOptions{})
	if !live.Has(checker.Stuck) || !live.Has(checker.Unavailable) {
		t.Fatalf("run on past the lease: liveness %s %+v (note %q), want stuck and unavailable", live.Verdict, live.Anomalies, live.Note)
	}
	for _, a := range live.Anomalies {
		if a.Window.Start < 8002*time.Millisecond {
			t.Errorf("%s window starts at %s, before the lease's end at 8.002s", a.Kind, a.Window.Start)
		}
	}
}
