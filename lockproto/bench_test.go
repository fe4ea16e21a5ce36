package lockproto_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/lockproto"
	"github.com/redis/go-redis/v9"
)

// buildMemlock builds the in-memory client of testdata/memlock.
func buildMemlock(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "memlock")
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/memlock")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building memlock: %v\n%s", err, out)
	}
	return bin
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCall measures the protocol's cost against a Redis round trip,
// in one run on the same machine. "protocol": one request and its reply
// through the protocol with a client that keeps its locks in memory (an
// acquire, then a release: two calls per iteration), so that no server's
// time is in it; ns/call is the wall time of a call, the client's share
// and the pipes' included, and harness-cpu-ns/call the CPU time the
// harness's own process spent per call (encoding, decoding, system calls,
// wake-ups), the cost the harness adds to every op of an external client.
// "redis": a bare go-redis SET NX PX and DEL against a real redis-server
// (two round trips per iteration); ns/call is one round trip.
//
// "pipe": a line written to cat and read back, the floor of any round trip
// to a process of its own, with neither JSON nor a lock in it; the
// harness's own cost per call is protocol's ns/call less pipe's.
func BenchmarkCall(b *testing.B) {
	b.Run("protocol", benchmarkProtocol)
	b.Run("pipe", benchmarkPipe)
	b.Run("redis", benchmarkRedis)
}

func benchmarkPipe(b *testing.B) {
	cmd := exec.Command("cat")
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	line := []byte(`{"type":"release","id":8,"key":"k","owner":"1"}` + "\n")
	buf := make([]byte, 4096)
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if _, err := in.Write(line); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < len(line); {
			n, err := out.Read(buf)
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
	b.ReportMetric(float64(time.Since(start))/float64(b.N), "ns/call")
}

func benchmarkRedis(b *testing.B) {
	addr := startRedis(b)
	c := redis.NewClient(&redis.Options{Addr: addr})
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	b.ResetTimer()
	cpu, start := cpuTime(), time.Now()
	for b.Loop() {
		if ok, err := c.SetNX(ctx, "k", "v", time.Second).Result(); err != nil || !ok {
			b.Fatalf("set: %v %v", ok, err)
		}
		if err := c.Del(ctx, "k").Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start))/float64(2*b.N), "ns/call")
	b.ReportMetric(float64(cpuTime()-cpu)/float64(2*b.N), "harness-cpu-ns/call")
}

func benchmarkProtocol(b *testing.B) {
	p, err := lockproto.Start(context.Background(), lockproto.Config{Command: buildMemlock(b), Init: lockproto.Init{System: "none"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Kill)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu, start := cpuTime(), time.Now()
	for b.Loop() {
		rep, err := p.Call(ctx, lockproto.Request{Type: lockproto.TypeAcquire, Key: "k", TTLMS: 1000}, lockproto.Hooks{})
		if err != nil || rep.Type != lockproto.TypeOK {
			b.Fatalf("acquire: %+v %v", rep, err)
		}
		rep, err = p.Call(ctx, lockproto.Request{Type: lockproto.TypeRelease, Key: "k", Owner: *rep.Owner}, lockproto.Hooks{})
		if err != nil || rep.Type != lockproto.TypeOK {
			b.Fatalf("release: %+v %v", rep, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(time.Since(start))/float64(2*b.N), "ns/call")
	b.ReportMetric(float64(cpuTime()-cpu)/float64(2*b.N), "harness-cpu-ns/call")
}
