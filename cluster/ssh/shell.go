package ssh

// shell.go holds the shells a connection keeps open on its host, each a
// /bin/sh reading the scripts it runs from its SSH session's input, so
// that a command costs neither a new session nor the user's shell
// start-up files.

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	gossh "golang.org/x/crypto/ssh"
)

// maxIdleShells bounds the shells a connection keeps open between
// commands: as many as commands ran at once on the host, up to it.
const maxIdleShells = 4

// shell is a /bin/sh on the host that reads, from its session's input,
// one command after another, each run by a /bin/sh -c of its own and
// followed by a line of its marker with the command's exit status.
type shell struct {
	session *gossh.Session
	in      io.WriteCloser
	out     *bufio.Reader
	marker  string // begins the line after each command's output
}

// shell returns an idle shell of the connection, or opens one.
func (c *conn) shell(ctx context.Context) (*shell, error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		sh := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return sh, nil
	}
	c.mu.Unlock()
	type opened struct {
		sh  *shell
		err error
	}
	done := make(chan opened, 1)
	go func() {
		sh, err := openShell(c.client)
		done <- opened{sh, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			return nil, fmt.Errorf("ssh: %s: shell: %w", c.host.Name, o.err)
		}
		return o.sh, nil
	case <-ctx.Done():
		go func() {
			if o := <-done; o.sh != nil {
				o.sh.close()
			}
		}()
		return nil, fmt.Errorf("ssh: %s: shell: %w", c.host.Name, ctx.Err())
	}
}

// putShell gives a shell whose command ended back to the connection, which
// closes it when it keeps maxIdleShells already or is closed.
func (c *conn) putShell(sh *shell) {
	c.mu.Lock()
	if !c.closed && len(c.idle) < maxIdleShells {
		c.idle = append(c.idle, sh)
		sh = nil
	}
	c.mu.Unlock()
	if sh != nil {
		sh.close()
	}
}

// openShell opens a session running /bin/sh (through the user's login
// shell, whose start-up files it so reads once) and waits until it reads
// commands; whatever the start-up files wrote is skipped.
func openShell(client *gossh.Client) (*shell, error) {
	s, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	sh := &shell{session: s}
	in, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	out, err := s.StdoutPipe()
	if err != nil {
		s.Close()
		return nil, err
	}
	sh.in, sh.out = in, bufio.NewReader(out)
	var b [16]byte
	_, _ = rand.Read(b[:])
	sh.marker = "jepsen-lite-" + hex.EncodeToString(b[:]) + " "
	if err := s.Start("exec /bin/sh"); err != nil {
		s.Close()
		return nil, err
	}
	if _, _, err := sh.run("true", nil); err != nil {
		s.Close()
		return nil, err
	}
	return sh, nil
}

// run runs cmd with stdin as its input (none when nil) and returns its
// output, stdout and stderr together, and its exit status. An error means
// the shell is lost.
func (sh *shell) run(cmd string, stdin io.Reader) (string, int, error) {
	var script strings.Builder
	if stdin == nil {
		script.WriteString("/bin/sh -c " + quote(cmd) + " < /dev/null 2>&1")
	} else {
		// The input goes through the shell's own input, as base64 in a
		// here-document ended by the marker's line.
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", 0, fmt.Errorf("input: %w", err)
		}
		end := strings.TrimSpace(sh.marker) + "-input"
		script.WriteString("base64 -d <<'" + end + "' | /bin/sh -c " + quote(cmd) + " 2>&1\n")
		enc := base64.StdEncoding.EncodeToString(b)
		for len(enc) > 76 {
			script.WriteString(enc[:76] + "\n")
			enc = enc[76:]
		}
		script.WriteString(enc + "\n" + end)
	}
	script.WriteString("\nprintf '\\n%s%d\\n' '" + sh.marker + "' \"$?\"\n")
	if _, err := io.WriteString(sh.in, script.String()); err != nil {
		return "", 0, err
	}
	var out strings.Builder
	for {
		line, err := sh.out.ReadString('\n')
		if err != nil {
			return "", 0, err
		}
		if rest, ok := strings.CutPrefix(line, sh.marker); ok {
			status, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil {
				return "", 0, fmt.Errorf("exit status %q: %w", rest, err)
			}
			// The printf began with a newline of its own.
			return strings.TrimSuffix(out.String(), "\n"), status, nil
		}
		out.WriteString(line)
	}
}

// close ends the shell's session.
func (sh *shell) close() { sh.session.Close() }
