// Package spawn starts the harness's child processes so that they die with
// it: each gets SIGKILL (Pdeathsig) when the harness dies, however it dies.
//
// Linux delivers Pdeathsig when the thread that forked the child exits, not
// when the process does, and the Go runtime may end threads, so every child
// is forked from one goroutine locked to its thread for the life of the
// process.
package spawn

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// request asks the spawner thread to start a command.
type request struct {
	cmd  *exec.Cmd
	done chan error
}

// spawner returns the channel of the one goroutine that starts every child.
var spawner = sync.OnceValue(func() chan request {
	ch := make(chan request)
	go func() {
		runtime.LockOSThread()
		for req := range ch {
			req.done <- req.cmd.Start()
		}
	}()
	return ch
})

// Start starts cmd from the spawner thread, in a process group of its own,
// with SIGKILL as its parent-death signal; attributes already set on cmd
// (credentials) are kept.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	spawner() <- request{cmd: cmd, done: done}
	return <-done
}
