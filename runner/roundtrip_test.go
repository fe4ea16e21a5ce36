package runner_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jepsen-lite/jepsen-lite/clients"
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// releaseScript is the compare-and-delete of the Redis lock documentation.
var releaseScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// startRedis starts one redis-server and two networks with one worker link
// each: a run's own (a kernel address translation) and one through a proxy
// (the links of a run with latency faults).
func startRedis(b *testing.B) (direct, link, proxied string) {
	b.Helper()
	net, err := cluster.NewNetwork()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { net.Close() })
	pnet, err := cluster.NewNetwork(linknet.WithProxies())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pnet.Close() })
	c, err := local.Start(context.Background(), cluster.Spec{System: cluster.Redis, Nodes: 1}, net)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	n := c.Nodes()[0]
	if link, err = net.Link(linknet.Name("w0", n.Name), n.Addr); err != nil {
		b.Fatal(err)
	}
	if proxied, err = pnet.Link(linknet.Name("w0", n.Name), n.Addr); err != nil {
		b.Fatal(err)
	}
	return n.Addr, link, proxied
}

// BenchmarkRoundTrip measures one acquire+release of the single-instance
// Redis lock: with a bare go-redis client straight to the server, through a
// worker's link and through a proxied link, and with the lock client behind
// the recording wrapper the same three ways ("recorded-link" is what a run
// does), so that the link's, the proxy's and the recording's costs can be
// told apart.
func BenchmarkRoundTrip(b *testing.B) {
	direct, link, proxied := startRedis(b)
	ctx := context.Background()

	bare := func(addr string) func(b *testing.B) {
		return func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: addr})
			defer c.Close()
			for i := 0; b.Loop(); i++ {
				v := fmt.Sprint(i)
				if ok, err := c.SetNX(ctx, "bench", v, 10*time.Second).Result(); err != nil || !ok {
					b.Fatalf("SET NX: %v %v", ok, err)
				}
				if n, err := releaseScript.Run(ctx, c, []string{"bench"}, v).Int(); err != nil || n != 1 {
					b.Fatalf("release: %v %v", n, err)
				}
			}
		}
	}
	b.Run("bare-go-redis", bare(direct))
	b.Run("bare-go-redis-link", bare(link))
	b.Run("bare-go-redis-proxy", bare(proxied))

	recorded := func(addr string) func(b *testing.B) {
		return func(b *testing.B) {
			alg, err := clients.Lookup("redis-single")
			if err != nil {
				b.Fatal(err)
			}
			l, err := alg.New(ctx, clients.Target{Endpoints: []clients.Endpoint{{Name: "n1", Addr: addr}}, Rand: rand.New(rand.NewPCG(1, 2))})
			if err != nil {
				b.Fatal(err)
			}
			w := history.NewWriter(io.Discard)
			defer w.Close()
			r := &clients.Recorded{Locker: l, Rec: history.NewRecorder(w), Proc: clients.NewProcess(0, 1)}
			defer r.Close()
			for b.Loop() {
				lease, err := r.Acquire(ctx, "bench", 10*time.Second)
				if err != nil {
					b.Fatalf("acquire: %v", err)
				}
				if err := r.Release(ctx, lease); err != nil {
					b.Fatalf("release: %v", err)
				}
			}
		}
	}
	b.Run("recorded-direct", recorded(direct))
	b.Run("recorded-link", recorded(link))
	b.Run("recorded-proxy", recorded(proxied))
}
