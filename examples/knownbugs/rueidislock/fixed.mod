module github.com/jepsen-lite/jepsen-lite/examples/knownbugs/rueidislock

go 1.24.9

require (
	github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient v0.0.0
	github.com/redis/rueidis v1.0.70
)

require golang.org/x/sys v0.39.0 // indirect

replace github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient => ../lockclient
