package ssh

// batch.go holds the batching of a host's short commands: the commands
// that arrive while one runs are run together, in one command of a kept
// open shell, so that the links of one fault, whose rules linknet has
// changed all at once, take one or two round trips on each host instead
// of one per link and direction.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// batchMarker begins the line, after each command of a batch, that gives
// the command's number and exit status.
const batchMarker = "jepsen-lite-batch-status"

// batch is a host's queue of commands waiting for the one that runs.
type batch struct {
	mu      sync.Mutex
	queue   []*batched
	running bool // a caller runs the queue (runBatched)
}

// batched is one command of a batch and, once done is closed, its error.
type batched struct {
	cmd  string
	err  error
	done chan struct{}
}

// runBatched runs cmd on the host and returns its error as run does, but
// together with every other runBatched call that arrives meanwhile: the
// first caller runs the queue, batch after batch, until it is empty,
// within its ctx; the others wait for their command's end. A command that
// exits non-zero fails alone, the others of its batch run on.
func (c *conn) runBatched(ctx context.Context, cmd string) error {
	b := &c.batch
	me := &batched{cmd: cmd, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, me)
	if b.running {
		b.mu.Unlock()
		<-me.done
		return me.err
	}
	b.running = true
	for len(b.queue) > 0 {
		q := b.queue
		b.queue = nil
		b.mu.Unlock()
		c.runQueue(ctx, q)
		b.mu.Lock()
	}
	b.running = false
	b.mu.Unlock()
	return me.err
}

// runQueue runs the commands of q as one shell command, each followed by
// a line of batchMarker, its number and its exit status, sets each one's
// error from its status and output, and closes their done.
func (c *conn) runQueue(ctx context.Context, q []*batched) {
	var script strings.Builder
	for i, b := range q {
		fmt.Fprintf(&script, "{ %s ; } 2>&1; echo %s %d $?\n", b.cmd, batchMarker, i)
	}
	out, err := c.run(ctx, script.String(), nil)
	statuses, outs := batchResults(out, len(q))
	for i, b := range q {
		switch {
		case err != nil && statuses[i] < 0:
			b.err = err
		case statuses[i] != 0:
			b.err = fmt.Errorf("ssh: %s: %s: exit status %d: %s", c.host.Name, firstWord(b.cmd), statuses[i], strings.TrimSpace(outs[i]))
		}
		close(b.done)
	}
}

// batchResults reads the output of a batch of n commands: each command's
// exit status (-1 when its marker line is missing: it never ended) and
// output.
func batchResults(out string, n int) (statuses []int, outs []string) {
	statuses, outs = make([]int, n), make([]string, n)
	for i := range statuses {
		statuses[i] = -1
	}
	var pending strings.Builder
	for _, line := range strings.SplitAfter(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == batchMarker {
			i, err1 := strconv.Atoi(f[1])
			status, err2 := strconv.Atoi(f[2])
			if err1 == nil && err2 == nil && i >= 0 && i < n {
				statuses[i], outs[i] = status, pending.String()
			}
			pending.Reset()
			continue
		}
		pending.WriteString(line)
	}
	return statuses, outs
}
