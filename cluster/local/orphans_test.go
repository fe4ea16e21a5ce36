package local

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// helperEnv makes the test binary act as a harness that starts a cluster,
// reports it on stdout and waits to be killed.
const helperEnv = "JEPSEN_LITE_LOCAL_HELPER"

type helperReport struct {
	Root string
	Pids map[string]int
}

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		runHelper()
		return
	}
	os.Exit(m.Run())
}

// runHelper starts two Redis masters and blocks; it never closes them.
func runHelper() {
	nw, err := cluster.NewNetwork()
	if err != nil {
		os.Exit(3)
	}
	c, err := Start(context.Background(), cluster.Spec{System: cluster.Redis, Nodes: 2}, nw)
	if err != nil {
		os.Stderr.WriteString(err.Error())
		os.Exit(3)
	}
	_ = json.NewEncoder(os.Stdout).Encode(helperReport{Root: c.root, Pids: c.Pids()})
	select {}
}

func TestNodesDieWithTheHarness(t *testing.T) {
	requireBinaries(t, "redis-server")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var rep helperReport
	if err := json.NewDecoder(bufio.NewReader(out)).Decode(&rep); err != nil {
		t.Fatalf("helper harness: %v", err)
	}
	// The killed harness cannot remove its temp dir; the test does, and
	// kills any node that outlived it (identified by its working dir).
	t.Cleanup(func() {
		for _, pid := range rep.Pids {
			if cwd, err := os.Readlink("/proc/" + itoa(pid) + "/cwd"); err == nil && strings.HasPrefix(cwd, rep.Root+"/") {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
		os.RemoveAll(rep.Root)
	})
	if len(rep.Pids) != 2 {
		t.Fatalf("helper reported pids %v", rep.Pids)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for name, pid := range rep.Pids {
		for syscall.Kill(pid, 0) == nil {
			// A zombie is gone for our purposes only once reaped by init;
			// check the state in /proc.
			if st, err := os.ReadFile("/proc/" + itoa(pid) + "/stat"); err == nil && zombie(st) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s (pid %d) outlived its harness", name, pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.ESRCH) {
			t.Errorf("kill 0 %d: %v", pid, err)
		}
	}
}

// zombie reports whether a /proc/<pid>/stat line is of a dead, unreaped process.
func zombie(stat []byte) bool {
	for i := len(stat) - 1; i >= 0; i-- {
		if stat[i] == ')' {
			return i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
		}
	}
	return false
}
