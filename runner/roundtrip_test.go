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
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
	"github.com/jepsen-lite/jepsen-lite/history"
)

// releaseScript is the compare-and-delete of the Redis lock documentation.
var releaseScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)

// startRedis starts one redis-server and a network with one worker link.
func startRedis(b *testing.B) (direct, proxied string) {
	b.Helper()
	net, err := cluster.NewNetwork()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { net.Close() })
	c, err := local.Start(context.Background(), cluster.Spec{System: cluster.Redis, Nodes: 1}, net)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	n := c.Nodes()[0]
	addr, err := net.Link(cluster.LinkName("w0", n.Name), n.Addr)
	if err != nil {
		b.Fatal(err)
	}
	return n.Addr, addr
}

// BenchmarkRoundTrip measures one acquire+release of the single-instance
// Redis lock: with a bare go-redis client straight to the server and through
// a proxy, and with the lock client behind the recording wrapper, straight
// and through the worker's proxy (as a run does it), so that the proxy's and
// the recording's costs can be told apart.
func BenchmarkRoundTrip(b *testing.B) {
	direct, proxied := startRedis(b)
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
	b.Run("bare-go-redis-proxied", bare(proxied))

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
	b.Run("recorded-proxied", recorded(proxied))
}
