package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// TestServerProcessesIgnoresTheScriptsForks runs a node's script on the host
// (its config directory moved to a temp dir, its server a tail that never
// ends) and checks what Kill and Start see of it: the server while it runs,
// and nothing at all while the script waits to be started, although the
// script forks a shell for each of its sleeps. Before serverProcesses told a
// fork of the shell from the server, a sample taken in the instant between a
// fork and its exec found a "server", and Start returned without starting
// the killed node.
func TestServerProcessesIgnoresTheScriptsForks(t *testing.T) {
	dir := t.TempDir()
	n := &node{Node: cluster.Node{Name: "n1"}, server: "tail -f /dev/null"}
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(script(n), confDir, dir))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	servers := func() []int { return serverProcesses(cmd.Process.Pid) }
	waitFor := func(what string, ok func([]int) bool) []int {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			if p := servers(); ok(p) {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("not within 10s: %s (last: %v)", what, servers())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	running := waitFor("the server runs", func(p []int) bool { return len(p) == 1 })
	if comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(running[0]), "comm")); strings.TrimSpace(string(comm)) != "tail" {
		t.Fatalf("server process %d is %q, want tail", running[0], comm)
	}
	if err := syscall.Kill(running[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor("the killed server is gone", func(p []int) bool { return len(p) == 0 })
	// The script now forks a sleep every 10ms, and a sample (a walk of
	// /proc) takes milliseconds: 1000 samples span hundreds of forks, where
	// the old reading was fooled within the first 20.
	for i := range 1000 {
		if p := servers(); len(p) > 0 {
			t.Fatalf("sample %d: the waiting script has server processes %v (%s)", i, p, comms(p))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, startFile), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("the server runs again after the start file", func(p []int) bool { return len(p) == 1 })
}

// comms returns the command names of pids, for a failure's message.
func comms(pids []int) string {
	var out []string
	for _, p := range pids {
		b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "comm"))
		out = append(out, strings.TrimSpace(string(b)))
	}
	return strings.Join(out, ",")
}
