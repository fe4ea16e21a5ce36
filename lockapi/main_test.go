package lockapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// testLock is the lock this test binary serves when started as a lock's
// command.
var testLock = Lock{Name: "mem lock's", Factory: func(context.Context, Target) (Locker, error) {
	return &memLock{held: map[string]string{}}, nil
}}

func TestMain(m *testing.M) {
	if code, served := Main(testLock); served {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestCommand starts the lock's command the way the harness does (sh -c,
// in a directory of its own) and requires it to serve the lock: init_ok,
// then exit 0 at the end of input; and a name the program does not serve
// to exit 2 with the reason on standard error.
func TestCommand(t *testing.T) {
	tests := []struct {
		name   string
		lock   Lock
		client string // init_ok's client; "" when it must not serve
		code   int
	}{
		{"the lock named serves", testLock, "mem lock's (Go lockapi, ", 0},
		{"a lock the program does not serve", Lock{Name: "other", Factory: testLock.Factory}, "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmdline, err := tt.lock.Command()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(cmdline, ` '-test.run=^$'`) {
				t.Errorf("a test binary's command %q does not run it without tests", cmdline)
			}
			cmd := exec.Command("sh", "-c", cmdline)
			cmd.Dir = t.TempDir()
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			io.WriteString(in, initLine+"\n")
			checkInitOK(t, bufio.NewScanner(out), tt.client)
			in.Close()
			err = waitExit(t, cmd)
			var exit *exec.ExitError
			got := 0
			if errors.As(err, &exit) {
				got = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", got, tt.code, stderr.String())
			}
			if tt.code != 0 && !strings.Contains(stderr.String(), `names no lock this program serves (it serves "mem lock's")`) {
				t.Errorf("stderr %q does not say why", stderr.String())
			}
		})
	}
}

// checkInitOK reads the client's first line: init_ok with a client name
// starting with client, or nothing when client is "".
func checkInitOK(t *testing.T, out *bufio.Scanner, client string) {
	t.Helper()
	if !out.Scan() {
		if client != "" {
			t.Fatalf("no init_ok: %v", out.Err())
		}
		return
	}
	var ok initOK
	if err := json.Unmarshal(out.Bytes(), &ok); err != nil || ok.Type != "init_ok" || client == "" || !strings.HasPrefix(ok.Client, client) {
		t.Fatalf("the client wrote %q (%v), want init_ok from %q", out.Text(), err, client)
	}
}

// waitExit waits up to 10 s for cmd to exit.
func waitExit(t *testing.T, cmd *exec.Cmd) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the lock's command did not exit at the end of its input")
		return nil
	}
}
