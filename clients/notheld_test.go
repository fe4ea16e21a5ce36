package clients

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jepsen-lite/jepsen-lite/checker"
)

// TestNotHeldErrorIsTheClientsText checks that checker.NotHeldError, the
// text by which liveness knows a release the service refused as not held,
// is in the text a client records for one, however the algorithm wraps
// ErrNotHeld, and not in the text of a release the algorithm does not
// perform on the server.
func TestNotHeldErrorIsTheClientsText(t *testing.T) {
	for _, err := range []error{ErrNotHeld, fmt.Errorf("clients: zk-lock: release w0: %w", ErrNotHeld)} {
		if !strings.Contains(err.Error(), checker.NotHeldError) {
			t.Errorf("%q does not contain %q", err, checker.NotHeldError)
		}
	}
	if strings.Contains(ErrReleaseNoOp.Error(), checker.NotHeldError) {
		t.Errorf("%q contains %q", ErrReleaseNoOp, checker.NotHeldError)
	}
}
