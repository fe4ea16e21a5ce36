package history

// The nemesis ops' f values that readers of a history pair up. A fault op is
// recorded when a fault begins and its heal op when it ends; both carry a
// value saying what was done to whom.
const (
	// FClientPause is recorded twice for a client pause: when the nemesis
	// arms it (value "armed": true) and when the worker actually stops.
	FClientPause = "client-pause"
	// FClientResume is recorded when a paused worker goes on.
	FClientResume = "client-resume"
	// FHealAll ends every fault still active.
	FHealAll = "heal-all"
)

// HealOf returns the f recorded when the fault named fault is healed:
// pause → resume, kill → start, clock-bump and clock-strobe → clock-reset,
// client-clock → client-clock-reset, client-pause → client-resume, and heal
// for every other fault (partitions, resets, latency, failovers).
func HealOf(fault string) string {
	switch fault {
	case "pause":
		return "resume"
	case "kill":
		return "start"
	case "clock-bump", "clock-strobe":
		return "clock-reset"
	case "client-clock":
		return "client-clock-reset"
	case FClientPause:
		return FClientResume
	default:
		return "heal"
	}
}

// IsHeal reports whether f names the end of a fault rather than a fault.
func IsHeal(f string) bool {
	switch f {
	case "heal", FHealAll, "resume", "start", "clock-reset", "client-clock-reset", FClientResume:
		return true
	}
	return false
}
