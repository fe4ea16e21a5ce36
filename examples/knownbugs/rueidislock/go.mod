module github.com/jepsen-lite/jepsen-lite/examples/knownbugs/rueidislock

go 1.23.0

require (
	github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient v0.0.0
	github.com/redis/rueidis v1.0.69
)

require golang.org/x/sys v0.31.0 // indirect

replace github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient => ../lockclient
