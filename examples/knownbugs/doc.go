// Package knownbugs is a corpus of real bugs in released lock libraries,
// each a small program in a Go module of its own that pins the library
// version with the bug and speaks jepsen-lite's lock-client protocol
// (docs/lock-protocol.md), next to the same program on the version that
// fixed it. Its test (build tag knownbugs, run by make test-knownbugs) builds
// both, runs the harness against each over five seeds of a catalog
// scenario, and requires the harness to find the bug in at least four runs
// of the buggy version and in none of the fixed one (at most one for etcd,
// whose fixed Lock may still grant on an answer that a partition delayed).
// docs/knownbugs.md describes each bug, the scenario that exposes it and
// the figures. Its ordinary tests check the runs kept in testdata: the
// etcd 3.5.0 client's late grant, with its servers' logs.
//
//   - redsync-release: go-redsync/redsync v4.0.3 (fixed in v4.0.4), Unlock
//     and Extend report success on a key that is no longer ours;
//   - etcd-mutex: etcd's concurrency.Mutex from the 3.4.3 client (fixed in
//     client/v3 v3.5.0), a waiter whose session lease expired while it
//     waited is told it holds the lock (etcd issue 11456);
//   - redsync-extend: go-redsync/redsync v4.12.0 (fixed in v4.12.1), an
//     Extend that fails on one master unlocks the key on every master and
//     may still report success (go-redsync/redsync pull request 150);
//   - rueidislock-drift: redis/rueidis v1.0.69's rueidislock (fixed in
//     v1.0.70), late extensions add up until the key expires under its
//     holder (redis/rueidis pull request 924);
//   - gozero-reentrant: zeromicro/go-zero v1.3.1's RedisLock (fixed in
//     v1.3.2), the holder's renewing Acquire is answered from a count and
//     never reaches Redis (zeromicro/go-zero pull request 1704);
//   - rueidislock-interval: rueian/rueidis v0.0.78's rueidislock (fixed in
//     v0.0.79, measured with v0.0.80), the default extend interval is one
//     second whatever the key's validity, so a key valid for less than a
//     second expires under its holder before its first extension (commit
//     ddad398).
//
// The programs share lockclient, a module without dependencies that serves
// the protocol; none of them imports the harness.
package knownbugs
