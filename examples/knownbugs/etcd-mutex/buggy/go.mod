module github.com/jepsen-lite/jepsen-lite/examples/knownbugs/etcd-mutex/buggy

go 1.22

require (
	github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient v0.0.0
	go.etcd.io/etcd v0.0.0-20191023171146-3cf2f69b5738
)

require (
	github.com/coreos/go-systemd v0.0.0-20180511133405-39ca1b05acc7 // indirect
	github.com/coreos/pkg v0.0.0-20160727233714-3ac0863d7acf // indirect
	github.com/gogo/protobuf v1.2.1 // indirect
	github.com/golang/protobuf v1.3.2 // indirect
	github.com/google/uuid v1.0.0 // indirect
	go.uber.org/atomic v1.3.2 // indirect
	go.uber.org/multierr v1.1.0 // indirect
	go.uber.org/zap v1.10.0 // indirect
	golang.org/x/net v0.0.0-20190813141303-74dc4d7220e7 // indirect
	golang.org/x/sys v0.0.0-20190826190057-c7b8b68b1456 // indirect
	golang.org/x/text v0.3.0 // indirect
	google.golang.org/genproto v0.0.0-20180817151627-c66870c02cf8 // indirect
	google.golang.org/grpc v1.23.1 // indirect
)

replace github.com/jepsen-lite/jepsen-lite/examples/knownbugs/lockclient => ../../lockclient
