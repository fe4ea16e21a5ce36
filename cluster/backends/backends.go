// Package backends owns the list of the backends the harness can run a
// cluster with: a new backend is declared here, once, and every command
// that takes --backend reads All.
package backends

import (
	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/docker"
	"github.com/jepsen-lite/jepsen-lite/cluster/local"
)

// All returns every backend, the default (local) first.
func All() []cluster.Backend {
	return []cluster.Backend{local.Backend, docker.Backend}
}
