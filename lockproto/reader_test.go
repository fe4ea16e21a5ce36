package lockproto_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/lockproto"
)

// startScripted starts testdata/scripted.py, recording its lost notices.
func startScripted(t *testing.T) (*lockproto.Process, func() []string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to run the test clients: ", err)
	}
	abs, err := filepath.Abs("testdata/scripted.py")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lost []string
	cfg := lockproto.Config{Command: py + " " + abs, Init: lockproto.Init{System: "none"}, Lost: func(key, owner string) {
		mu.Lock()
		defer mu.Unlock()
		lost = append(lost, key+"/"+owner)
	}}
	p, err := lockproto.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lost...)
	}
}

func acquire(key string) lockproto.Request {
	return lockproto.Request{Type: lockproto.TypeAcquire, Key: key, TTLMS: 1000}
}

// TestLostNotices checks that a lost notice takes effect whether it comes
// in the middle of a call (before the call returns) or between calls (when
// Poll reads it), and that the calls around it are answered.
func TestLostNotices(t *testing.T) {
	p, lost := startScripted(t)
	if _, err := call(t, p, acquire("lost-during"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := lost(); len(got) != 1 || got[0] != "k/during" {
		t.Fatalf("after a call whose client sent a lost notice: lost %v, want [k/during]", got)
	}
	if _, err := call(t, p, acquire("lost-after"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	// The notice comes 50 ms after the reply; Poll reads what is there
	// and never blocks, so it is polled until it arrives.
	for deadline := time.Now().Add(10 * time.Second); len(lost()) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("no lost notice read by Poll within 10 s; lost %v", lost())
		}
		p.Poll()
		time.Sleep(10 * time.Millisecond)
	}
	if got := lost(); got[1] != "k/after" {
		t.Fatalf("lost %v, want [k/during k/after]", got)
	}
	rep, err := call(t, p, acquire("k2"), 5*time.Second)
	if err != nil || rep.Type != lockproto.TypeOK {
		t.Fatalf("the call after the notices: %+v %v", rep, err)
	}
}

// TestCallWakes checks what cuts a call's wait for its reply short: a
// pause armed in the middle of the call runs the InCall hook before the
// reply comes, a cancelled context ends the call with its error, and the
// call's deadline ends it with ErrNoReply. The client answers "hold:PATH"
// only once PATH exists.
func TestCallWakes(t *testing.T) {
	p, _ := startScripted(t)
	dir := t.TempDir()
	t.Run("armed mid-call", func(t *testing.T) {
		// The first InCall (right after the request) arms a pause; the
		// second (the armed one, mid-call) lets the client answer. Without
		// the second, the call gets no reply.
		release := filepath.Join(dir, "armed")
		armed := make(chan struct{}, 1)
		runs := 0
		hooks := lockproto.Hooks{InCall: func() {
			runs++
			switch runs {
			case 1:
				armed <- struct{}{}
			case 2:
				if err := os.WriteFile(release, nil, 0o600); err != nil {
					t.Error(err)
				}
			}
		}, Armed: armed}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rep, err := p.Call(ctx, acquire("hold:"+release), hooks)
		if err != nil || rep.Type != lockproto.TypeOK {
			t.Fatalf("%+v %v (InCall ran %d times)", rep, err, runs)
		}
		if runs != 2 {
			t.Fatalf("InCall ran %d times, want 2 (after the request, and when armed)", runs)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		rep, err := p.Call(ctx, acquire("hold:"+filepath.Join(dir, "never")), lockproto.Hooks{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %+v %v, want context.Canceled", rep, err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		// The client still holds the cancelled call's request.
		rep, err := call(t, p, acquire("k"), 100*time.Millisecond)
		if !errors.Is(err, lockproto.ErrNoReply) {
			t.Fatalf("got %+v %v, want ErrNoReply", rep, err)
		}
	})
}
