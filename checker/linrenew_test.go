package checker

import (
	"context"
	"testing"
)

// TestLinearizabilityRenewalFallsBackOnGrantLease checks that a renewal
// with neither a ttl nor a lease of its own takes its process's latest
// grant's lease (docs/history.md §3), which the linearizability stream
// reads from the Follower's grants: renewed at 500 ms with the grant's
// 1 s, the lease runs to 1.5 s, so another process's grant at 1.2 s is
// early and one at 2 s is not.
func TestLinearizabilityRenewalFallsBackOnGrantLease(t *testing.T) {
	const head = `
0 0 invoke acquire ttl=1000
10 0 ok acquire
500 0 invoke renew
510 0 ok renew
`
	for _, tt := range []struct {
		name  string
		later string
		want  Verdict
	}{
		{"grant after the renewed lease", "2000 1 invoke acquire ttl=1000\n2010 1 ok acquire", Valid},
		{"grant inside the renewed lease", "1200 1 invoke acquire ttl=1000\n1210 1 ok acquire", Invalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := marginHistory(t, head+tt.later)
			r := (&LinearizabilityChecker{}).Check(context.Background(), h)
			if r.Verdict != tt.want {
				t.Errorf("verdict %s, want %s: %+v", r.Verdict, tt.want, r.Anomalies)
			}
		})
	}
}
