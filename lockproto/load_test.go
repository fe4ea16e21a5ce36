package lockproto_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/lockproto"
)

// hangBound is how long past its own deadline a refusal may come before the
// tests below call it a hang: generous, for a machine shared with other
// work, since it catches a deadline that is not kept, not a slow one.
const hangBound = 30 * time.Second

// cpuHogs starts n busy loops beside the test, each a shell of its own in a
// process group of its own, killed when the test ends.
func cpuHogs(t *testing.T, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
	}
}

// TestInitStallUnderLoad starts eight clients at once that never answer
// init, beside two CPU hogs, as a run starts its workers: each is refused
// as a protocol error naming init once its init bound has passed, counted
// from its own start, and well within the hang bound. The time each took
// is logged (docs/performance.md).
func TestInitStallUnderLoad(t *testing.T) {
	cpuHogs(t, 2)
	const bound = 3 * time.Second
	var wg sync.WaitGroup
	took := make([]time.Duration, 8)
	errs := make([]error, 8)
	for i := range took {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := lockproto.Config{Command: "sleep 3600", Init: lockproto.Init{Worker: i, Process: i, System: "none"}, InitTimeout: bound}
			began := time.Now()
			p, err := lockproto.Start(context.Background(), cfg)
			took[i], errs[i] = time.Since(began), err
			if err == nil {
				p.Kill()
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, lockproto.ErrProtocol) || !strings.Contains(err.Error(), "no init_ok within "+bound.String()) {
			t.Errorf("client %d: %v: want a protocol error, no init_ok within %v", i, err, bound)
		}
		if took[i] < bound || took[i] > bound+hangBound {
			t.Errorf("client %d refused after %v: want after its init bound %v and within %v more", i, took[i], bound, hangBound)
		}
	}
	t.Logf("init bound %v beside 2 CPU hogs, 8 clients at once: refused after %v", bound, took)
}

// TestCallStallUnderLoad starts a client that answers init and then stalls
// on its first request, beside two CPU hogs: the call ends with no reply
// (an unknown outcome, not a protocol error) once its deadline has
// passed, well within the hang bound.
func TestCallStallUnderLoad(t *testing.T) {
	cpuHogs(t, 2)
	client := `read l; echo '{"type":"init_ok","now_ms":0,"wall_ms":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `,"client":"sh"}'; read r; sleep 3600`
	p, err := lockproto.Start(context.Background(), lockproto.Config{Command: client, Init: lockproto.Init{System: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	const deadline = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	began := time.Now()
	_, err = p.Call(ctx, lockproto.Request{Type: lockproto.TypeAcquire, Key: "k", TTLMS: 1000}, lockproto.Hooks{})
	took := time.Since(began)
	if !errors.Is(err, lockproto.ErrNoReply) || errors.Is(err, lockproto.ErrProtocol) {
		t.Errorf("call: %v: want no reply within the op's timeout", err)
	}
	if took < deadline || took > deadline+hangBound {
		t.Errorf("the call ended after %v: want after its deadline %v and within %v more", took, deadline, hangBound)
	}
	t.Logf("call deadline %v beside 2 CPU hogs: ended after %v", deadline, took)
}

// TestKillDoesNotWaitForStrays starts a client that leaves a descendant in
// a session of its own holding its standard error open, and that never
// answers init: its refusal kills the client's group, and Start returns
// within KillWait of that, although the stray keeps the pipe open for ten
// minutes (it is killed when the test ends).
func TestKillDoesNotWaitForStrays(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "stray.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	const bound = 500 * time.Millisecond
	cfg := lockproto.Config{Command: "setsid sleep 600 & echo $! > " + pidFile + "; read l; sleep 600", Init: lockproto.Init{System: "none"}, InitTimeout: bound}
	began := time.Now()
	p, err := lockproto.Start(context.Background(), cfg)
	took := time.Since(began)
	if err == nil {
		p.Kill()
		t.Fatal("a client that never answered init started")
	}
	if _, serr := os.Stat(pidFile); serr != nil {
		t.Fatalf("the stray was not started: %v", serr)
	}
	if took > bound+lockproto.KillWait+hangBound {
		t.Errorf("Start returned after %v: want within its init bound %v, KillWait %v and %v more", took, bound, lockproto.KillWait, hangBound)
	}
	t.Logf("refused after %v (init bound %v, KillWait %v)", took, bound, lockproto.KillWait)
}
