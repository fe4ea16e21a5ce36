//go:build !sshhosts

package runner_test

import (
	"testing"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// sshAgreeBackend fails the test: the ssh backend's hosts are made only in
// a build with the tag sshhosts (make test-ssh).
func sshAgreeBackend(t *testing.T) cluster.Backend {
	t.Helper()
	t.Fatal("-agree-backends ssh needs the build tag sshhosts (make test-ssh)")
	return cluster.Backend{}
}
