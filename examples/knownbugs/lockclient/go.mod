module github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient

go 1.22
