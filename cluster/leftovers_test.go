package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTempDirPid reads the pid out of the names of a harness's temp dirs,
// and nothing out of other names.
func TestTempDirPid(t *testing.T) {
	tests := []struct {
		name string
		pid  int
		ok   bool
	}{
		{"jepsen-lite-1234-redis-567", 1234, true},
		{"jepsen-lite-1234-clocks-", 1234, true},
		{"jepsen-lite-redis-567", 0, false},
		{"jepsen-lite-cmd-test-89", 0, false},
		{"jepsen-lite-0-redis-1", 0, false},
		{"jepsen-lite-1234", 0, false},
		{"other-1234-redis-1", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid, ok := tempDirPid(tt.name)
			if pid != tt.pid || ok != tt.ok {
				t.Errorf("tempDirPid(%q) = %d, %v; want %d, %v", tt.name, pid, ok, tt.pid, tt.ok)
			}
		})
	}
}

// TestDeleteStaleTempDirs removes the temp dirs of a harness whose process
// is gone, with what they hold, and keeps this harness's, a live one's and
// every dir not named by TempDir.
func TestDeleteStaleTempDirs(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	mine, err := TempDir("clocks")
	if err != nil {
		t.Fatal(err)
	}
	mkdir := func(name string) string {
		dir := filepath.Join(os.TempDir(), name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	dead := mkdir(fmt.Sprintf("jepsen-lite-%d-redis-1", gone.Process.Pid))
	keep := []string{mine, mkdir(fmt.Sprintf("jepsen-lite-%d-redis-2", live.Process.Pid)), mkdir("jepsen-lite-redis-3"), mkdir("jepsen-lite-cmd-test-4")}
	if err := DeleteStaleTempDirs(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the temp dir of a dead harness is still there: %v", err)
	}
	for _, dir := range keep {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", strings.TrimPrefix(dir, os.TempDir()), err)
		}
	}
}
