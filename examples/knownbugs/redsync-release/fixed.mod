module github.com/jepsen-lite/jepsen-lite/examples/knownbugs/redsync-release

go 1.22

require (
	github.com/go-redis/redis/v8 v8.1.1
	github.com/go-redsync/redsync/v4 v4.0.4
	github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient v0.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.1.1 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.0 // indirect
	go.opentelemetry.io/otel v0.11.0 // indirect
)

replace github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient => ../lockclient
