package ownversion

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pinned is the go-redis version the user's module pins: older than the
// harness's own (go.mod), which a shared module graph would select.
const pinned = "v9.17.3"

// TestModuleKeepsItsVersions does what docs/own-lock.md tells a user to
// do: a module that requires lockapi (replaced by the checkout's) and its
// own go-redis. go mod tidy must leave its pin, the build must select it,
// and its tests must pass: protocol-test of its lock's client, a correct
// lock found valid and its run replayed, a check-then-set lock caught with
// a double-hold and its run shrunk, each run naming go-redis 9.17.3 as its
// client's library, and a hunt from Go (lockapi.Hunt) of the broken lock
// on the baseline of its declared system that catches its double-hold.
// Nothing is downloaded: make deps fills the module cache (GOPROXY=off).
func TestModuleKeepsItsVersions(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the user's module: %v", err)
	}
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod := copyModule(t, filepath.Join("testdata", "redislock"), filepath.Join(checkout, "lockapi"))
	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goTool, args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in the user's module: %v\n%s\n(make deps fills the module cache with the module's requirements)", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gocmd("mod", "tidy")
	gomod, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		ok   bool
	}{
		{"go.mod keeps the pin", strings.Contains(string(gomod), "github.com/redis/go-redis/v9 "+pinned+"\n")},
		{"go.mod requires no harness", !strings.Contains(string(gomod), "github.com/jepsen-lite/jepsen-lite ")},
		{"the build selects the pin", gocmd("list", "-m", "github.com/redis/go-redis/v9") == "github.com/redis/go-redis/v9 "+pinned+"\n"},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: go.mod after go mod tidy:\n%s", c.name, gomod)
		}
	}
	gocmd("vet", "./...")
	out := gocmd("test", "-count=1", "-v", "./...")
	for _, test := range []string{"TestProtocol", "TestLocks/SET_NX_PX_holds", "TestLocks/check-then-set_is_caught", "TestHunt"} {
		if !strings.Contains(out, "--- PASS: "+test+" ") {
			t.Errorf("the user's module's %s did not pass:\n%s", test, out)
		}
	}
}

// copyModule copies the module in dir into a temporary directory, with its
// replace of lockapi pointed at lockapi, and returns the copy's directory.
func copyModule(t *testing.T, dir, lockapi string) string {
	t.Helper()
	mod := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "go.mod" {
			b = []byte(strings.Replace(string(b), "=> ../../../../lockapi", "=> "+lockapi, 1))
		}
		if err := os.WriteFile(filepath.Join(mod, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return mod
}
