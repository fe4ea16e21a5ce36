package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAppendJSON(t *testing.T) {
	tests := []struct {
		name string
		op   Op
		want string
	}{
		{"worker client zero is written", Op{Index: 0, Time: 5, Process: 0, Client: 0, Type: Invoke, F: FAcquire, Key: "k", TTL: 5 * time.Second},
			`{"index":0,"time":5,"process":0,"client":0,"type":"invoke","f":"acquire","key":"k","ttl":5000000000}`},
		{"nemesis has no client", Op{Index: 4, Time: 4000000, Process: NemesisProcess, Type: Info, F: "clock-bump", Value: json.RawMessage(`{"node":"n3","delta":"+30s"}`)},
			`{"index":4,"time":4000000,"process":-1,"type":"info","f":"clock-bump","value":{"node":"n3","delta":"+30s"}}`},
		{"write ok with every field", Op{Index: 3, Time: 3300000, Process: 2, Client: 2, Type: OK, F: FWrite, Key: "k", Token: 7, Value: IntValue(1), Applied: 3200000, Node: "n1"},
			`{"index":3,"time":3300000,"process":2,"client":2,"type":"ok","f":"write","key":"k","token":7,"value":1,"applied":3200000,"node":"n1"}`},
		{"acquire ok with until", Op{Index: 1, Time: 2403000, Process: 0, Type: OK, F: FAcquire, Key: "k", Token: 7, Until: 5001000000},
			`{"index":1,"time":2403000,"process":0,"client":0,"type":"ok","f":"acquire","key":"k","token":7,"until":5001000000}`},
		{"error with quotes and unicode", Op{Index: 9, Time: 1, Process: 1, Client: 1, Type: Info, F: FAcquire, Error: "dial \"n1\": é\n<timeout>"},
			`{"index":9,"time":1,"process":1,"client":1,"type":"info","f":"acquire","error":"dial \"n1\": é\n\u003ctimeout\u003e"}`},
		{"invalid raw value becomes a string", Op{Index: 0, Time: 1, Process: 0, Type: Invoke, F: FRead, Value: json.RawMessage(`not json`)},
			`{"index":0,"time":1,"process":0,"client":0,"type":"invoke","f":"read","value":"not json"}`},
		{"a late fault carries its due", Op{Index: 5, Time: 1400000000, Process: NemesisProcess, Type: Info, F: "partition", Heal: "heal", Class: ClassNetwork, Due: durationOf(500000000), Value: json.RawMessage(`{"nodes":["n1"]}`)},
			`{"index":5,"time":1400000000,"process":-1,"type":"info","f":"partition","heal":"heal","class":"network","due":500000000,"value":{"nodes":["n1"]}}`},
		{"a step due at 0 not run", Op{Index: 6, Time: 3, Process: NemesisProcess, Type: Fail, F: "kill", Class: ClassKill, Due: durationOf(0), Error: "not run"},
			`{"index":6,"time":3,"process":-1,"type":"fail","f":"kill","class":"kill","due":0,"error":"not run"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(AppendJSON(nil, tc.op))
			if got != tc.want {
				t.Fatalf("AppendJSON:\n got %s\nwant %s", got, tc.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("not valid JSON: %s", got)
			}
			var back Op
			if err := json.Unmarshal([]byte(got), &back); err != nil {
				t.Fatal(err)
			}
			want := tc.op
			if len(want.Value) > 0 && !json.Valid(want.Value) {
				want.Value, _ = json.Marshal(string(want.Value))
			}
			if !reflect.DeepEqual(back, want) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", back, want)
			}
		})
	}
}

func TestDecodeForms(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Op
	}{
		{"client absent on a worker op", `{"index":1,"time":2,"process":3,"type":"ok","f":"acquire"}`, Op{Index: 1, Time: 2, Process: 3, Type: OK, F: FAcquire}},
		{"client present on nemesis op", `{"index":1,"time":2,"process":-1,"client":0,"type":"info","f":"kill","value":"n1"}`, Op{Index: 1, Time: 2, Process: -1, Type: Info, F: "kill", Value: json.RawMessage(`"n1"`)}},
		{"spaces and other field order", ` { "f" : "read" , "type":"ok","value" : [1, {"a":null}] ,"index":0,"time":0,"process":0 } `, Op{Type: OK, F: FRead, Value: json.RawMessage(`[1, {"a":null}]`)}},
		{"escaped strings go the slow way", `{"index":0,"time":0,"process":0,"type":"info","f":"acquire","error":"a\"b\u00e9"}`, Op{Type: Info, F: FAcquire, Error: "a\"bé"}},
		{"unknown fields are ignored", `{"index":0,"time":0,"process":0,"type":"ok","f":"read","extra":{"x":[1,2]}}`, Op{Type: OK, F: FRead}},
		{"null value is absent", `{"index":0,"time":0,"process":0,"type":"ok","f":"read","value":null}`, Op{Type: OK, F: FRead}},
		{"large token", `{"index":0,"time":0,"process":0,"type":"ok","f":"acquire","token":18446744073709551615}`, Op{Type: OK, F: FAcquire, Token: 18446744073709551615}},
		{"due, the fast way", `{"index":0,"time":9,"process":-1,"type":"fail","f":"kill","due":7}`, Op{Time: 9, Process: -1, Type: Fail, F: "kill", Due: durationOf(7)}},
		{"due, the slow way", `{"index":0,"time":9,"process":-1,"type":"fail","f":"kill","due":7,"error":"not \u0072un"}`, Op{Time: 9, Process: -1, Type: Fail, F: "kill", Due: durationOf(7), Error: "not run"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got Op
			if err := got.UnmarshalJSON([]byte(tc.line)); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// durationOf returns a pointer to d, for an Op's Due.
func durationOf(d time.Duration) *time.Duration { return &d }

func TestDecodeErrors(t *testing.T) {
	for _, line := range []string{`null`, `[1]`, `{"index":"x"}`, `{"index":1.5}`, `{"index":1,}`, `{"index":1} x`, `{`, `"s"`, `{"time":99999999999999999999}`} {
		t.Run(line, func(t *testing.T) {
			var op Op
			if err := op.UnmarshalJSON([]byte(line)); err == nil {
				t.Fatalf("decoded %q without error: %+v", line, op)
			}
		})
	}
}

func TestReadFiles(t *testing.T) {
	tests := []struct {
		file      string
		ops       int
		lines     int
		truncated bool
		err       string
	}{
		{file: "example.jsonl", ops: 5, lines: 5},
		{file: "truncated.jsonl", ops: 2, lines: 3, truncated: true},
		{file: "badline.jsonl", ops: 2, lines: 3, err: "history: testdata/badline.jsonl:3: invalid character 'x' looking for beginning of object key string"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			h, info, err := ReadFile(filepath.Join("testdata", tc.file))
			if tc.err != "" {
				var le *LineError
				if !errors.As(err, &le) || le.Line != 3 || err.Error() != tc.err {
					t.Fatalf("err = %v, want %s", err, tc.err)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error spans lines: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(h) != tc.ops || info.Lines != tc.lines || info.Truncated != tc.truncated {
				t.Fatalf("got %d ops, %+v; want %d ops, lines %d, truncated %v", len(h), info, tc.ops, tc.lines, tc.truncated)
			}
			if err := Validate(h); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestReadExampleRoundTrip(t *testing.T) {
	raw, err := os.ReadFile("testdata/example.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	h, _, err := Read(bytes.NewReader(raw), "example")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, op := range h {
		if err := w.Append(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if out.String() != string(raw) {
		t.Fatalf("re-encoded history differs:\n%s\nwant\n%s", out.String(), raw)
	}
	if h[4].Client != 0 || h[4].Process != NemesisProcess || string(h[4].Value) != `{"node":"n3","delta":"+30s"}` {
		t.Fatalf("nemesis op decoded as %+v", h[4])
	}
}

func TestReadLongLineAndBlankLines(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	in := "\n" + `{"index":0,"time":0,"process":0,"type":"info","f":"acquire","error":"` + long + `"}` + "\n\n"
	h, info, err := Read(strings.NewReader(in), "long")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Error != long || info.Lines != 3 || info.Truncated {
		t.Fatalf("got %d ops, %+v", len(h), info)
	}
}

func TestReadCompleteBadLastLineIsAnError(t *testing.T) {
	_, _, err := Read(strings.NewReader(`{"index":0,"time":0,"process":0,"type":"ok","f":"x"}`+"\n"+`{"inde`+"\n"), "f")
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 || le.File != "f" {
		t.Fatalf("err = %v", err)
	}
}

func TestReadUnterminatedGoodLastLine(t *testing.T) {
	h, info, err := Read(strings.NewReader(`{"index":0,"time":0,"process":0,"type":"ok","f":"x"}`), "f")
	if err != nil || len(h) != 1 || info.Truncated {
		t.Fatalf("got %d ops, %+v, %v", len(h), info, err)
	}
}

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestWriterFirstErrorAndClosed(t *testing.T) {
	fw := &failingWriter{}
	w := NewWriter(fw)
	if err := w.Append(Op{Type: Invoke, F: FRead}); err != nil {
		t.Fatalf("buffered append failed early: %v", err)
	}
	err := w.Close()
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close = %v, want the write error", err)
	}
	if err2 := w.Close(); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("second Close = %v, want %v", err2, err)
	}
	if err := w.Append(Op{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
}

func TestWriterFlushesWhileRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := CreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	rec := NewRecorder(w)
	rec.Record(Op{Process: 0, Type: Invoke, F: FAcquire, Key: "k"})
	deadline := time.Now().Add(3 * FlushInterval)
	for {
		h, _, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(h) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("op not on disk after %v", 3*FlushInterval)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rec.Record(Op{Process: 0, Type: OK, F: FAcquire, Key: "k", Token: 1})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, info, err := ReadFile(path)
	if err != nil || len(h) != 2 || info.Truncated {
		t.Fatalf("after Close: %d ops, %+v, %v", len(h), info, err)
	}
	if err := Validate(h); err != nil {
		t.Fatal(err)
	}
}

func FuzzRead(f *testing.F) {
	for _, name := range []string{"example.jsonl", "truncated.jsonl", "badline.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"value":[[[[{"a":"\u0000"}]]]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, info, err := Read(bytes.NewReader(data), "fuzz")
		sh, sinfo, serr, verr := scanAll(t, string(data), "fuzz")
		if (err == nil) != (serr == nil) || err != nil && err.Error() != serr.Error() {
			t.Fatalf("Scanner's error %v, Read's %v", serr, err)
		}
		if err != nil {
			return
		}
		if info != sinfo || len(h) != len(sh) || len(h) > 0 && !reflect.DeepEqual(h, sh) {
			t.Fatalf("Scanner read %d ops (%+v), Read %d (%+v)", len(sh), sinfo, len(h), info)
		}
		if werr := Validate(h); (werr == nil) != (verr == nil) || werr != nil && werr.Error() != verr.Error() {
			t.Fatalf("Validator says %v, Validate %v", verr, werr)
		}
		// Whatever decodes must re-encode to valid JSON that decodes to the
		// same op.
		for _, op := range h {
			b := AppendJSON(nil, op)
			if !json.Valid(b) {
				t.Fatalf("invalid JSON from %+v: %s", op, b)
			}
			var back Op
			if err := back.UnmarshalJSON(b); err != nil {
				t.Fatalf("re-decode %s: %v", b, err)
			}
			if op.Process == NemesisProcess {
				op.Client = 0
			}
			if !bytes.Equal(AppendJSON(nil, back), b) {
				t.Fatalf("not stable: %s vs %s", AppendJSON(nil, back), b)
			}
		}
	})
}

func benchLines(n int) []byte {
	var b []byte
	for i := 0; i < n; i++ {
		op := Op{Index: i, Time: time.Duration(i) * time.Microsecond, Process: i % 16, Client: i % 16, Type: OK, F: FWrite, Key: "k" + strconv.Itoa(i%4), Token: uint64(i), Value: IntValue(int64(i)), Applied: time.Duration(i)}
		b = append(AppendJSON(b, op), '\n')
	}
	return b
}

func BenchmarkRead1M(b *testing.B) {
	data := benchLines(1_000_000)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		h, _, err := Read(bytes.NewReader(data), "bench")
		if err != nil || len(h) != 1_000_000 {
			b.Fatal(err, len(h))
		}
	}
}

func BenchmarkWrite1M(b *testing.B) {
	h := make(History, 1_000_000)
	for i := range h {
		h[i] = Op{Index: i, Time: time.Duration(i), Process: i % 16, Client: i % 16, Type: OK, F: FWrite, Key: "k", Token: uint64(i), Value: IntValue(int64(i))}
	}
	b.ResetTimer()
	for b.Loop() {
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, op := range h {
			if err := w.Append(op); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFile1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, benchLines(1_000_000), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		h, _, err := ReadFile(path)
		if err != nil || len(h) != 1_000_000 {
			b.Fatal(err, len(h))
		}
	}
}

func TestConcurrentRecordingRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := CreateFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mem := &Memory{}
	rec := NewRecorder(w, mem)
	done := make(chan struct{})
	for p := 0; p < 8; p++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 500; i++ {
				rec.Record(Op{Process: p, Client: p, Type: Invoke, F: FWrite, Key: "k", Value: IntValue(int64(i))})
				rec.Record(Op{Process: p, Client: p, Type: OK, F: FWrite, Key: "k", Value: IntValue(int64(i)), Applied: rec.Now()})
			}
		}()
	}
	for p := 0; p < 8; p++ {
		<-done
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Err(); err != nil {
		t.Fatal(err)
	}
	h, info, err := ReadFile(path)
	if err != nil || info.Truncated {
		t.Fatal(err, info)
	}
	if !reflect.DeepEqual(h, mem.History()) {
		t.Fatal("file and memory sink disagree")
	}
	if rec.History() != nil || rec.Len() != len(h) {
		t.Fatalf("a recorder with sinks kept %d ops and counted %d, want none kept and %d counted", len(rec.History()), rec.Len(), len(h))
	}
	if err := Validate(h); err != nil {
		t.Fatal(err)
	}
}

func TestReadFileInParts(t *testing.T) {
	var b []byte
	n := 30000 // well over 1 MB, so the decoder splits the file
	for i := 0; i < n; i++ {
		if i == 10 || i == n-10 {
			b = append(b, "\n  \n"...) // blank lines in both halves
		}
		b = append(AppendJSON(b, Op{Index: i, Time: time.Duration(i), Process: i % 7, Type: Info, F: FRead, Error: strings.Repeat("e", 40)}), '\n')
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	if err := os.WriteFile(good, b, 0o644); err != nil {
		t.Fatal(err)
	}
	h, info, err := ReadFile(good)
	if err != nil || len(h) != n || info.Lines != n+4 || info.Truncated {
		t.Fatalf("%d ops, %+v, %v", len(h), info, err)
	}
	for i, op := range h {
		if op.Index != i {
			t.Fatalf("op %d has index %d", i, op.Index)
		}
	}
	lines := strings.Split(string(b), "\n")
	lines[n-100] = `{"index":` // a bad line late in the file
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = ReadFile(bad)
	var le *LineError
	if !errors.As(err, &le) || le.Line != n-100+1 {
		t.Fatalf("err = %v, want a LineError at line %d", err, n-100+1)
	}
	f, err := os.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h2, _, err := Read(f, "good")
	if err != nil || !reflect.DeepEqual(h, h2) {
		t.Fatalf("Read of an *os.File differs from ReadFile: %v", err)
	}
}

func TestReadEmpty(t *testing.T) {
	for _, in := range []string{"", "\n", "\n\n  \n"} {
		path := filepath.Join(t.TempDir(), "h.jsonl")
		if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		h, info, err := ReadFile(path)
		if err != nil || len(h) != 0 || info.Truncated || info.Lines != strings.Count(in, "\n") {
			t.Fatalf("%q: %d ops, %+v, %v", in, len(h), info, err)
		}
	}
}
