package checker

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/history"
)

// marginHistory reads a small history written one op a line:
// "<ms> <process> <type> <f> [field=value ...]", where the fields are ttl,
// lease, until and applied (in ms; lease=-1 for none), token, key
// (default "k"), session and kept (true).
func marginHistory(t *testing.T, text string) history.History {
	t.Helper()
	ms := func(v string) time.Duration {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("bad duration %q", v)
		}
		if n < 0 {
			return history.NoLease
		}
		return time.Duration(n) * time.Millisecond
	}
	var h history.History
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		p, _ := strconv.Atoi(f[1])
		op := history.Op{Index: len(h), Time: ms(f[0]), Process: p, Client: p % 4, Type: history.Type(f[2]), F: f[3], Key: "k"}
		for _, kv := range f[4:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "ttl":
				op.TTL = ms(v)
			case "lease":
				op.Lease = ms(v)
			case "until":
				op.Until = ms(v)
			case "applied":
				op.Applied = ms(v)
			case "token":
				n, _ := strconv.ParseUint(v, 10, 64)
				op.Token = n
			case "key":
				op.Key = v
			case "session":
				op.Session = true
			case "kept":
				op.Kept = true
			default:
				t.Fatalf("unknown field %q", kv)
			}
		}
		h = append(h, op)
	}
	if err := history.Validate(h); err != nil {
		t.Fatalf("the test's history is not well-formed: %v", err)
	}
	return h
}

const ms = time.Millisecond

// timeMargin is a lease or write margin of a lease of 1 s.
func timeMargin(m time.Duration, ops ...int) *TimeMargin {
	return &TimeMargin{Margin: m, Lease: time.Second, Ops: ops}
}

// leaseCases are the lease margins of small histories, each near a
// violation or over one (docs/history.md §4.8).
var leaseCases = []struct {
	name    string
	drift   float64
	text    string
	want    *TimeMargin
	invalid bool // the linearizability check reports an early-grant
}{
	{name: "granted 20ms after the older lease ended", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000
1005 1 invoke acquire ttl=1000
1020 1 ok acquire lease=1000`, want: timeMargin(20*ms, 0, 1, 3)},
	{name: "with drift the lease may end 10ms earlier", drift: 0.01, text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000
1005 1 invoke acquire ttl=1000
1020 1 ok acquire lease=1000`, want: timeMargin(30*ms, 0, 1, 3)},
	{name: "granted 10ms before the older lease could end", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000
900 1 invoke acquire ttl=1000
990 1 ok acquire lease=1000`, want: timeMargin(-10*ms, 0, 1, 3), invalid: true},
	{name: "a release hands the lock over: no margin", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000
100 0 invoke release
105 1 invoke acquire ttl=1000
110 0 ok release
120 1 ok acquire lease=1000`},
	{name: "a renewal sets the lease anew", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000
600 0 invoke renew ttl=1000
610 0 ok renew lease=1000
1640 1 invoke acquire ttl=1000
1650 1 ok acquire lease=1000`, want: timeMargin(50*ms, 0, 1, 2, 5)},
	{name: "granted inside the renewed lease", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000
600 0 invoke renew ttl=1000
610 0 ok renew lease=1000
1500 1 invoke acquire ttl=1000
1560 1 ok acquire lease=1000`, want: timeMargin(-40*ms, 0, 1, 2, 5), invalid: true},
	{name: "a renewal that returns after the newer grant may have come too late", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000
990 0 invoke renew ttl=1000
995 1 invoke acquire ttl=1000
1005 1 ok acquire lease=1000
1010 0 ok renew lease=1000`, want: timeMargin(5*ms, 0, 1, 4)},
	{name: "a crashed session holder's close hands the lock over: no margin", text: `
0 0 invoke acquire
10 0 ok acquire lease=-1 session
50 0 invoke read
55 1 invoke acquire
60 0 info read
70 1 ok acquire lease=-1 session`},
	{name: "a session lock granted while its holder lived", text: `
0 0 invoke acquire
10 0 ok acquire lease=-1 session
50 0 invoke read
52 1 invoke acquire
58 1 ok acquire lease=-1 session
60 0 info read`, want: &TimeMargin{Margin: -Forever, Ops: []int{0, 1, 4}}, invalid: true},
	{name: "only the next holder is measured", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000
1100 1 invoke acquire ttl=1000
1110 1 ok acquire lease=1000
1120 1 invoke release
1125 1 ok release
1130 2 invoke acquire ttl=1000
1140 2 ok acquire lease=1000`, want: timeMargin(110*ms, 0, 1, 3)},
}

func TestLeaseMargin(t *testing.T) {
	for _, tt := range leaseCases {
		t.Run(tt.name, func(t *testing.T) {
			h := marginHistory(t, tt.text)
			got := Margins(h, tt.drift)
			if len(got) != 1 || !reflect.DeepEqual(got[0].Lease, tt.want) {
				t.Fatalf("lease margin %s, want %s", marginText(got), tmText(tt.want))
			}
			lin := (&LinearizabilityChecker{Drift: tt.drift}).Check(context.Background(), h)
			if (lin.Verdict == Invalid) != tt.invalid {
				t.Errorf("linearizability %s %v; want invalid %v", lin.Verdict, lin.Anomalies, tt.invalid)
			}
		})
	}
}

// writeCases are the write margins of small histories (docs/history.md
// §4.8).
var writeCases = []struct {
	name string
	text string
	want *TimeMargin
}{
	{name: "wrote 90ms before its until", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000 until=990
800 0 invoke write
805 0 ok write
900 0 invoke write
905 0 ok write
1200 0 invoke release
1205 0 ok release`, want: timeMargin(90*ms, 1, 4)},
	{name: "the resource applied its write after its until", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000 until=990
985 0 invoke write
1002 0 ok write applied=1001`, want: timeMargin(-11*ms, 1, 2)},
	{name: "it wrote after it learned its lease was lost", text: `
0 0 invoke acquire
10 0 ok acquire lease=-1 session
400 0 invoke write
405 0 ok write
450 0 invoke lease-lost
450 0 ok lease-lost
460 0 invoke write
465 0 info write`, want: &TimeMargin{Margin: -10 * ms, Ops: []int{1, 6, 4}}},
	{name: "a release ended its belief, not its deadline", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000 until=990
900 0 invoke write
905 0 ok write
950 0 invoke release
955 0 ok release`, want: timeMargin(90*ms, 1, 2)},
	{name: "no deadline: no margin", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000
900 0 invoke write
905 0 ok write
950 0 invoke release
955 0 ok release`},
	{name: "a rejected write took no effect", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000 until=990
500 0 invoke write
505 0 ok write
980 0 invoke write
985 0 fail write`, want: timeMargin(490*ms, 1, 2)},
	{name: "a renewal moved its until", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000 until=990
600 0 invoke renew ttl=1000
610 0 ok renew lease=1000 until=1590
1500 0 invoke write
1505 0 ok write`, want: timeMargin(90*ms, 1, 4)},
}

func TestWriteMargin(t *testing.T) {
	for _, tt := range writeCases {
		t.Run(tt.name, func(t *testing.T) {
			got := Margins(marginHistory(t, tt.text), 0)
			if len(got) != 1 || !reflect.DeepEqual(got[0].Write, tt.want) {
				t.Fatalf("write margin %s, want %s", marginText(got), tmText(tt.want))
			}
		})
	}
}

// tokenCases are the token margins of small histories (docs/history.md
// §4.8), and whether the fencing-token check reports them.
var tokenCases = []struct {
	name    string
	text    string
	want    *TokenMargin
	invalid bool
}{
	{name: "the next token", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000 token=5
20 0 invoke write token=5
25 0 ok write
30 0 invoke release
35 0 ok release
40 1 invoke acquire ttl=1000
45 1 ok acquire lease=1000 token=6`, want: &TokenMargin{Margin: 1, Ops: []int{3, 7}}},
	{name: "the same token again", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000 token=5
20 0 invoke write token=5
25 0 ok write
40 1 invoke acquire ttl=1000
45 1 ok acquire lease=1000 token=5`, want: &TokenMargin{Margin: 0, Ops: []int{3, 5}}, invalid: true},
	{name: "a lower token", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000 token=5
20 0 invoke write token=5
25 0 ok write
40 1 invoke acquire ttl=1000
45 1 ok acquire lease=1000 token=3`, want: &TokenMargin{Margin: -2, Ops: []int{3, 5}}, invalid: true},
	{name: "a grant invoked before the write returned is not measured", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000 token=5
20 0 invoke write token=5
22 1 invoke acquire ttl=1000
25 0 ok write
45 1 ok acquire lease=1000 token=6`},
	{name: "a renewal hands out a new token", text: `
0 0 invoke acquire ttl=1000
10 0 ok acquire lease=1000 token=5
20 0 invoke write token=5
25 0 ok write
30 0 invoke renew ttl=1000
35 0 ok renew lease=1000 token=9`, want: &TokenMargin{Margin: 4, Ops: []int{3, 5}}},
}

func TestTokenMargin(t *testing.T) {
	for _, tt := range tokenCases {
		t.Run(tt.name, func(t *testing.T) {
			h := marginHistory(t, tt.text)
			got := Margins(h, 0)
			if len(got) != 1 || !reflect.DeepEqual(got[0].Token, tt.want) {
				t.Fatalf("token margin %s, want %+v", marginText(got), tt.want)
			}
			if v := (TokenChecker{}).Check(context.Background(), h).Verdict; (v == Invalid) != tt.invalid {
				t.Errorf("fencing tokens %s, want invalid %v", v, tt.invalid)
			}
		})
	}
}

// TestMarginsPerKey checks that each key gets its own margins, in the
// order of the keys, and a key none applies to is listed without any.
func TestMarginsPerKey(t *testing.T) {
	h := marginHistory(t, `
0 0 invoke acquire ttl=1000 key=b
10 0 ok acquire lease=1000 key=b
20 2 invoke acquire ttl=1000 key=a
30 2 ok acquire lease=1000 key=a
40 2 invoke release key=a
45 2 ok release key=a
1005 1 invoke acquire ttl=1000 key=b
1020 1 ok acquire lease=1000 key=b`)
	got := Margins(h, 0)
	want := []Margin{{Key: "a"}, {Key: "b", Lease: timeMargin(20*ms, 0, 1, 7)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("margins %s, want %s", marginText(got), marginText(want))
	}
}

func TestNormalized(t *testing.T) {
	tests := []struct {
		name     string
		m        Margin
		fallback time.Duration
		want     float64
		ok       bool
	}{
		{name: "none applies", m: Margin{Key: "k"}},
		{name: "the smaller of lease and write, in leases", m: Margin{Lease: &TimeMargin{Margin: 300 * ms, Lease: 2 * time.Second}, Write: &TimeMargin{Margin: 200 * ms, Lease: time.Second}}, want: 0.15, ok: true},
		{name: "a lease that never ends falls back", m: Margin{Write: &TimeMargin{Margin: 50 * ms}}, fallback: 500 * ms, want: 0.1, ok: true},
		{name: "a positive token margin says nothing", m: Margin{Token: &TokenMargin{Margin: 1}}},
		{name: "a token violation counts", m: Margin{Lease: &TimeMargin{Margin: 300 * ms, Lease: time.Second}, Token: &TokenMargin{Margin: 0}}, want: 0, ok: true},
		{name: "no lease and no fallback, but a violation", m: Margin{Lease: &TimeMargin{Margin: -300 * ms}}, want: -1, ok: true},
		{name: "a hold that could not end is below all", m: Margin{Lease: &TimeMargin{Margin: -Forever, Lease: 2 * time.Second}, Token: &TokenMargin{Margin: -5}}, want: MarginNeverEnded, ok: true},
		{name: "a hold that could not end, without a lease", m: Margin{Write: &TimeMargin{Margin: -Forever}}, want: MarginNeverEnded, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.m.Normalized(tt.fallback)
			if ok != tt.ok || math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Normalized = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// tmText renders a time margin for a test's message.
func tmText(m *TimeMargin) string {
	if m == nil {
		return "none"
	}
	return fmt.Sprintf("%v (lease %v, ops %v)", m.Margin, m.Lease, m.Ops)
}

// marginText renders margins for a test's message.
func marginText(ms []Margin) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "[%s: lease %s, write %s, token %+v] ", m.Key, tmText(m.Lease), tmText(m.Write), m.Token)
	}
	return b.String()
}

// BenchmarkMargins1M measures the margins of the benchmark history of
// BenchmarkCheck1M (a million ops, four keys, fenced), which a run computes
// beside its check.
func BenchmarkMargins1M(b *testing.B) {
	h := benchHistory(b, bigOptions)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if ms := Margins(h, DefaultDrift); len(ms) != bigOptions.Keys {
			b.Fatalf("margins of %d keys, want %d", len(ms), bigOptions.Keys)
		}
	}
}
