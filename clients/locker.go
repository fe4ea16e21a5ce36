// Package clients owns the lock algorithms under test, each behind the one
// Locker interface; the recording wrapper that writes every call into the
// history the same honest way; and the protected resource the workload writes
// to (a register per key, fenced or unfenced).
package clients

import (
	"errors"

	"github.com/jepsen-lite/jepsen-lite/lockapi"
)

// The lock's types and errors a Locker of one's own implements and returns
// are declared once, in the module github.com/jepsen-lite/jepsen-lite/lockapi
// (which requires nothing but the standard library); clients names them
// here, so that a Locker is the same type on both sides and errors.Is holds
// across them.

// ErrNotAcquired reports that the lock was definitely not acquired (it is
// held by someone else, no quorum granted it, or the acquire failed before
// any step that can take the lock: Step) and that nothing needs to be
// undone. The recording wrapper records it as fail; every other error is
// indeterminate and recorded as info. It is lockapi.ErrNotAcquired.
var ErrNotAcquired = lockapi.ErrNotAcquired

// ErrNotHeld reports that a release or renewal definitely did nothing because
// the caller did not hold the lock (any more). It is recorded as fail. It is
// lockapi.ErrNotHeld.
var ErrNotHeld = lockapi.ErrNotHeld

// ErrReleaseNoOp reports a release that the algorithm does not perform on
// the server (the timeout locks: the lock frees itself when its lease ends).
// The recording wrapper records it as fail, so that nothing reads it as a
// release that freed the lock. It is lockapi.ErrReleaseNoOp.
var ErrReleaseNoOp = lockapi.ErrReleaseNoOp

// ErrClientClosed reports a call that closed its own client to return: an
// algorithm whose library call cannot be abandoned any other way
// (go-zookeeper's zk.Lock) gives up a wait so. The outcome is indeterminate,
// and the client is gone even when the scenario keeps clients after errors
// (Recorded.KeepClient).
var ErrClientClosed = errors.New("clients: the call closed its client to return")

// ErrHoldEnded is the cause (context.Cause) with which the runner ends the
// context it gave a successful Acquire, once the hold is over. It is
// lockapi.ErrHoldEnded.
var ErrHoldEnded = lockapi.ErrHoldEnded

// Locker is one client's handle on a lock algorithm (lockapi.Locker): a
// Locker is used by one worker at a time, and the runner makes one per
// worker. Its Acquire's context lives as long as the hold; in the runner's
// process it also has the call's deadline while Acquire runs and ends with
// context.DeadlineExceeded when the call runs past it (the call is then
// recorded as info, whatever it returns).
type Locker = lockapi.Locker

// Lease is what a successful Acquire returns (lockapi.Lease).
type Lease = lockapi.Lease

// Renewer is a Locker that can extend a lease it holds (lockapi.Renewer).
type Renewer = lockapi.Renewer

// LeaseWatcher is a Locker whose leases can be lost behind the holder's back
// (lockapi.LeaseWatcher).
type LeaseWatcher = lockapi.LeaseWatcher

// Clock is a worker's own wall clock (lockapi.Clock). Algorithms that send a
// client timestamp (the timeout locks) read it, so the nemesis can skew one
// worker's clock without touching the host's.
type Clock = lockapi.Clock

// Endpoint is one node as a worker sees it (lockapi.Endpoint).
type Endpoint = lockapi.Endpoint

// Target is everything a Locker factory needs to build one worker's Locker
// (lockapi.Target).
type Target = lockapi.Target

// Factory builds one worker's Locker (lockapi.Factory).
type Factory = lockapi.Factory

// Step is one request of an acquire, up to and including the ones that can
// take the lock (a read of what was taken, after them, is no step of its
// own). Grants says whether the request can take the lock. An acquire that fails at a step before any step that can
// take the lock certainly took nothing, whatever the failure (a network
// error included): its error wraps ErrNotAcquired and it is recorded as
// fail. A failure at or after a step that can take the lock is
// indeterminate (info) unless the algorithm knows the step was never sent
// or undid what it may have taken.
type Step struct {
	Name   string // the step's name in the acquire's errors: "create", "acquire", ...
	Sends  string // what it sends
	Grants bool   // it can take the lock
}

// beforeGrantError is the error of an acquire whose step failed before any
// step that can take the lock was sent (Step.Grants): the acquire certainly
// took nothing. It wraps the step's own error and ErrNotAcquired.
type beforeGrantError struct {
	step string
	err  error
}

// beforeGrant returns the error of an acquire that failed with err at step,
// a step before any that can take the lock.
func beforeGrant(step string, err error) error { return &beforeGrantError{step: step, err: err} }

func (e *beforeGrantError) Error() string {
	return e.step + " failed before any step that can take the lock: " + e.err.Error()
}

func (e *beforeGrantError) Unwrap() []error { return []error{e.err, ErrNotAcquired} }

// unsentError is the error of an acquire whose step that can take the lock
// was never sent, as err proves: the acquire certainly took nothing. It
// wraps err and ErrNotAcquired.
type unsentError struct {
	step string
	err  error
}

func (e *unsentError) Error() string {
	return e.step + " was never sent: " + e.err.Error()
}

func (e *unsentError) Unwrap() []error { return []error{e.err, ErrNotAcquired} }

// redisStepError returns the error of a Redis acquire whose step, one that
// can take the lock, failed with err: definite (unsentError) when the
// command never left the client because its connection could not be opened
// (neverSent), err itself otherwise.
func redisStepError(step string, err error) error {
	if neverSent(err) {
		return &unsentError{step: step, err: err}
	}
	return err
}
