package ssh

import (
	"reflect"
	"testing"
)

func TestBatchResults(t *testing.T) {
	tests := []struct {
		name     string
		out      string
		n        int
		statuses []int
		outs     []string
	}{
		{name: "each command's status and output", n: 3,
			out:      batchMarker + " 0 0\nError: No such file or directory\n" + batchMarker + " 1 1\n" + batchMarker + " 2 0\n",
			statuses: []int{0, 1, 0}, outs: []string{"", "Error: No such file or directory\n", ""}},
		{name: "a command that never ended", n: 2,
			out:      batchMarker + " 0 0\npartial\n",
			statuses: []int{0, -1}, outs: []string{"", ""}},
		{name: "a marker out of range is skipped", n: 1,
			out:      batchMarker + " 7 0\n" + batchMarker + " 0 2\n",
			statuses: []int{2}, outs: []string{""}},
		{name: "no output at all", n: 2, statuses: []int{-1, -1}, outs: []string{"", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			statuses, outs := batchResults(tt.out, tt.n)
			if !reflect.DeepEqual(statuses, tt.statuses) || !reflect.DeepEqual(outs, tt.outs) {
				t.Errorf("batchResults = %v, %q; want %v, %q", statuses, outs, tt.statuses, tt.outs)
			}
		})
	}
}
