package checker

import "testing"

func TestFollowersOps(t *testing.T) {
	three := [][]int{{1, 9}, {1, 12}, {1, 15}}
	tests := []struct {
		name      string
		followers [][]int
		n         int
		want      string
	}{
		{"none", nil, 3, ""},
		{"fewer than n", three[:2], 3, "[1 9], [1 12]"},
		{"exactly n", three, 3, "[1 9], [1 12], [1 15]"},
		{"more than n", three, 2, "[1 9], [1 12], …"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Anomaly{Followers: tc.followers}).FollowersOps(tc.n, "…"); got != tc.want {
				t.Fatalf("FollowersOps(%d) = %q, want %q", tc.n, got, tc.want)
			}
		})
	}
}
