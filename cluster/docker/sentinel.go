package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelDo runs one command on the sentinel (or server) at addr, directly.
func sentinelDo(ctx context.Context, addr string, args ...any) (any, error) {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, Protocol: 2})
	defer rc.Close()
	return rc.Do(ctx, args...).Result()
}

// waitSentinel waits until the sentinel knows the replicas and the other
// sentinels, without which it could not fail over.
func (c *Cluster) waitSentinel(ctx context.Context, s *node, replicas, others int) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var last error
	for {
		last = func() error {
			r, err := sentinelDo(ctx, s.Addr, "SENTINEL", "REPLICAS", SentinelMaster)
			if err != nil {
				return err
			}
			if l, _ := r.([]any); len(l) < replicas {
				return fmt.Errorf("knows %d replicas, want %d", len(l), replicas)
			}
			r, err = sentinelDo(ctx, s.Addr, "SENTINEL", "SENTINELS", SentinelMaster)
			if err != nil {
				return err
			}
			if l, _ := r.([]any); len(l) < others {
				return fmt.Errorf("knows %d other sentinels, want %d", len(l), others)
			}
			return nil
		}()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: sentinel %s not ready within %v: %w", s.Name, c.timeout, errors.Join(last, ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sentinelsPrimary asks the running sentinels, in order, which node is the
// primary; the first answer counts.
func (c *Cluster) sentinelsPrimary(ctx context.Context) (string, error) {
	var errs []error
	for _, s := range c.nodes {
		if s.Role != RoleSentinel || !c.running(ctx, s) {
			continue
		}
		name, err := c.sentinelPrimary(ctx, s)
		if err == nil {
			return name, nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("docker: no sentinel named the primary: %w", errors.Join(errs...))
}

// sentinelPrimary asks one sentinel for the primary and maps its address (a
// relay port inside the containers) to the node.
func (c *Cluster) sentinelPrimary(ctx context.Context, s *node) (string, error) {
	r, err := sentinelDo(ctx, s.Addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
	if err != nil {
		return "", fmt.Errorf("docker: sentinel %s: %w", s.Name, err)
	}
	l, _ := r.([]any)
	if len(l) != 2 {
		return "", fmt.Errorf("docker: sentinel %s answered %v", s.Name, r)
	}
	addr := net.JoinHostPort(fmt.Sprint(l[0]), fmt.Sprint(l[1]))
	for _, n := range c.nodes[:c.dataNodes()] {
		if addr == relayAddr(n) {
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("docker: sentinel %s names an unknown primary %s", s.Name, addr)
}

// sentinelFailover makes the replicas other than target ineligible, asks a
// running sentinel to fail over, waits until it names target, and restores
// the replicas' priority.
func (c *Cluster) sentinelFailover(ctx context.Context, target *node) error {
	var s *node
	for _, n := range c.nodes {
		if n.Role == RoleSentinel && c.running(ctx, n) {
			s = n
			break
		}
	}
	if s == nil {
		return fmt.Errorf("docker: sentinel failover to %s: no sentinel running", target.Name)
	}
	var others []*node
	for _, n := range c.nodes[:c.dataNodes()] {
		if n != target && c.running(ctx, n) {
			others = append(others, n)
		}
	}
	setPriority := func(nodes []*node, p int) error {
		var errs []error
		for _, n := range nodes {
			if _, err := sentinelDo(ctx, n.Addr, "CONFIG", "SET", "replica-priority", strconv.Itoa(p)); err != nil {
				errs = append(errs, fmt.Errorf("docker: replica-priority of %s: %w", n.Name, err))
			}
		}
		return errors.Join(errs...)
	}
	if err := setPriority(others, 0); err != nil {
		return errors.Join(err, setPriority(others, 100))
	}
	defer func() { _ = setPriority(others, 100) }()
	if _, err := sentinelDo(ctx, s.Addr, "SENTINEL", "FAILOVER", SentinelMaster); err != nil {
		return fmt.Errorf("docker: sentinel failover to %s: %w", target.Name, err)
	}
	for {
		got, err := c.sentinelPrimary(ctx, s)
		if err == nil && got == target.Name {
			c.mu.Lock()
			target.Role = RolePrimary
			c.primary = target.Name
			c.mu.Unlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("docker: sentinel failover to %s: primary is %q: %w", target.Name, got, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
