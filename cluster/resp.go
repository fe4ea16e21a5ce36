package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// RedisError is a Redis error reply.
type RedisError string

func (e RedisError) Error() string { return "redis: " + string(e) }

// RedisDo sends one command on a new connection and returns its reply:
// string for simple and bulk strings, int64, []any for arrays, nil for a null
// reply, and RedisError for an error reply. It is for the harness's own
// administration (readiness, INFO, REPLICAOF, SENTINEL), not for clients.
func RedisDo(ctx context.Context, addr string, args ...string) (any, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	_ = conn.SetDeadline(deadline)
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, err
	}
	return readReply(bufio.NewReader(conn))
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return nil, errors.New("cluster: empty redis reply")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return nil, RedisError(body)
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r); err != nil {
				var re RedisError
				if !errors.As(err, &re) {
					return nil, err
				}
				out[i] = re
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("cluster: unexpected redis reply %q", line)
	}
}

// RedisReady reports whether the server at addr answers PING with PONG (a
// server still loading its data answers -LOADING and is not ready).
func RedisReady(ctx context.Context, addr string) error {
	r, err := RedisDo(ctx, addr, "PING")
	if err != nil {
		return err
	}
	if r != "PONG" {
		return fmt.Errorf("cluster: PING answered %v", r)
	}
	return nil
}

// RedisInfoField returns one field of an INFO section.
func RedisInfoField(ctx context.Context, addr, section, field string) (string, error) {
	r, err := RedisDo(ctx, addr, "INFO", section)
	if err != nil {
		return "", err
	}
	s, _ := r.(string)
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("cluster: INFO %s has no %s", section, field)
}

// WaitReplicating waits until every node of nodes with the replica role
// reports its link to its primary up (INFO replication's
// master_link_status), asking again every poll, or until ctx ends: a
// backend starts the sentinels then, which so find the replicas in their
// first INFO of the primary, not 10 s later.
func WaitReplicating(ctx context.Context, nodes []Node, poll time.Duration) error {
	for _, n := range nodes {
		if n.Role != RoleReplica {
			continue
		}
		for {
			attempt, cancelAttempt := context.WithTimeout(ctx, time.Second)
			s, err := RedisInfoField(attempt, n.Addr, "replication", "master_link_status")
			cancelAttempt()
			if err == nil && s == "up" {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("cluster: replica %s not replicating (link %q, %v): %w", n.Name, s, err, ctx.Err())
			case <-time.After(poll):
			}
		}
	}
	return nil
}
