package ownlock

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOwnModule does what docs/own-lock.md tells a user to do: a module of
// its own, outside the checkout, that requires the harness and replaces it
// with the checkout. It must build and vet offline from the module cache
// the harness's own build filled, run a catalog scenario against its own
// lock under its lock's name, find the clock-skew library through the
// replace, and, built so that it cannot find the library, stop a scenario
// with clock faults at setup with one line saying how to provide it.
func TestOwnModule(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build a module of one's own: %v", err)
	}
	checkout, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod := writeOwnModule(t, checkout)
	gocmd := func(args ...string) {
		t.Helper()
		cmd := exec.Command(goTool, args...)
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the module of one's own: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	gocmd("build", "-o", "mylock", ".")
	gocmd("vet", "./...")
	gocmd("build", "-trimpath", "-o", "mylock-trimmed", ".")

	tests := []ownRunCase{
		{"a catalog scenario against its own lock", "mylock", "redis-single-baseline", "1s", "lock set-nx verdict valid failed-faults 0", nil},
		{"clock faults find the library through the replace", "mylock", "redsync-clock-jump", "1500ms", "lock set-nx verdict ", nil},
		{"clock faults without the library stop at setup", "mylock-trimmed", "redsync-clock-jump", "1500ms", "",
			[]string{"setup failed", "libclockskew.so not found", "JEPSEN_LITE_CLOCKSKEW=/path/libclockskew.so", "make build"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkOwnRun(t, mod, tt) })
	}
}

// writeOwnModule writes the module of docs/own-lock.md in a temporary
// directory and returns it: the harness required and replaced by the
// checkout (and its module lockapi by the checkout's lockapi directory: a
// replace in the harness's go.mod does not reach the module that requires
// it), and the harness's own requirements and sums, so that the module
// graph is the harness's (nothing else to look up), and
// testdata/mymodule/main.go.
func writeOwnModule(t *testing.T, checkout string) string {
	t.Helper()
	mod := t.TempDir()
	gomod, err := os.ReadFile(filepath.Join(checkout, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	requires := regexp.MustCompile(`(?s)\nrequire \(.*?\n\)\n`).Find(gomod)
	if requires == nil {
		t.Fatal("the checkout's go.mod has no require block")
	}
	goVersion := regexp.MustCompile(`(?m)^go .*$`).Find(gomod)
	ours := "module example.com/mylock\n\n" + string(goVersion) + "\n\n" +
		"require github.com/jepsen-lite/jepsen-lite v0.0.0\n\n" +
		"replace github.com/jepsen-lite/jepsen-lite => " + checkout + "\n" +
		"replace github.com/jepsen-lite/jepsen-lite/lockapi => " + filepath.Join(checkout, "lockapi") + "\n" + string(requires)
	write(t, filepath.Join(mod, "go.mod"), []byte(ours))
	gosum, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(mod, "go.sum"), gosum)
	main, err := os.ReadFile(filepath.Join("testdata", "mymodule", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(mod, "main.go"), main)
	return mod
}

// ownRunCase is a run of a binary of the module of one's own and what it
// must print.
type ownRunCase struct {
	name     string
	bin      string
	scenario string
	limit    string
	stdout   string // what the run prints; "" when it must not start
	stderr   []string
}

// checkOwnRun runs tt's binary of the module in mod on its scenario, with
// JEPSEN_LITE_CLOCKSKEW emptied, and checks what it prints: a run that must
// not start fails with one line saying each of tt.stderr.
func checkOwnRun(t *testing.T, mod string, tt ownRunCase) {
	t.Helper()
	cmd := exec.Command(filepath.Join(mod, tt.bin), "-store", t.TempDir(), "-time-limit", tt.limit, tt.scenario)
	cmd.Dir = mod
	cmd.Env = os.Environ()
	for i, kv := range cmd.Env {
		if strings.HasPrefix(kv, "JEPSEN_LITE_CLOCKSKEW=") {
			cmd.Env[i] = "JEPSEN_LITE_CLOCKSKEW="
		}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	stdout, stderr := out.String(), errOut.String()
	if tt.stdout == "" {
		if err == nil {
			t.Fatalf("the run started: %s", stdout)
		}
		msg := strings.TrimSpace(stderr)
		if strings.Contains(msg, "\n") {
			t.Errorf("the error takes more than one line: %q", msg)
		}
		for _, want := range tt.stderr {
			if !strings.Contains(msg, want) {
				t.Errorf("the error %q does not say %q", msg, want)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("%v: %s", err, stderr)
	}
	if !strings.HasPrefix(stdout, tt.stdout) {
		t.Errorf("printed %q, want %q", stdout, tt.stdout)
	}
	if strings.Contains(tt.scenario, "clock") && !strings.HasSuffix(strings.TrimSpace(stdout), " failed-faults 0") {
		t.Errorf("a fault failed: %q", stdout)
	}
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
