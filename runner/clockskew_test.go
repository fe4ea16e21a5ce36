package runner_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster/local"
	"github.com/jepsen-lite/jepsen-lite/runner"
)

// TestClockFaultWithoutLibrary runs a scenario whose faults skew node
// clocks where the clock-skew library cannot be had: the run must stop at
// setup with one line that says what is missing and how to provide it,
// rather than run faults that will all fail.
func TestClockFaultWithoutLibrary(t *testing.T) {
	t.Setenv(local.ClockSkewLibraryEnv, "/nonexistent/libclockskew.so")
	sc := load(t, "redsync-clock-jump")
	res, err := runner.Run(context.Background(), sc, runner.WithStore(t.TempDir()), runner.WithSeed(1), runner.WithTimeLimit(2*time.Second))
	if !errors.Is(err, runner.ErrSetup) {
		t.Fatalf("error %v, want runner.ErrSetup", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "clock-skew library") || !strings.Contains(msg, local.ClockSkewLibraryEnv+"=/nonexistent/libclockskew.so") {
		t.Errorf("error %q, want one line naming the clock-skew library and %s", msg, local.ClockSkewLibraryEnv)
	}
	t.Log(msg)
	if res == nil || res.Results != nil {
		t.Errorf("the run that did not start has results: %+v", res)
	}
}
