package history

import (
	"bytes"
	"testing"
)

func TestVersion(t *testing.T) {
	acquire := Op{Index: 0, Time: 5, Process: 0, Type: Invoke, F: FAcquire, Key: "k", TTL: 1}
	tests := []struct {
		name string
		h    History
		want int
	}{
		{"empty", nil, 1},
		{"no header: version 1", History{acquire}, 1},
		{"header", History{Header(), acquire}, FormatVersion},
		{"header not first", History{acquire, Header()}, 1},
		{"nemesis op that is not a header", History{{Process: NemesisProcess, Type: Info, F: "partition"}}, 1},
		{"header with a garbled value", History{{Process: NemesisProcess, Type: Info, F: FHistory, Value: []byte(`"x"`)}}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Version(tc.h); got != tc.want {
				t.Fatalf("Version = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestHeaderRoundTrip writes a history that starts with the header op and
// reads it back: the header survives, the history is well-formed, and the
// lease, session and kept fields round-trip.
func TestHeaderRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	ops := History{
		Header(),
		{Index: 1, Time: 10, Process: 0, Type: Invoke, F: FAcquire, Key: "k", TTL: 2000},
		{Index: 2, Time: 20, Process: 0, Type: OK, F: FAcquire, Key: "k", Lease: NoLease, Session: true, Token: 3},
		{Index: 3, Time: 30, Process: 0, Type: Invoke, F: FRelease, Key: "k", Token: 3},
		{Index: 4, Time: 40, Process: 0, Type: Info, F: FRelease, Key: "k", Token: 3, Kept: true, Error: "connection closed"},
	}
	for _, op := range ops {
		if err := w.Append(op); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	h, _, err := Read(&buf, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(h); err != nil {
		t.Fatal(err)
	}
	if Version(h) != FormatVersion || !h[0].IsHeader() {
		t.Fatalf("version %d, first op %+v", Version(h), h[0])
	}
	if g := h[2]; g.Lease != NoLease || !g.Session || g.Token != 3 || g.Kept {
		t.Fatalf("grant read back as %+v", g)
	}
	if c := h[4]; !c.Kept || c.Type != Info {
		t.Fatalf("kept crash read back as %+v", c)
	}
	// The slow decoder (a line the fast one declines) reads kept too.
	op, err := new(decoder).slow([]byte(`{"index":4,"time":40,"process":0,"client":0,"type":"info","f":"release","key":"k","kept":true,"error":"a\u0041"}`))
	if err != nil || !op.Kept {
		t.Fatalf("slow decode: %+v, %v", op, err)
	}
}
