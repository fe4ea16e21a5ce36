package ssh

// conn.go holds the SSH connection to one host: dialling it with the
// inventory's key or agent, verified against its known_hosts, and running
// one command on it with a bound, in a shell it keeps open (shell.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// dialTimeout bounds the connection and handshake to a host.
const dialTimeout = 10 * time.Second

// conn is an SSH connection to one host.
type conn struct {
	host   Host
	client *gossh.Client
	agent  net.Conn // the agent's socket, when the host's key is the agent's

	mu     sync.Mutex
	idle   []*shell // shells between commands (conn.shell)
	closed bool

	batch batch // the commands that wait for one to end (runBatched)
}

// dial connects to the host and authenticates, within dialTimeout and
// ctx.
func dial(ctx context.Context, h Host) (*conn, error) {
	hostKeys, err := knownhosts.New(h.KnownHosts)
	if err != nil {
		return nil, fmt.Errorf("ssh: %s: known hosts: %w", h.Name, err)
	}
	c := &conn{host: h}
	auth, err := c.auth()
	if err != nil {
		return nil, err
	}
	cfg := &gossh.ClientConfig{User: h.User, Auth: []gossh.AuthMethod{auth}, HostKeyCallback: hostKeys, Timeout: dialTimeout}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	raw, err := (&net.Dialer{}).DialContext(ctx, "tcp", h.sshAddr())
	if err != nil {
		c.closeAgent()
		return nil, fmt.Errorf("ssh: %s: %w", h.Name, err)
	}
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	sc, chans, reqs, err := gossh.NewClientConn(raw, h.sshAddr(), cfg)
	if !stop() || err != nil {
		raw.Close()
		c.closeAgent()
		return nil, fmt.Errorf("ssh: %s: %w", h.Name, errors.Join(err, ctx.Err()))
	}
	c.client = gossh.NewClient(sc, chans, reqs)
	return c, nil
}

// auth returns the host's way to authenticate: its key file, or the agent.
func (c *conn) auth() (gossh.AuthMethod, error) {
	if c.host.Key != "" {
		b, err := os.ReadFile(c.host.Key)
		if err != nil {
			return nil, fmt.Errorf("ssh: %s: key: %w", c.host.Name, err)
		}
		signer, err := gossh.ParsePrivateKey(b)
		if err != nil {
			return nil, fmt.Errorf("ssh: %s: key %s: %w", c.host.Name, c.host.Key, err)
		}
		return gossh.PublicKeys(signer), nil
	}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, fmt.Errorf("ssh: %s: no key file and no agent ($SSH_AUTH_SOCK is empty)", c.host.Name)
	}
	a, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("ssh: %s: agent: %w", c.host.Name, err)
	}
	c.agent = a
	return gossh.PublicKeysCallback(agent.NewClient(a).Signers), nil
}

// closeAgent closes the agent's socket, if any.
func (c *conn) closeAgent() {
	if c.agent != nil {
		c.agent.Close()
	}
}

// close closes the connection and its shells.
func (c *conn) close() {
	c.mu.Lock()
	idle := c.idle
	c.idle, c.closed = nil, true
	c.mu.Unlock()
	for _, sh := range idle {
		sh.close()
	}
	if c.client != nil {
		c.client.Close()
	}
	c.closeAgent()
}

// run runs the shell command on the host with stdin as its input (none
// when nil) and returns its output, stdout and stderr together. It runs in
// /bin/sh, started by a shell of the connection's (conn.shell) that is
// reused from one command to the next: a new SSH session costs the user's
// shell start-up files (a root .bashrc took 0.4 s), which a fault must not
// wait for. It returns when the command ends or when ctx does; then the
// shell's session is closed, which ends a command that reads its input or
// writes its output.
func (c *conn) run(ctx context.Context, cmd string, stdin io.Reader) (string, error) {
	sh, err := c.shell(ctx)
	if err != nil {
		return "", err
	}
	type result struct {
		out    string
		status int
		err    error
	}
	done := make(chan result, 1)
	go func() {
		out, status, err := sh.run(cmd, stdin)
		done <- result{out, status, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		sh.close()
		return "", fmt.Errorf("ssh: %s: %s: %w", c.host.Name, firstWord(cmd), ctx.Err())
	}
	if r.err != nil {
		sh.close()
		return "", fmt.Errorf("ssh: %s: %s: %w", c.host.Name, firstWord(cmd), r.err)
	}
	c.putShell(sh)
	if r.status != 0 {
		return r.out, fmt.Errorf("ssh: %s: %s: exit status %d: %s", c.host.Name, firstWord(cmd), r.status, strings.TrimSpace(r.out))
	}
	return r.out, nil
}

// firstWord returns the first word of a command, to name it in errors.
func firstWord(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return cmd
	}
	return f[0]
}

// quote returns s quoted for the host's POSIX shell.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
