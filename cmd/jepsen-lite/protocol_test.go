package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProtocolTestCommand runs `protocol-test` against a real Redis with
// the plain-socket client of lockproto/testdata, well behaved and wrong in
// each way its checks must catch: the good client exits 0 with its two
// processes on seeds of their own; each wrong one exits 1 and names the
// check it failed.
func TestProtocolTestCommand(t *testing.T) {
	py, script := respLockClient(t)
	cases := []struct {
		name, args string
		code       int
		says       string
	}{
		{"well behaved", "", exitHeld, "protocol-test: every check held"},
		{"until from the wall clock", "--wrong until-wall", exitViolated, "FAIL grants: every until_ms lies within its call's window"},
		{"lease in seconds", "--wrong lease-seconds", exitViolated, "is not a lease of the ttl asked (2s) in ms"},
		{"after-response never sent", "--wrong no-handshake", exitViolated, "FAIL after-response: every granted acquire sends its handshake"},
		{"owners collide", "--wrong fixed-owner", exitViolated, "FAIL owner: the two processes' grants have owners of their own"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			command := strings.TrimSpace(py + " " + script + " " + tc.args)
			code, err := protocolTestCmd(context.Background(), []string{"--system", "redis", "--ttl", "2s", "--lock-command", command}, &out, &errOut)
			if err != nil || code != tc.code || !strings.Contains(out.String(), tc.says) {
				t.Fatalf("exit %d, error %v: want %d saying %q:\n%s%s", code, err, tc.code, tc.says, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), "ok   init: a second process starts: seeds ") {
				t.Errorf("the seeds of the two processes are not shown:\n%s", out.String())
			}
		})
	}
}

// respLockClient is the python3 binary and the absolute path of the
// plain-socket test client of lockproto/testdata (resp_lock.py), which the
// tests of external lock clients run.
func respLockClient(t *testing.T) (py, script string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is needed to run the test clients: ", err)
	}
	script, err = filepath.Abs("../../lockproto/testdata/resp_lock.py")
	if err != nil {
		t.Fatal(err)
	}
	return py, script
}
