package scenarios_test

import (
	"slices"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/scenarios"
)

// TestEveryAlgorithmDeclaresItsSystem checks that the names a run validates
// with give every algorithm and queue implementation a system that
// validation knows: one of the systems, or scenarios.AnySystem.
func TestEveryAlgorithmDeclaresItsSystem(t *testing.T) {
	names := realNames()
	for _, a := range append(slices.Clone(names.Algorithms), names.QueueAlgorithms...) {
		sys, ok := names.AlgorithmSystems[a]
		if !ok || sys != scenarios.AnySystem && !slices.Contains(names.Systems, sys) {
			t.Errorf("%s runs on %q, %v: want one of %v or %q", a, sys, ok, names.Systems, scenarios.AnySystem)
		}
	}
}
