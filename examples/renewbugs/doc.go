// Package renewbugs holds three bugs of a lease's renewal, each planted in
// a small Go Locker on go-redis beside its corrected twin, and the tests
// that hunt them (docs/hunt.md, "Renewal bugs"): a watchdog whose next
// deadline is the previous one plus its interval, so that every reply's
// delay is lost and the key expires under its holder; a lease stored in
// whole seconds, rounded down, so that the key lives shorter than the
// lease the lock claims; and a watchdog whose first renewal is scheduled
// from the acquire's return rather than its invoke, late by a slow
// acquire's reply. The tests hunt each from the plain Redis baseline a Go
// lock gets (redis-single-baseline, as `hunt --system redis` and
// lockapi.Hunt use), with the runs' ttls, holds and latency delays drawn
// by the hunt. The test binary also serves each lock and its twin to the
// harness's command line (lockapi.Main in TestMain), so that the shrink
// test (build tag shrink) hunts, shrinks, runs and replays them from Go
// through lockapi, as a user's module does. They are tests only.
package renewbugs
