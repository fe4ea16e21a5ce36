package spawn_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/spawn"
)

// TestChildDiesWithItsParent starts a copy of the test binary that starts a
// sleeping child through spawn.Start and prints its pid, then kills the
// copy with SIGKILL: the child is gone after it, killed by its parent-death
// signal, and it was in a process group of its own.
func TestChildDiesWithItsParent(t *testing.T) {
	if os.Getenv("SPAWN_TEST_PARENT") == "1" {
		child := exec.Command("sleep", "600")
		if err := spawn.Start(child); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(child.Process.Pid) + "\n")
		select {}
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithItsParent$")
	parent.Env = append(os.Environ(), "SPAWN_TEST_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	buf := make([]byte, 32)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("the parent printed %q, not a pid", buf[:n])
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Fatalf("the child's process group is %d (%v), want its own, %d", pgid, err, pid)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	// Bounded wait for a hang, not a timing assertion: the signal is sent
	// as the parent exits, and the child is reaped by init soon after.
	for deadline := time.Now().Add(30 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("the child %d outlived its parent by 30s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid names a process that is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	fields := strings.Fields(string(stat))
	return len(fields) > 2 && fields[2] != "Z"
}
