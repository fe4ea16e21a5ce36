// Package ownlock shows how to put a lock of your own under jepsen-lite from
// a normal Go test, with no fork: implement clients.Locker, hand a factory to
// runner.WithLocker, and run any catalog scenario (or your own YAML) against
// it. The lock here is deliberately broken: it checks that the key is free
// and then sets it, in two round trips, so two workers can both see the key
// free and both take it. TestOwnModule does the same from a module of its
// own outside the checkout (testdata/mymodule), as docs/own-lock.md says.
package ownlock
