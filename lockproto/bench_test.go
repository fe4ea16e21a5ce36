package lockproto_test

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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

// threadTime is the CPU time of the calling thread: of the goroutine that
// calls it, when that goroutine is locked to its thread.
func threadTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_THREAD, &ru)
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
// "own": the harness's own cost per call, the figure the protocol's
// budget is set in (a tenth of a Redis round trip). The calling goroutine
// is locked to its thread, and own-cpu-ns/call is that thread's CPU time
// per protocol call (encoding, writing, reading, decoding, checking,
// mapping the clock) less its CPU time per bare pipe round trip (the write
// and the read any process boundary needs): what the harness itself does
// per call, without the Go scheduler's idle spinning on other threads,
// which grows with how long the client takes. Each iteration is a round of
// three blocks of ownBlock calls (through the protocol, through a bare
// pipe, to Redis), so that the machine's load weighs on all three alike;
// the figures are medians over rounds. redis-rt-ns is a Redis round trip's
// wall time, and own/redis-rt the ratio the budget is about.
//
// "pipe": a line written to cat and read back, the floor of any round trip
// to a process of its own, with neither JSON nor a lock in it; the
// harness's own cost per call is protocol's ns/call less pipe's.
func BenchmarkCall(b *testing.B) {
	b.Run("own", benchmarkOwn)
	b.Run("protocol", benchmarkProtocol)
	b.Run("pipe", benchmarkPipe)
	b.Run("redis", benchmarkRedis)
}

func benchmarkPipe(b *testing.B) {
	in, out := startCat(b)
	line := []byte(`{"type":"release","id":8,"key":"k","owner":"1"}` + "\n")
	buf := make([]byte, 4096)
	b.ResetTimer()
	cpu, start := cpuTime(), time.Now()
	for b.Loop() {
		pipeRoundTrip(b, in, out, line, buf)
	}
	b.ReportMetric(float64(time.Since(start))/float64(b.N), "ns/call")
	b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "harness-cpu-ns/call")
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

// ownBlock is how many calls each block of a round of "own" makes.
const ownBlock = 200

func benchmarkOwn(b *testing.B) {
	p, err := lockproto.Start(context.Background(), lockproto.Config{Command: buildMemlock(b), Init: lockproto.Init{System: "none"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Kill)
	pipeIn, pipeOut := startCat(b)
	rc := redis.NewClient(&redis.Options{Addr: startRedis(b)})
	b.Cleanup(func() { rc.Close() })
	ctx := context.Background()
	line := []byte(`{"type":"ok","id":8,"owner":"1","never":true,"received_ms":1.5,"now_ms":1.6}` + "\n")
	buf := make([]byte, 4096)
	var own, rt []float64
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	for b.Loop() {
		cpu := threadTime()
		for range ownBlock / 2 {
			rep, err := p.Call(ctx, lockproto.Request{Type: lockproto.TypeAcquire, Key: "k", TTLMS: 1000}, lockproto.Hooks{})
			if err != nil || rep.Type != lockproto.TypeOK {
				b.Fatalf("acquire: %+v %v", rep, err)
			}
			rep, err = p.Call(ctx, lockproto.Request{Type: lockproto.TypeRelease, Key: "k", Owner: *rep.Owner}, lockproto.Hooks{})
			if err != nil || rep.Type != lockproto.TypeOK {
				b.Fatalf("release: %+v %v", rep, err)
			}
		}
		protocolCPU := threadTime() - cpu
		cpu = threadTime()
		for range ownBlock {
			pipeRoundTrip(b, pipeIn, pipeOut, line, buf)
		}
		pipeCPU := threadTime() - cpu
		start := time.Now()
		for range ownBlock / 2 {
			if ok, err := rc.SetNX(ctx, "k", "v", time.Second).Result(); err != nil || !ok {
				b.Fatalf("set: %v %v", ok, err)
			}
			if err := rc.Del(ctx, "k").Err(); err != nil {
				b.Fatal(err)
			}
		}
		rt = append(rt, float64(time.Since(start))/ownBlock)
		own = append(own, float64(protocolCPU-pipeCPU)/ownBlock)
	}
	b.StopTimer()
	o, r := median(own), median(rt)
	b.ReportMetric(o, "own-cpu-ns/call")
	b.ReportMetric(r, "redis-rt-ns")
	b.ReportMetric(o/r, "own/redis-rt")
}

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// pipeRoundTrip writes line to cat and reads it back.
func pipeRoundTrip(b *testing.B, in io.Writer, out io.Reader, line, buf []byte) {
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

// startCat starts cat, whose output is its input: a bare pipe round trip.
func startCat(b *testing.B) (io.Writer, io.Reader) {
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
	return in, out
}
