package nemesis_test

import (
	"testing"

	"github.com/jepsen-lite/jepsen-lite/nemesis"
)

// behaviourTests names, for every fault, the test that runs it against the
// local cluster backend (real servers) and checks what the network, the
// node or the worker really did. Adding a fault to nemesis.Faults() without
// a line here fails TestEveryFaultHasABehaviourTest.
var behaviourTests = map[string]func(*testing.T){
	"client-pause":      TestBehaviourClientPause,
	"clock-bump":        nemesis.TestClockBumpExpiresKeysOnOneNode,
	"clock-strobe":      nemesis.TestClockStrobeFlipsTheNodeClock,
	"client-clock":      TestBehaviourClientClock,
	"kill":              nemesis.TestBehaviourKill,
	"restart":           nemesis.TestBehaviourRestart,
	"pause":             nemesis.TestPausedNodeAnswersAfterResume,
	"failover":          nemesis.TestFailoverLosesTheUnreplicatedLock,
	"sentinel-failover": nemesis.TestSentinelFailoverSwitchesToTheElectedPrimary,
	"partition":         nemesis.TestPartitionedWorkerEndsInfoAndRecovers,
	"reset":             nemesis.TestBehaviourReset,
	"latency":           nemesis.TestLatencySlowsOnlyTheTargetNode,
}

// TestEveryFaultHasABehaviourTest fails when a fault of nemesis.Faults()
// has no behavioural test in behaviourTests, or when behaviourTests names
// a fault that does not exist.
func TestEveryFaultHasABehaviourTest(t *testing.T) {
	faults := map[string]bool{}
	for _, f := range nemesis.Faults() {
		name := f.Facts().Name
		faults[name] = true
		if behaviourTests[name] == nil {
			t.Errorf("fault %s has no behavioural test: write one against the local cluster that checks what the fault really did, and name it in behaviourTests", name)
		}
	}
	for name := range behaviourTests {
		if !faults[name] {
			t.Errorf("behaviourTests names %s, which is not a fault of nemesis.Faults()", name)
		}
	}
}
