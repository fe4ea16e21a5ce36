package faultkind

// nodeTargets documents the target shapes of the faults that act on nodes.
const nodeTargets = "targets: node names or one, minority, majority, all, primaries, replicas"

// linkShapes documents the target shapes shared by the network faults.
const linkShapes = "targets: nodes (names, one, minority, majority, all, primaries, replicas: cut off from the workers and the other nodes), " +
	"halves (a random split of nodes and workers), or workers (w0, one, all: they lose the nodes of option nodes, default all); " +
	"option links: all (default), clients, nodes"

// linksUnavailable is what the faults that cut links make unavailable.
const linksUnavailable = "every node they isolate (from the other nodes or from the workers) and every node that some worker no longer reaches through a cut link, until the heal: " +
	"a node counts as up only while every worker and its peers reach it (so halves with workers on both sides leaves no node up)"

// clientPauseDescription says what a client pause does and what it takes.
const clientPauseDescription = "pause workers (targets w0, w1, one, minority, majority, all) at a point of the workload loop (point: before-write, the default, after-response, or in-call: while a request to an external client is in flight, at once when the step fires during a request, else right after the next one is sent) for the duration (default 5s): a stop-the-world GC pause. An external client (lock algorithm exec) is stopped whole with SIGSTOP, its background threads too; a Go Locker's workload goroutine stops, its library's background goroutines (a watchdog, a heartbeat) go on. Option isolate: true also cuts the workers' links for the pause"
