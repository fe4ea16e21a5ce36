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

// describer is what `jepsen-lite list --faults` asks a fault for.
type describer interface{ Describe() string }

// faultKind is what every fault kind of Faults() implements.
type faultKind interface {
	Fault
	StepChecker
	describer
}

// Compile-time checks that every fault kind checks its steps and describes
// itself.
var (
	_ faultKind = Partition{}
	_ faultKind = Reset{}
	_ faultKind = Latency{}
	_ faultKind = ClockBump{}
	_ faultKind = ClockStrobe{}
	_ faultKind = Pause{}
	_ faultKind = Kill{}
	_ faultKind = Failover{}
	_ faultKind = SentinelFailover{}
	_ faultKind = ClientPause{}
	_ faultKind = ClientClock{}
)
