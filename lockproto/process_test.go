package lockproto_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
	"github.com/jepsen-lite/jepsen-lite/lockproto"
)

// startRedis starts one real redis-server for the test and returns its
// address.
func startRedis(tb testing.TB) string {
	tb.Helper()
	net, err := cluster.NewNetwork()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { net.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := local.Start(ctx, cluster.Spec{System: cluster.Redis, Nodes: 1}, net)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c.Nodes()[0].Addr
}

// respLock returns the command of the plain-socket Redis lock client in
// testdata with args: "--break malformed@2" breaks the protocol at its
// second request, "--wrong until-wall" is wrong in one way throughout.
func respLock(tb testing.TB, args string) string {
	tb.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		tb.Fatal("python3 is needed to run the test clients: ", err)
	}
	abs, err := filepath.Abs("testdata/resp_lock.py")
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSpace(py + " " + abs + " " + args)
}

func config(command, addr string) lockproto.Config {
	return lockproto.Config{
		Command: command,
		Init:    lockproto.Init{System: "redis", Endpoints: []lockproto.Endpoint{{Name: "n1", Role: "primary", Addr: addr}}},
	}
}

func call(t *testing.T, p *lockproto.Process, req lockproto.Request, timeout time.Duration) (lockproto.Reply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Call(ctx, req, lockproto.Hooks{})
}

// TestBrokenClients starts a client that breaks the protocol at its second
// request in each way the protocol names, against a real Redis: the first
// request is answered, and the second gives the documented outcome.
func TestBrokenClients(t *testing.T) {
	addr := startRedis(t)
	cases := []struct {
		name, brk string
		protocol  bool   // a protocol error (else an unknown outcome)
		want      string // in the error
	}{
		{"malformed", "malformed@2", true, `stdout line 3: not a JSON object: "acquired k"`},
		{"exits", "exit@2", true, "exited: exit status 3"},
		{"wrong id", "wrong-id@2", true, "reply has id 102, but the request in flight is acquire id 2"},
		{"hangs", "hang@2", false, "no reply within the op's timeout"},
		{"garbage then hangs", "garbage-hang@2", true, `stdout line 3: no reply to acquire id 2 within the op's timeout, only part of a line without its newline: "acquired k"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := lockproto.Start(context.Background(), config(respLock(t, "--break "+tc.brk), addr))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Kill)
			rep, err := call(t, p, lockproto.Request{Type: lockproto.TypeAcquire, Key: "k-" + tc.brk, TTLMS: 5000}, 5*time.Second)
			if err != nil || rep.Type != lockproto.TypeOK {
				t.Fatalf("first acquire: %+v, %v", rep, err)
			}
			_, err = call(t, p, lockproto.Request{Type: lockproto.TypeAcquire, Key: "k", TTLMS: 5000}, time.Second)
			if err == nil {
				t.Fatal("second request: no error")
			}
			if got := errors.Is(err, lockproto.ErrProtocol); got != tc.protocol {
				t.Errorf("protocol error %v, want %v: %v", got, tc.protocol, err)
			}
			if !tc.protocol && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a late reply is not a deadline: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if tc.protocol {
				// Every later call gets the same error.
				_, again := call(t, p, lockproto.Request{Type: lockproto.TypeRelease, Key: "k"}, time.Second)
				if again == nil || again.Error() != err.Error() {
					t.Errorf("a later call: %v, want %v", again, err)
				}
			}
		})
	}
}

// TestInitFailures checks clients that fail before their first request.
func TestInitFailures(t *testing.T) {
	cases := []struct {
		name, command string
		want          string
	}{
		{"never answers", "sleep 30", "no init_ok within 500ms"},
		{"exits", "exit 4", "exit status 4"},
		{"answers nonsense", `read l; echo '{"type":"ok","id":1}'`, `the answer to init is "ok", want "init_ok"`},
		{"no wall clock", `read l; echo '{"type":"init_ok","now_ms":1,"client":"x"}'`, `init_ok has no "wall_ms"`},
		{"unknown ability", `read l; echo '{"type":"init_ok","now_ms":1,"wall_ms":1,"client":"x","abilities":["fly"]}'`, `unknown ability "fly"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(tc.command, "127.0.0.1:1")
			cfg.InitTimeout = 500 * time.Millisecond
			p, err := lockproto.Start(context.Background(), cfg)
			if err == nil {
				p.Kill()
				t.Fatal("no error")
			}
			if !errors.Is(err, lockproto.ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want a protocol error saying %q", err, tc.want)
			}
		})
	}
}

// TestStopStopsTheProcess checks that Stop stops the client's process (its
// state in /proc is T) and Continue continues it.
func TestStopStopsTheProcess(t *testing.T) {
	addr := startRedis(t)
	p, err := lockproto.Start(context.Background(), config(respLock(t, ""), addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	state := func() string {
		b, err := os.ReadFile("/proc/" + itoa(p.PID()) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		// pid (comm) state ...
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		return f[0]
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	// A signal is delivered on its own time: wait for it.
	for i := 0; state() != "T"; i++ {
		if i == 200 {
			t.Fatalf("stopped process in state %s after 2s, want T", state())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Continue(); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, p, lockproto.Request{Type: lockproto.TypeAcquire, Key: "k", TTLMS: 1000}, 5*time.Second); err != nil {
		t.Errorf("acquire after the pause: %v", err)
	}
}

// TestConformCatchesBrokenClients runs the conformance checks on a good
// client and on one that is wrong in each way protocol-test must catch: the
// good one passes every check; each wrong one fails, and the check that
// fails is the one that names its fault.
func TestConformCatchesBrokenClients(t *testing.T) {
	addr := startRedis(t)
	cases := []struct {
		name, args string
		fails      string // the name of a check that must fail; "" passes every check
	}{
		{"well behaved", "", ""},
		{"malformed", "--break malformed@1", "acquire: a free lock is granted"},
		{"exits", "--break exit@2", "release: the holder releases"},
		{"hangs", "--break hang@1", "acquire: a free lock is granted"},
		{"wrong id", "--break wrong-id@1", "acquire: a free lock is granted"},
		{"garbage then hangs", "--break garbage-hang@1", "acquire: a free lock is granted"},
		{"until from the wall clock", "--wrong until-wall", "grants: every until_ms lies within its call's window"},
		{"lease in seconds", "--wrong lease-seconds", "grants: every until_ms lies within its call's window and every lease_ms"},
		{"after-response claimed, never sent", "--wrong no-handshake", "after-response: every granted acquire sends its handshake"},
		{"owners collide across processes", "--wrong fixed-owner", "owner: the two processes' grants have owners of their own"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checks := lockproto.Conform(context.Background(), lockproto.ConformConfig{Config: config(respLock(t, tc.args), addr), TTL: 3 * time.Second, Key: "conform-" + tc.name})
			var failed, report []string
			for _, c := range checks {
				mark := "ok  "
				if !c.Passed {
					failed = append(failed, c.Name)
					mark = "FAIL"
				}
				report = append(report, mark+" "+c.Name+": "+c.Detail)
			}
			switch {
			case len(checks) < 2:
				t.Errorf("only %d checks ran:\n%s", len(checks), strings.Join(report, "\n"))
			case tc.fails == "" && len(failed) > 0:
				t.Errorf("checks failed: %q:\n%s", failed, strings.Join(report, "\n"))
			case tc.fails != "" && !slices.ContainsFunc(failed, func(n string) bool { return strings.HasPrefix(n, tc.fails) }):
				t.Errorf("no failed check named %q (failed: %q):\n%s", tc.fails, failed, strings.Join(report, "\n"))
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestInCallPause checks the in-call hook: it runs right after the request
// is written and again when a pause is armed while the reply is awaited,
// and the time it takes moves the call's deadline on (a paused client is
// paused with its caller): a reply that comes 2 s into a call with a 1.2 s
// deadline and a 2.5 s pause armed at 0.8 s is on time.
func TestInCallPause(t *testing.T) {
	client := `read l; echo '{"type":"init_ok","now_ms":0,"wall_ms":` + strconv.FormatInt(time.Now().UnixMilli(), 10) + `,"client":"sh"}'; read r; sleep 2; echo '{"type":"ok","id":1,"owner":"o"}'; read eof`
	p, err := lockproto.Start(context.Background(), lockproto.Config{Command: client, Init: lockproto.Init{System: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	armed := make(chan struct{}, 1)
	var wasArmed atomic.Bool
	var seen []bool // whether the pause had been armed, at each run of the hook
	hooks := lockproto.Hooks{Armed: armed, InCall: func() {
		seen = append(seen, wasArmed.Load())
		if len(seen) == 2 {
			time.Sleep(2500 * time.Millisecond)
		}
	}}
	time.AfterFunc(800*time.Millisecond, func() { wasArmed.Store(true); armed <- struct{}{} })
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	rep, err := p.Call(ctx, lockproto.Request{Type: lockproto.TypeAcquire, Key: "k", TTLMS: 1000}, hooks)
	if err != nil || rep.Type != lockproto.TypeOK {
		t.Fatalf("reply %+v, %v: want ok, the deadline moved on by the pause", rep, err)
	}
	if len(seen) != 2 || seen[0] || !seen[1] {
		t.Errorf("in-call hook ran %d times (armed before each: %v): want right after the write and once more when armed", len(seen), seen)
	}
}
