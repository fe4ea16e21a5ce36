package nemesis

// Faults returns every fault kind, in the order `jepsen-lite list --faults`
// shows them.
func Faults() []Fault {
	return []Fault{
		Partition{},
		Reset{},
		Latency{},
		ClockBump{},
		ClockStrobe{},
		Pause{},
		Kill{},
		Failover{},
		SentinelFailover{},
		ClientPause{},
		ClientClock{},
	}
}

// Compile-time checks that every fault kind is a Fault with a description.
var (
	_ Fault                          = Partition{}
	_ StepChecker                    = Partition{}
	_ Fault                          = Reset{}
	_ Fault                          = Latency{}
	_ Fault                          = ClockBump{}
	_ StepChecker                    = ClockStrobe{}
	_ Fault                          = Pause{}
	_ Fault                          = Kill{}
	_ Fault                          = Failover{}
	_ Fault                          = SentinelFailover{}
	_ Fault                          = ClientPause{}
	_ Fault                          = ClientClock{}
	_ interface{ Describe() string } = Failover{}
)
