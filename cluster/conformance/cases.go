package conformance

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
)

// picker chooses the node a case acts on.
type picker func(t *testing.T, e *env) string

// named picks the node of that name.
func named(name string) picker { return func(*testing.T, *env) string { return name } }

// zkModes returns the mode of every data node, once exactly one leader serves.
func zkModes(t *testing.T, e *env) map[string]string {
	t.Helper()
	var modes map[string]string
	waitFor(t, generous, "the ensemble serves with one leader", func() error {
		modes = map[string]string{}
		leaders := 0
		for _, n := range e.dataNodes() {
			m, err := cluster.ZooKeeperMode(ctxFor(t, 2*time.Second), n.Addr)
			if err != nil {
				return fmt.Errorf("%s: %w", n.Name, err)
			}
			modes[n.Name] = m
			if m == "leader" {
				leaders++
			}
		}
		if leaders != 1 {
			return fmt.Errorf("modes %v", modes)
		}
		return nil
	})
	return modes
}

// zkLeader picks the ensemble's leader.
func zkLeader(t *testing.T, e *env) string {
	modes := zkModes(t, e)
	for name, m := range modes {
		if m == "leader" {
			return name
		}
	}
	t.Fatalf("no leader: %v", modes)
	return ""
}

// zkFollower picks a follower of the ensemble (the lowest-named one).
func zkFollower(t *testing.T, e *env) string {
	modes := zkModes(t, e)
	for _, n := range e.dataNodes() {
		if modes[n.Name] == "follower" {
			return n.Name
		}
	}
	t.Fatalf("no follower: %v", modes)
	return ""
}

// zkIsolated picks the node the isolation case cuts off: the leader, all
// of whose election traffic must cross the links. A backend that cannot
// skew clocks is the local one without its preload library, which is also
// what redirects the election's dial-backs onto the links; there a follower
// is isolated, whose isolation holds all the same.
func zkIsolated(t *testing.T, e *env) string {
	if why, ok := e.b.Cannot[ClockSkew]; ok {
		t.Logf("isolating a follower, not the leader: the backend cannot skew clocks (%s)", why)
		return zkFollower(t, e)
	}
	return zkLeader(t, e)
}

// answers reports whether the node serves, within d.
func (e *env) answers(t *testing.T, n cluster.Node, d time.Duration) error {
	ctx := ctxFor(t, d)
	if n.Role == cluster.RoleSentinel {
		return redisProbe.answer(ctx, n.Addr)
	}
	return e.sys.probe.answer(ctx, n.Addr)
}

// read returns what the node has for key, failing the test on an error.
func (e *env) read(t *testing.T, n cluster.Node, key string) (string, bool) {
	t.Helper()
	v, ok, err := e.reader()(ctxFor(t, 10*time.Second), n.Addr, key)
	if err != nil {
		t.Fatalf("read %s on %s: %v", key, n.Name, err)
	}
	return v, ok
}

// write stores key=value through the node, retrying while the system
// recovers (an election, a restart).
func (e *env) write(t *testing.T, n cluster.Node, key, value string) {
	t.Helper()
	waitFor(t, generous, fmt.Sprintf("write %s=%s through %s", key, value, n.Name), func() error {
		return e.sys.probe.write(ctxFor(t, 10*time.Second), n.Addr, key, value)
	})
}

// reaches waits until the node has key=value.
func (e *env) reaches(t *testing.T, n cluster.Node, key, value string) {
	t.Helper()
	waitFor(t, generous, fmt.Sprintf("%s has %s=%s", n.Name, key, value), func() error {
		v, ok, err := e.reader()(ctxFor(t, 10*time.Second), n.Addr, key)
		if err == nil && (!ok || v != value) {
			err = fmt.Errorf("has %q (found %v)", v, ok)
		}
		return err
	})
}

// replicates reports whether a write reaches every data node of the
// topology (all but independent Redis masters).
func (e *env) replicates() bool {
	return e.top.spec.System != cluster.Redis || (e.top.spec.Topology != "" && e.top.spec.Topology != "masters")
}

// startCase: the cluster has the nodes cluster.Layout declares, each
// answers on 127.0.0.1 and logs to the run's log dir, and writes reach every
// node that replicates them.
var startCase = testCase{"start", func(t *testing.T, e *env) {
	want, err := cluster.Layout(e.top.spec)
	if err != nil {
		t.Fatal(err)
	}
	got := e.c.Nodes()
	describe := func(ns []cluster.Node) string {
		var s []string
		for _, n := range ns {
			s = append(s, n.Name+"="+n.Role)
		}
		return strings.Join(s, " ")
	}
	if describe(got) != describe(want) {
		t.Fatalf("nodes %s, want %s (cluster.Layout)", describe(got), describe(want))
	}
	if s := e.c.System(); s != e.top.spec.System {
		t.Errorf("System() = %q, want %q", s, e.top.spec.System)
	}
	for _, n := range got {
		hosts := e.b.NodeHosts
		if len(hosts) == 0 {
			hosts = []string{"127.0.0.1"}
		}
		if host, _, err := net.SplitHostPort(n.Addr); err != nil || !slices.Contains(hosts, host) {
			t.Errorf("%s: Addr %q is not on %v (%v)", n.Name, n.Addr, hosts, err)
		}
		if err := e.answers(t, n, 10*time.Second); err != nil {
			t.Errorf("%s does not answer: %v", n.Name, err)
		}
		if _, err := os.Stat(filepath.Join(e.logDir, n.Name+".log")); err != nil {
			t.Errorf("%s's log is not in the log dir: %v", n.Name, err)
		}
	}
	if e.isRedisCluster() {
		clusterStateOK(t, e)
		shardsReplicate(t, e)
		return
	}
	data := e.dataNodes()
	if !e.replicates() {
		for _, n := range data {
			e.write(t, n, "start", n.Name)
			e.reaches(t, n, "start", n.Name)
		}
		return
	}
	e.write(t, data[0], "start", "v")
	for _, n := range data {
		e.reaches(t, n, "start", "v")
	}
}}

// unknownNodeCase: every ability refuses a node the cluster does not have.
var unknownNodeCase = testCase{"unknown node is an error", func(t *testing.T, e *env) {
	ctx := ctxFor(t, 10*time.Second)
	checked := 0
	if k, ok := e.c.(cluster.Killer); ok {
		checked++
		if err := k.Kill(ctx, "n99"); err == nil {
			t.Error("Kill(n99) succeeded")
		}
		if err := k.Start(ctx, "n99"); err == nil {
			t.Error("Start(n99) succeeded")
		}
	}
	if p, ok := e.c.(cluster.Pauser); ok {
		checked++
		if err := p.Pause(ctx, "n99"); err == nil {
			t.Error("Pause(n99) succeeded")
		}
	}
	if s, ok := e.c.(cluster.ClockSkewer); ok {
		checked++
		if err := s.SetClockOffset("n99", time.Second); err == nil {
			t.Error("SetClockOffset(n99) succeeded")
		}
	}
	if checked == 0 {
		t.Skipf("the %s cluster has no ability that names nodes", e.b.Name)
	}
}}

// killer returns the cluster as a cluster.Killer, failing the test when a
// backend that claims Kill does not implement it.
func (e *env) killer(t *testing.T) cluster.Killer {
	t.Helper()
	e.b.requires(t, Kill)
	k, ok := e.c.(cluster.Killer)
	if !ok {
		t.Fatalf("the %s backend does not declare that it cannot kill, but %T is no cluster.Killer", e.b.Name, e.c)
	}
	return k
}

// pauser is killer for cluster.Pauser.
func (e *env) pauser(t *testing.T) cluster.Pauser {
	t.Helper()
	e.b.requires(t, Pause)
	p, ok := e.c.(cluster.Pauser)
	if !ok {
		t.Fatalf("the %s backend does not declare that it cannot pause, but %T is no cluster.Pauser", e.b.Name, e.c)
	}
	return p
}

// skewer is killer for cluster.ClockSkewer.
func (e *env) skewer(t *testing.T) cluster.ClockSkewer {
	t.Helper()
	e.b.requires(t, ClockSkew)
	s, ok := e.c.(cluster.ClockSkewer)
	if !ok {
		t.Fatalf("the %s backend does not declare that it cannot skew clocks, but %T is no cluster.ClockSkewer", e.b.Name, e.c)
	}
	return s
}

// failoverer is killer for cluster.Failoverer.
func (e *env) failoverer(t *testing.T) cluster.Failoverer {
	t.Helper()
	e.b.requires(t, Failover)
	f, ok := e.c.(cluster.Failoverer)
	if !ok {
		t.Fatalf("the %s backend does not declare that it cannot fail over, but %T is no cluster.Failoverer", e.b.Name, e.c)
	}
	return f
}

// follower is killer for Follower.
func (e *env) follower(t *testing.T) Follower {
	t.Helper()
	e.b.requires(t, Follow)
	f, ok := e.c.(Follower)
	if !ok {
		t.Fatalf("the %s backend does not declare that it cannot follow, but %T has no Follow", e.b.Name, e.c)
	}
	return f
}

// others returns the data nodes other than name.
func (e *env) others(name string) []cluster.Node {
	var out []cluster.Node
	for _, n := range e.dataNodes() {
		if n.Name != name {
			out = append(out, n)
		}
	}
	return out
}

// pauseCase: a paused node does not answer while the others do; resumed,
// it answers again.
func pauseCase(pick picker) testCase {
	return testCase{"pause and resume", func(t *testing.T, e *env) {
		p := e.pauser(t)
		target := e.node(t, pick(t, e))
		if err := p.Pause(ctxFor(t, 30*time.Second), target.Name); err != nil {
			t.Fatal(err)
		}
		if err := e.answers(t, target, quiet); err == nil {
			t.Errorf("paused %s answered", target.Name)
		}
		for _, o := range e.others(target.Name) {
			waitFor(t, generous, o.Name+" answers while "+target.Name+" is paused", func() error { return e.answers(t, o, 5*time.Second) })
		}
		if err := p.Resume(ctxFor(t, 30*time.Second), target.Name); err != nil {
			t.Fatal(err)
		}
		waitFor(t, generous, target.Name+" answers after Resume", func() error { return e.answers(t, target, 5*time.Second) })
	}}
}

// durability is what a kill and restart does to a node's data.
type durability int

const (
	// lost: the restarted node has none of the data it had.
	lost durability = iota
	// survives: the restarted node has the data it had.
	survives
	// catchesUp: survives, and the node also gets what was written through
	// another node while it was down.
	catchesUp
)

// killCase: a killed node stops answering; Start brings it back with its
// data as the topology declares. A write goes through writer, or through
// the node itself when writer is "".
func killCase(pick picker, writer string, after durability) testCase {
	name := map[durability]string{
		lost:      "kill and restart loses the data",
		survives:  "kill and restart keeps the data",
		catchesUp: "kill and restart keeps the data and catches up",
	}[after]
	return testCase{name, func(t *testing.T, e *env) {
		k := e.killer(t)
		target := e.node(t, pick(t, e))
		via := target
		if writer != "" {
			via = e.node(t, writer)
		}
		e.write(t, via, "before-kill", "1")
		e.reaches(t, target, "before-kill", "1")
		if err := k.Kill(ctxFor(t, 30*time.Second), target.Name); err != nil {
			t.Fatal(err)
		}
		if err := e.answers(t, target, quiet); err == nil {
			t.Fatalf("killed %s answered", target.Name)
		}
		if after == catchesUp {
			if writer == "" {
				via = e.others(target.Name)[0]
			}
			e.write(t, via, "while-down", "1")
		}
		if err := k.Start(ctxFor(t, 2*generous), target.Name); err != nil {
			t.Fatal(err)
		}
		waitFor(t, generous, target.Name+" answers after Start", func() error { return e.answers(t, target, 5*time.Second) })
		switch after {
		case lost:
			if v, ok := e.read(t, target, "before-kill"); ok {
				t.Errorf("%s kept before-kill=%s across a kill without persistence", target.Name, v)
			}
		case survives:
			e.reaches(t, target, "before-kill", "1")
		case catchesUp:
			e.reaches(t, target, "before-kill", "1")
			e.reaches(t, target, "while-down", "1")
		}
	}}
}

// killPausedCase: a paused node can be killed and started again.
func killPausedCase(pick picker) testCase {
	return testCase{"kill a paused node", func(t *testing.T, e *env) {
		p := e.pauser(t)
		k := e.killer(t)
		target := e.node(t, pick(t, e))
		if err := p.Pause(ctxFor(t, 30*time.Second), target.Name); err != nil {
			t.Fatal(err)
		}
		if err := k.Kill(ctxFor(t, 30*time.Second), target.Name); err != nil {
			t.Fatal(err)
		}
		if err := k.Start(ctxFor(t, 2*generous), target.Name); err != nil {
			t.Fatal(err)
		}
		waitFor(t, generous, target.Name+" answers after pause, kill and start", func() error { return e.answers(t, target, 5*time.Second) })
	}}
}

// clockTolerance bounds how far a clock read may be from the expected time:
// the read's own round trip, far below the offset.
const clockTolerance = time.Minute

// clockSkewCase: the node's wall clock reads the offset, the others' do
// not, and an offset of zero restores the true time. On a system whose
// servers cannot be skewed, SetClockOffset reports cluster.ErrUnavailable.
func clockSkewCase(pick picker) testCase {
	return testCase{"clock skew", func(t *testing.T, e *env) {
		s := e.skewer(t)
		target := e.node(t, pick(t, e))
		clock := e.sys.probe.clock
		if cluster.ClockSkewError(e.sys.name, target.Name) != nil {
			// The system declares that its clocks cannot be skewed.
			err := s.SetClockOffset(target.Name, time.Second)
			if !errors.Is(err, cluster.ErrUnavailable) {
				t.Fatalf("SetClockOffset on %s, whose servers cannot be skewed: %v, want cluster.ErrUnavailable", e.sys.name, err)
			}
			t.Logf("SetClockOffset refused as it should: %v", err)
			return
		}
		if clock == nil {
			t.Fatalf("the suite has no clock probe for %s, whose clocks can be skewed", e.sys.name)
		}
		// within checks that n's clock reads the true time plus offset.
		within := func(n cluster.Node, offset time.Duration) {
			t.Helper()
			before := time.Now()
			got, err := clock(ctxFor(t, 20*time.Second), n.Addr)
			after := time.Now()
			if err != nil {
				t.Fatalf("clock of %s: %v", n.Name, err)
			}
			lo, hi := before.Add(offset-clockTolerance), after.Add(offset+clockTolerance)
			if got.Before(lo) || got.After(hi) {
				t.Errorf("%s's clock reads %v off the true time, want %v", n.Name, got.Sub(after).Round(time.Second), offset)
			}
		}
		const offset = time.Hour
		if err := s.SetClockOffset(target.Name, offset); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.SetClockOffset(target.Name, 0) })
		within(target, offset)
		if e.sys.name != cluster.ZooKeeper { // a ZooKeeper read gives the leader's clock
			for _, o := range e.others(target.Name) {
				within(o, 0)
			}
		}
		if err := s.SetClockOffset(target.Name, 0); err != nil {
			t.Fatal(err)
		}
		within(target, 0)
	}}
}

// noFailoverCase: independent masters have no primary to replace.
var noFailoverCase = testCase{"no failover without replicas", func(t *testing.T, e *env) {
	f := e.failoverer(t)
	if _, err := f.Primary(ctxFor(t, 10*time.Second)); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("Primary on masters = %v, want cluster.ErrUnavailable", err)
	}
	if err := f.Promote(ctxFor(t, 10*time.Second), "n2"); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("Promote on masters = %v, want cluster.ErrUnavailable", err)
	}
}}

// primaryIs waits until Primary names want.
func primaryIs(t *testing.T, f cluster.Failoverer, want string) {
	t.Helper()
	waitFor(t, generous, "Primary() is "+want, func() error {
		p, err := f.Primary(ctxFor(t, 10*time.Second))
		if err == nil && p != want {
			err = fmt.Errorf("Primary() is %s", p)
		}
		return err
	})
}

// redisRole returns the role a Redis server reports, as a Node.Role.
func redisRole(ctx context.Context, addr string) (string, error) {
	r, err := cluster.RedisInfoField(ctx, addr, "replication", "role")
	switch {
	case err != nil:
		return "", err
	case r == "master":
		return cluster.RolePrimary, nil
	case r == "slave":
		return cluster.RoleReplica, nil
	}
	return "", fmt.Errorf("unknown replication role %q", r)
}

// roleIs waits until the node's server reports the role.
func roleIs(t *testing.T, n cluster.Node, want string) {
	t.Helper()
	waitFor(t, generous, n.Name+" reports role "+want, func() error {
		r, err := redisRole(ctxFor(t, 5*time.Second), n.Addr)
		if err == nil && r != want {
			err = fmt.Errorf("%s reports %s", n.Name, r)
		}
		return err
	})
}

// failoverCase: Promote makes a replica the primary, the other replicas
// follow it, and the old primary is left as a primary of its own.
var failoverCase = testCase{"failover promotes a replica", func(t *testing.T, e *env) {
	f := e.failoverer(t)
	primaryIs(t, f, "n1")
	if err := f.Promote(ctxFor(t, generous), "n2"); err != nil {
		t.Fatal(err)
	}
	primaryIs(t, f, "n2")
	n1, n2, n3 := e.node(t, "n1"), e.node(t, "n2"), e.node(t, "n3")
	roleIs(t, n2, cluster.RolePrimary)
	e.write(t, n2, "after-promote", "1")
	e.reaches(t, n3, "after-promote", "1")
	time.Sleep(quiet)
	if v, ok := e.read(t, n1, "after-promote"); ok {
		t.Errorf("the old primary n1, left alone, got the new primary's write (%s)", v)
	}
	roleIs(t, n1, cluster.RolePrimary)
}}

// rejoinCase: the old primary follows the new one.
var rejoinCase = testCase{"old primary rejoins as a replica", func(t *testing.T, e *env) {
	f := e.failoverer(t)
	fl := e.follower(t)
	primaryIs(t, f, "n2")
	if err := fl.Follow(ctxFor(t, generous), "n1", "n2"); err != nil {
		t.Fatal(err)
	}
	n1, n2 := e.node(t, "n1"), e.node(t, "n2")
	roleIs(t, n1, cluster.RoleReplica)
	e.write(t, n2, "after-rejoin", "1")
	e.reaches(t, n1, "after-rejoin", "1")
	e.reaches(t, n1, "after-promote", "1")
	primaryIs(t, f, "n2")
}}

// rolesCurrentCase: Nodes reports the role each data node's server
// reports, after whatever failovers the earlier cases made.
var rolesCurrentCase = testCase{"roles reported current", func(t *testing.T, e *env) {
	e.b.requires(t, CurrentRoles)
	waitFor(t, generous, "every Node.Role agrees with its server", func() error {
		var errs []error
		for _, n := range e.c.Nodes() {
			if n.Role == cluster.RoleSentinel {
				continue
			}
			r, err := redisRole(ctxFor(t, 5*time.Second), n.Addr)
			if err != nil {
				errs = append(errs, err)
			} else if r != n.Role {
				errs = append(errs, fmt.Errorf("%s: Node.Role %s, the server reports %s", n.Name, n.Role, r))
			}
		}
		return errors.Join(errs...)
	})
}}

// sentinelPromoteCase: Promote asks the sentinels, which make target the
// primary and every other data node its replica. The case first waits
// until the sentinel Promote asks (the first) has just read every
// replica's INFO, so that Promote meets a sentinel that holds the
// replicas' old priorities and will not read them again for seconds (a
// sentinel rereads a replica's INFO every 10 s, every second during a
// failover): asked at once, such a sentinel promotes whichever replica it
// likes best instead of target.
func sentinelPromoteCase(target string) testCase {
	return testCase{"promote through the sentinels", func(t *testing.T, e *env) {
		f := e.failoverer(t)
		primaryIs(t, f, "n1")
		waitFor(t, generous, "the first sentinel has just read every replica's INFO", func() error {
			return sentinelJustRead(ctxFor(t, 5*time.Second), e.c.Nodes(), len(e.dataNodes())-1, 300*time.Millisecond)
		})
		if err := f.Promote(ctxFor(t, generous), target); err != nil {
			t.Fatal(err)
		}
		primaryIs(t, f, target)
		n := e.node(t, target)
		roleIs(t, n, cluster.RolePrimary)
		e.write(t, n, "sentinel-promote", "1")
		for _, o := range e.others(target) {
			roleIs(t, o, cluster.RoleReplica)
			e.reaches(t, o, "sentinel-promote", "1")
		}
	}}
}

// sentinelJustRead returns nil when the first sentinel among nodes lists
// want replicas (SENTINEL REPLICAS) and has read each one's INFO within
// the last within (its info-refresh field, in milliseconds).
func sentinelJustRead(ctx context.Context, nodes []cluster.Node, want int, within time.Duration) error {
	i := slices.IndexFunc(nodes, func(n cluster.Node) bool { return n.Role == cluster.RoleSentinel })
	if i < 0 {
		return errors.New("no sentinel")
	}
	s := nodes[i]
	replicas, err := cluster.SentinelReplicas(ctx, s.Addr)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	fresh := 0
	for _, f := range replicas {
		if ms, err := strconv.ParseInt(f["info-refresh"], 10, 64); err == nil && time.Duration(ms)*time.Millisecond < within {
			fresh++
		}
	}
	if len(replicas) != want || fresh != want {
		return fmt.Errorf("%s lists %d replicas, %d of them read within %v; want %d", s.Name, len(replicas), fresh, within, want)
	}
	return nil
}

// sentinelFailoverCase: when the primary stops answering, the sentinels
// promote a replica on their own; the old primary, back, follows it.
var sentinelFailoverCase = testCase{"sentinels fail over a stopped primary", func(t *testing.T, e *env) {
	f := e.failoverer(t)
	p := e.pauser(t)
	old, err := f.Primary(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Pause(ctxFor(t, 30*time.Second), old); err != nil {
		t.Fatal(err)
	}
	var now string
	waitFor(t, generous, "the sentinels name another primary than the paused "+old, func() error {
		q, err := f.Primary(ctxFor(t, 10*time.Second))
		if err == nil && q == old {
			err = fmt.Errorf("still %s", q)
		}
		now = q
		return err
	})
	roleIs(t, e.node(t, now), cluster.RolePrimary)
	if err := p.Resume(ctxFor(t, 30*time.Second), old); err != nil {
		t.Fatal(err)
	}
	roleIs(t, e.node(t, old), cluster.RoleReplica)
	e.write(t, e.node(t, now), "sentinel-failover", "1")
	e.reaches(t, e.node(t, old), "sentinel-failover", "1")
}}

// isolateCase: cutting every link of a node isolates it: it stops
// serving, the others serve and take writes, and after the heal it serves
// again and has what was written meanwhile.
func isolateCase(pick picker) testCase {
	return testCase{"partition isolates a node", func(t *testing.T, e *env) {
		target := e.node(t, pick(t, e))
		var cut []string
		for _, l := range e.nw.Links() {
			if from, to, _ := linknet.SplitName(l); from == target.Name || to == target.Name {
				cut = append(cut, l)
			}
		}
		if len(cut) == 0 {
			t.Fatalf("no link of the network reaches %s (links %v): node-to-node traffic must cross the linknet.Network", target.Name, e.nw.Links())
		}
		if err := e.nw.Cut(cut...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.nw.Heal(cut...) })
		waitFor(t, generous, "isolated "+target.Name+" stops serving", func() error {
			if e.answers(t, target, 2*time.Second) == nil {
				return errors.New("it serves")
			}
			return nil
		})
		others := e.others(target.Name)
		for _, o := range others {
			waitFor(t, generous, o.Name+" serves while "+target.Name+" is isolated", func() error { return e.answers(t, o, 5*time.Second) })
		}
		e.write(t, others[0], "while-isolated", "1")
		if err := e.nw.Heal(cut...); err != nil {
			t.Fatal(err)
		}
		waitFor(t, generous, target.Name+" serves after the heal", func() error { return e.answers(t, target, 5*time.Second) })
		e.reaches(t, target, "while-isolated", "1")
	}}
}

// respConn is a raw RESP connection through a link, kept open across faults.
type respConn struct {
	net.Conn
	r *bufio.Reader
}

func dialResp(t *testing.T, addr string) *respConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &respConn{c, bufio.NewReader(c)}
}

// send writes one inline command.
func (c *respConn) send(t *testing.T, cmd string) {
	t.Helper()
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		t.Fatalf("send %q: %v", cmd, err)
	}
}

// reply reads one reply line within d.
func (c *respConn) reply(d time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	line, err := c.r.ReadString('\n')
	return strings.TrimSpace(line), err
}

// clientPartitionsCase: cuts of each shape on client links (Kleppmann's:
// w1 reaches n1 and n2, w2 reaches n2 and n3; w2's replies from n1 are
// dropped, its requests to n2 are dropped) behave like cable cuts: what
// crosses an open direction arrives, nothing crosses a cut one, a new
// connection through a cut link does not connect, and after the heal what
// waited is delivered on the same connections.
var clientPartitionsCase = testCase{"client partitions of each shape", clientPartitions}

// partitionWant is what crosses a client link under clientPartitions' cuts:
// whether a command arrives at the node, and whether its reply is received.
type partitionWant struct{ arrives, answered bool }

// clientPartitions is clientPartitionsCase's test.
func clientPartitions(t *testing.T, e *env) {
	nodes := e.dataNodes()
	conns, ids := openClientConns(t, e, nodes)
	steps := []struct {
		link string
		f    linknet.Fault
	}{
		{"w1->n3", linknet.Fault{Kind: linknet.FaultCut}},
		{"w2->n1", linknet.Fault{Kind: linknet.FaultCut, Direction: linknet.DirectionBack}},
		{"w2->n2", linknet.Fault{Kind: linknet.FaultCut, Direction: linknet.DirectionForward}},
	}
	for _, s := range steps {
		if err := e.nw.Apply(s.f, s.link); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = e.nw.HealAll() })
	if c, err := net.DialTimeout("tcp", e.nw.Addr("w1->n3"), quiet); err == nil {
		c.Close()
		t.Error("a new connection through the cut link w1->n3 connected")
	}
	key := func(link string) string { return "cut-" + strings.ReplaceAll(link, linknet.Separator, "-") }
	for name, conn := range conns {
		conn.send(t, "SET "+key(name)+" 1")
	}
	byName := map[string]cluster.Node{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	wants := map[string]partitionWant{
		"w1->n1": {true, true}, "w1->n2": {true, true}, "w1->n3": {false, false},
		"w2->n1": {true, false}, "w2->n2": {false, false}, "w2->n3": {true, true},
	}
	for name, w := range wants {
		_, node, _ := linknet.SplitName(name)
		if w.arrives {
			e.reaches(t, byName[node], key(name), "1")
		}
		if w.answered {
			if r, err := conns[name].reply(generous); err != nil || r != "+OK" {
				t.Errorf("%s: reply %q, %v", name, r, err)
			}
		}
	}
	time.Sleep(quiet)
	for name, w := range wants {
		_, node, _ := linknet.SplitName(name)
		if !w.arrives {
			if v, ok := e.read(t, byName[node], key(name)); ok {
				t.Errorf("%s: the command crossed a cut (key is %s)", name, v)
			}
		}
		if !w.answered {
			if r, err := conns[name].reply(100 * time.Millisecond); err == nil {
				t.Errorf("%s: a reply %q crossed a cut", name, r)
			}
		}
	}
	healedSame(t, e, conns, ids, wants)
}

// openClientConns links the workers w1 and w2 to every node and opens a
// connection through each link; it returns them and their client ids, by
// link name.
func openClientConns(t *testing.T, e *env, nodes []cluster.Node) (map[string]*respConn, map[string]string) {
	conns := map[string]*respConn{}
	ids := map[string]string{}
	for _, w := range []string{"w1", "w2"} {
		for _, n := range nodes {
			name := linknet.Name(w, n.Name)
			via, err := e.nw.Link(name, n.Addr)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.nw.Remove(name) })
			conns[name] = dialResp(t, via)
			conns[name].send(t, "CLIENT ID")
			if ids[name], err = conns[name].reply(10 * time.Second); err != nil {
				t.Fatalf("CLIENT ID through %s: %v", name, err)
			}
		}
	}
	return conns, ids
}

// healedSame heals every link and checks that what waited behind a cut is
// answered, and that every connection is the one opened before the cuts.
func healedSame(t *testing.T, e *env, conns map[string]*respConn, ids map[string]string, wants map[string]partitionWant) {
	if err := e.nw.HealAll(); err != nil {
		t.Fatal(err)
	}
	for name, w := range wants {
		if !w.answered {
			if r, err := conns[name].reply(generous); err != nil || r != "+OK" {
				t.Errorf("%s: reply after the heal %q, %v; want +OK on the same connection", name, r, err)
			}
		}
	}
	for name, conn := range conns {
		conn.send(t, "CLIENT ID")
		if id, err := conn.reply(generous); err != nil || id != ids[name] {
			t.Errorf("%s: CLIENT ID after the heal %q (%v), before %q: the connection was replaced", name, id, err, ids[name])
		}
	}
}

// replicaIDs returns the client ids of the replication connections the
// primary at addr serves.
func replicaIDs(t *testing.T, addr string) []string {
	t.Helper()
	r, err := redisDo(ctxFor(t, 10*time.Second), addr, "CLIENT", "LIST", "TYPE", "replica")
	if err != nil {
		t.Fatalf("CLIENT LIST: %v", err)
	}
	var ids []string
	for _, line := range strings.Split(fmt.Sprint(r), "\n") {
		if id, _, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// replicaLags returns, sorted, the lag of each replica of the primary at
// addr as its INFO replication gives it: the seconds since the replica's
// last acknowledgement (REPLCONF ACK, every second) reached the primary.
func replicaLags(t *testing.T, addr string) []int {
	t.Helper()
	r, err := redisDo(ctxFor(t, 10*time.Second), addr, "INFO", "replication")
	if err != nil {
		t.Fatalf("INFO replication: %v", err)
	}
	var lags []int
	for _, line := range strings.Split(fmt.Sprint(r), "\n") {
		name, fields, _ := strings.Cut(strings.TrimSpace(line), ":")
		if !strings.HasPrefix(name, "slave") {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "lag="); ok {
				lag, err := strconv.Atoi(v)
				if err != nil {
					t.Fatalf("INFO replication: %s: %v", line, err)
				}
				lags = append(lags, lag)
			}
		}
	}
	slices.Sort(lags)
	return lags
}

// replicationPartitionsCase: cuts of each shape on a replication link (n2
// replicates from n1 through "n2->n1") behave like cable cuts. A full cut
// and a cut of the way back (n1's stream to n2) hold n1's writes from n2
// until the heal. A cut of the way forward drops what n2 sends: its
// acknowledgements stop reaching n1 (n1 sees one replica's lag grow, the
// other's not), while n1's stream is not
// dropped (its first segments reach n2; as through any one-way cut, n1's TCP
// stalls once it waits for an acknowledgement the cut drops, so whether a
// given write crosses during the cut depends on what n1 sent just before:
// not asserted). n3 gets every write throughout, every write reaches n2
// after its heal, and n1 serves the same replication connections after the
// heals.
var replicationPartitionsCase = testCase{"replication partitions of each shape", func(t *testing.T, e *env) {
	link := linknet.Name("n2", "n1")
	if e.nw.Addr(link) == "" {
		t.Fatalf("no link %s (links %v): replication must cross the linknet.Network", link, e.nw.Links())
	}
	n1, n2, n3 := e.node(t, "n1"), e.node(t, "n2"), e.node(t, "n3")
	var before []string
	waitFor(t, generous, "n1 serves two replication connections", func() error {
		if before = replicaIDs(t, n1.Addr); len(before) != 2 {
			return fmt.Errorf("it serves %v", before)
		}
		return nil
	})
	t.Cleanup(func() { _ = e.nw.Heal(link) })
	for i, tc := range []struct {
		name  string
		dir   linknet.Direction
		holds bool
	}{
		{"full", linknet.DirectionBoth, true},
		{"forward", linknet.DirectionForward, false},
		{"back", linknet.DirectionBack, true},
	} {
		key := fmt.Sprintf("repl-%d-%s", i, tc.name)
		if err := e.nw.Apply(linknet.Fault{Kind: linknet.FaultCut, Direction: tc.dir}, link); err != nil {
			t.Fatal(err)
		}
		e.write(t, n1, key, "1")
		e.reaches(t, n3, key, "1")
		if tc.holds {
			time.Sleep(quiet)
			if v, ok := e.read(t, n2, key); ok {
				t.Errorf("%s cut: %s=%s crossed to n2", tc.name, key, v)
			}
		} else {
			// n2 acknowledges every second: 4 s without one is the cut.
			waitFor(t, generous, "n2's acknowledgements stop reaching n1, n3's do not", func() error {
				lags := replicaLags(t, n1.Addr)
				if len(lags) != 2 || lags[0] > 2 || lags[1] < 4 {
					return fmt.Errorf("n1's replicas' lags: %v s", lags)
				}
				return nil
			})
		}
		if err := e.nw.Heal(link); err != nil {
			t.Fatal(err)
		}
		e.reaches(t, n2, key, "1")
	}
	if after := replicaIDs(t, n1.Addr); !slices.Equal(after, before) {
		t.Errorf("n1's replication connections were replaced: %v before the cuts, %v after the heals", before, after)
	}
}}

// teardown closes the cluster (with a node paused, where the backend can
// pause) and checks that nothing of it remains: not its node addresses,
// node-to-node links, nor what the backend's Leftovers finds.
func teardown(t *testing.T, e *env, leftovers func() []string) {
	if _, cannot := e.b.Cannot[Pause]; !cannot {
		if p, ok := e.c.(cluster.Pauser); ok {
			n := e.dataNodes()[0]
			if err := p.Pause(ctxFor(t, 30*time.Second), n.Name); err != nil {
				t.Errorf("Pause %s before Close: %v", n.Name, err)
			}
		}
	}
	var addrs []string
	for _, n := range e.c.Nodes() {
		addrs = append(addrs, n.Addr)
	}
	e.done = true
	if err := e.c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := e.c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, a := range addrs {
		if listening(a) {
			t.Errorf("%s still accepts connections after Close", a)
		}
	}
	if links := e.nw.Links(); len(links) != 0 {
		t.Errorf("links left after Close: %v", links)
	}
	for _, l := range leftovers() {
		t.Errorf("left behind after Close: %s", l)
	}
}
