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
// lease and session fields round-trip.
func TestHeaderRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	ops := History{
		Header(),
		{Index: 1, Time: 10, Process: 0, Type: Invoke, F: FAcquire, Key: "k", TTL: 2000},
		{Index: 2, Time: 20, Process: 0, Type: OK, F: FAcquire, Key: "k", Lease: NoLease, Session: true, Token: 3},
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
	if g := h[2]; g.Lease != NoLease || !g.Session || g.Token != 3 {
		t.Fatalf("grant read back as %+v", g)
	}
}
