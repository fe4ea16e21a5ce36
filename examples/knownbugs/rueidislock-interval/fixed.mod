module github.com/jepsen-lite/jepsen-lite/examples/knownbugs/rueidislock-interval

go 1.22

require github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient v0.0.0

require github.com/rueian/rueidis v0.0.80

replace github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient => ../lockclient
