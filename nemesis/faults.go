package nemesis

// Faults returns every fault kind, in the order `jepsen-lite list --faults`
// shows them.
func Faults() []Fault {
	return []Fault{
		ClientPause{},
		ClientClock{},
	}
}
