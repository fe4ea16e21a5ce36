//go:build !noloop

package main

import "github.com/rueian/rueidis/rueidislock"

// noLoop leaves the Locker's options as they are: v0.0.78 has no
// NoLoopTracking.
func noLoop(*rueidislock.LockerOption) {}
