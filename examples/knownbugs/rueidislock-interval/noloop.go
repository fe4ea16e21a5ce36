//go:build noloop

package main

import "github.com/rueian/rueidis/rueidislock"

// noLoop sets NoLoopTracking, which v0.0.79 added: Redis does not send the
// holder the invalidations of its own extensions, and the library does not
// wait for them after each extension.
func noLoop(opt *rueidislock.LockerOption) { opt.NoLoopTracking = true }
