package checker

import (
	"slices"
	"testing"
	"time"
)

// TestSessionEnd holds sessionEnd to docs/history.md §4.5, "Sessions kept
// by a leader": a session lease that would end at E, with lease X, ends at
// the least E' ≥ E such that every down stretch that began before E' ended
// at b with b + X ≤ E'.
func TestSessionEnd(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name  string
		e, x  time.Duration
		downs []span
		want  time.Duration
	}{
		{"no down stretch", 3 * s, 2 * s, nil, 3 * s},
		{"stretch after the end", 3 * s, 2 * s, []span{{4 * s, 6 * s}}, 3 * s},
		{"stretch beginning at the end", 3 * s, 2 * s, []span{{3 * s, 6 * s}}, 3 * s},
		{"stretch over the end", 3 * s, 2 * s, []span{{1 * s, 6 * s}}, 8 * s},
		{"stretch ended long before", 9 * s, 2 * s, []span{{1 * s, 6 * s}}, 9 * s},
		{"stretch ended within a lease before", 7 * s, 2 * s, []span{{1 * s, 6 * s}}, 8 * s},
		{"second stretch begins before the moved end", 3 * s, 2 * s, []span{{1 * s, 4 * s}, {5 * s, 7 * s}}, 9 * s},
		{"second stretch begins after the moved end", 3 * s, 2 * s, []span{{1 * s, 4 * s}, {6 * s, 7 * s}}, 6 * s},
		{"never ends", Forever, 2 * s, []span{{1 * s, 4 * s}}, Forever},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sessionEnd(tc.e, tc.x, tc.downs); got != tc.want {
				t.Fatalf("sessionEnd(%v, %v, %v) = %v, want %v", tc.e, tc.x, tc.downs, got, tc.want)
			}
		})
	}
}

// TestUpParts holds upParts to docs/history.md §4.5: before its return, a
// grant excuses no moment of a down stretch.
func TestUpParts(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name     string
		from, to time.Duration
		downs    []span
		want     []span
	}{
		{"no down stretch", 1 * s, 4 * s, nil, []span{{1 * s, 4 * s}}},
		{"stretch before", 5 * s, 6 * s, []span{{1 * s, 4 * s}}, []span{{5 * s, 6 * s}}},
		{"stretch ending at the start", 4 * s, 6 * s, []span{{1 * s, 4 * s}}, []span{{4 * s, 6 * s}}},
		{"stretch inside", 1 * s, 9 * s, []span{{2 * s, 4 * s}}, []span{{1 * s, 2 * s}, {4 * s, 9 * s}}},
		{"stretch over the start", 3 * s, 9 * s, []span{{2 * s, 4 * s}}, []span{{4 * s, 9 * s}}},
		{"stretch over the end", 1 * s, 3 * s, []span{{2 * s, 4 * s}}, []span{{1 * s, 2 * s}}},
		{"stretch over all of it", 2 * s, 3 * s, []span{{1 * s, 4 * s}}, nil},
		{"two stretches", 0, 9 * s, []span{{1 * s, 2 * s}, {3 * s, 4 * s}}, []span{{0, 1 * s}, {2 * s, 3 * s}, {4 * s, 9 * s}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := upParts(tc.from, tc.to, tc.downs); !slices.Equal(got, tc.want) {
				t.Fatalf("upParts(%v, %v, %v) = %v, want %v", tc.from, tc.to, tc.downs, got, tc.want)
			}
		})
	}
}
