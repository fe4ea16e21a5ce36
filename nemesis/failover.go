package nemesis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/jepsen-lite/jepsen-lite/cluster"
	"github.com/jepsen-lite/jepsen-lite/cluster/linknet"
	"github.com/jepsen-lite/jepsen-lite/nemesis/faultkind"
)

// Follower is a cluster that makes a node a replica of another node itself.
// Without it, the failover heal sends REPLICAOF to the old primary directly,
// through the link "old->new" (created when missing).
type Follower interface {
	Follow(ctx context.Context, node, primary string) error
}

// ErrFailover reports a failover that could not be carried out.
var ErrFailover = errors.New("nemesis: failover failed")

// redisAdminTimeout bounds each administrative command sent to a node.
const redisAdminTimeout = 2 * time.Second

// redisDo sends one command to addr directly (not through a proxy).
func redisDo(ctx context.Context, addr string, args ...any) *redis.Cmd {
	c := redis.NewClient(&redis.Options{
		Addr: addr, DialTimeout: redisAdminTimeout, ReadTimeout: redisAdminTimeout, WriteTimeout: redisAdminTimeout,
		MaxRetries: -1, PoolSize: 1, DisableIdentity: true,
	})
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, redisAdminTimeout)
	defer cancel()
	return c.Do(ctx, args...)
}

// redisRole returns a node's replication role: "master", "slave" or
// "sentinel".
func redisRole(ctx context.Context, addr string) (string, error) {
	v, err := redisDo(ctx, addr, "ROLE").Slice()
	if err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", fmt.Errorf("nemesis: empty ROLE reply from %s", addr)
	}
	role, _ := v[0].(string)
	return role, nil
}

// currentPrimary returns the node that serves as primary now: the one the
// cluster reports (cluster.Failoverer), or else the node that the workers'
// links to the first node with the primary role point at.
func currentPrimary(ctx context.Context, env *Env) (cluster.Node, error) {
	nodes := env.Cluster.Nodes()
	if f, ok := env.Cluster.(cluster.Failoverer); ok {
		name, err := f.Primary(ctx)
		if err != nil {
			return cluster.Node{}, err
		}
		for _, n := range nodes {
			if n.Name == name {
				return n, nil
			}
		}
		return cluster.Node{}, fmt.Errorf("%w: the cluster reports an unknown primary %q", ErrFailover, name)
	}
	endpoint, err := primaryEndpoint(env)
	if err != nil {
		return cluster.Node{}, err
	}
	for _, l := range env.Network.LinksTo(endpoint.Name) {
		if from, _, _ := linknet.SplitName(l); IsWorkerTarget(from) {
			if cur, ok := nodeByAddr(env, env.Network.Upstream(l)); ok {
				return cur, nil
			}
			break
		}
	}
	return endpoint, nil
}

// nodeByAddr finds the node listening on addr, directly or behind a link.
func nodeByAddr(env *Env, addr string) (cluster.Node, bool) {
	nodes := env.Cluster.Nodes()
	for _, n := range nodes {
		if n.Addr == addr {
			return n, true
		}
	}
	if env.Network != nil {
		for _, l := range env.Network.Links() {
			if env.Network.Addr(l) != addr {
				continue
			}
			if _, to, ok := linknet.SplitName(l); ok {
				for _, n := range nodes {
					if n.Name == to {
						return n, true
					}
				}
			}
		}
	}
	return cluster.Node{}, false
}

// primaryEndpoint returns the node the workers know as "the primary": the
// first node with a primary or replica role (n1), which had the primary
// role when the workers were given their endpoints; the cluster reports
// current roles, so after a failover it may be a replica. Its worker links
// ("w3->n1") are the workers' way to whichever node serves as primary.
func primaryEndpoint(env *Env) (cluster.Node, error) {
	for _, n := range env.Cluster.Nodes() {
		if n.Role == cluster.RolePrimary || n.Role == cluster.RoleReplica {
			return n, nil
		}
	}
	return cluster.Node{}, fmt.Errorf("%w: no node has the primary role", cluster.ErrUnavailable)
}

// switchWorkers points every worker link to the primary endpoint at to.Addr
// and returns how many links changed. Their connections are closed.
func switchWorkers(env *Env, to cluster.Node) (int, error) {
	endpoint, err := primaryEndpoint(env)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range env.Network.LinksTo(endpoint.Name) {
		f, _, _ := linknet.SplitName(l)
		if !IsWorkerTarget(f) || env.Network.Upstream(l) == to.Addr {
			continue
		}
		if err := env.Network.SetUpstream(l, to.Addr); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func redisPrimaryAvailable(env *Env) error {
	if err := networkAvailable(env); err != nil {
		return err
	}
	if env.Cluster.System() != cluster.Redis {
		return fmt.Errorf("%w: failover is for redis, not %s", cluster.ErrUnavailable, env.Cluster.System())
	}
	return nil
}

// Failover promotes a Redis replica whose replication is asynchronous, the
// way an operator or a script would: it cuts the replication links into the
// current primary (writes acknowledged from then on are never replicated),
// waits for the lag option (default 0), promotes the replica (the target
// node, or the first node that replicates) with the cluster's
// cluster.Failoverer (which also repoints the other replicas) or else with
// REPLICAOF NO ONE, and points the workers' links to the primary endpoint
// (the first node with the primary role, "w3->n1") at the promoted node,
// which closes the workers' connections. In a Redis Cluster
// (cluster.Router) the bus links stay up, the promotion is CLUSTER
// FAILOVER FORCE, and the workers' links stay as they are: the old master
// learns of the promotion over the bus and redirects the workers (MOVED).
//
// Its heal (option heal) is rejoin (the default): the cut links are healed
// and the old primary becomes a replica of the new one, dropping the writes
// that were never replicated; or keep: the cut links are healed and the old
// primary stays an isolated primary that no worker reaches. The workers
// stay switched to the new primary either way. It makes no node
// unavailable: the old primary serves the workers until they are switched,
// and the promoted one after; the cut replication links lose writes, not
// the lock service.
type Failover struct{}

// Facts returns the failover's facts, declared in faultkind.Failover.
func (Failover) Facts() Facts {
	return faultkind.Failover()
}

// Name returns the fault's name.
func (f Failover) Name() string { return f.Facts().Name }

// Available reports whether the cluster is Redis with a replica.
func (Failover) Available(env *Env) error {
	if err := redisPrimaryAvailable(env); err != nil {
		return err
	}
	if f, ok := env.Cluster.(cluster.Failoverer); ok {
		ctx, cancel := context.WithTimeout(context.Background(), redisAdminTimeout)
		defer cancel()
		if _, err := f.Primary(ctx); err != nil {
			if errors.Is(err, cluster.ErrUnavailable) {
				return err
			}
			return fmt.Errorf("%w: %w", cluster.ErrUnavailable, err)
		}
		return nil
	}
	if _, err := ResolveNodes([]string{TargetReplicas}, env.Cluster.Nodes(), nil); err != nil {
		return fmt.Errorf("%w: failover needs a replica (topology primary-replica)", cluster.ErrUnavailable)
	}
	return nil
}

// Check checks the options.
func (Failover) Check(step Step) error {
	if err := checkOptions(step, []string{"lag", "heal"}, "lag"); err != nil {
		return err
	}
	_, err := choiceOption(step, "heal", "rejoin", "keep")
	return err
}

// Inject carries out the failover.
func (Failover) Inject(ctx context.Context, env *Env, step Step) (Heal, any, error) {
	lag, err := durationOption(step, "lag", 0)
	if err != nil {
		return nil, nil, err
	}
	healMode, err := choiceOption(step, "heal", "rejoin", "keep")
	if err != nil {
		return nil, nil, err
	}
	old, err := currentPrimary(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	promoted, err := pickReplica(ctx, env, step, old)
	if err != nil {
		return nil, nil, err
	}
	desc := map[string]any{"old": old.Name, "new": promoted.Name, "heal": healMode}
	if lag > 0 {
		desc["lag"] = lag.String()
	}

	cut := replicationInto(env, old)
	cable := linknet.Fault{Kind: linknet.FaultCut}
	if len(cut) > 0 {
		if err := env.links.apply(env.Network, cable, cut...); err != nil {
			return nil, desc, err
		}
	}
	healLinks := func() error {
		if len(cut) == 0 {
			return nil
		}
		return env.links.heal(env.Network, cable, cut...)
	}
	partial := func(context.Context) error { return healLinks() }
	if err := sleepCtx(ctx, lag); err != nil {
		return partial, desc, err
	}

	if f, ok := env.Cluster.(cluster.Failoverer); ok && !hasSentinels(env) {
		err = f.Promote(ctx, promoted.Name)
	} else {
		err = redisDo(ctx, promoted.Addr, "REPLICAOF", "NO", "ONE").Err()
	}
	if err != nil {
		return partial, desc, fmt.Errorf("%w: promoting %s: %w", ErrFailover, promoted.Name, err)
	}
	switched := 0
	if r, ok := env.Cluster.(cluster.Router); !ok || !r.RoutesClients() {
		switched, err = switchWorkers(env, promoted)
	}
	desc["switched"] = switched
	if err != nil {
		return partial, desc, err
	}
	heal := func(ctx context.Context) error {
		errs := []error{healLinks()}
		if healMode == "rejoin" {
			errs = append(errs, follow(ctx, env, old, promoted))
		}
		return errors.Join(errs...)
	}
	return heal, desc, nil
}

// replicationInto returns the links through which nodes replicate from
// node: every node-to-node link into it but a Redis Cluster's bus
// (cluster.ClusterBus), which carries the cluster's view, not its data.
func replicationInto(env *Env, node cluster.Node) []string {
	var out []string
	for _, l := range env.Network.LinksTo(node.Name) {
		from, _, _ := linknet.SplitName(l)
		if isNode(env.Cluster.Nodes(), from) && !strings.HasSuffix(l, linknet.PurposeSeparator+cluster.ClusterBus) {
			out = append(out, l)
		}
	}
	return out
}

// pickReplica returns the node to promote: the step's single target, or the
// first server node other than current that replicates.
func pickReplica(ctx context.Context, env *Env, step Step, current cluster.Node) (cluster.Node, error) {
	nodes := env.Cluster.Nodes()
	if len(step.Targets) > 0 {
		names, err := ResolveNodes(step.Targets, nodes, env.Rand)
		if err != nil {
			return cluster.Node{}, err
		}
		if len(names) != 1 || names[0] == current.Name {
			return cluster.Node{}, fmt.Errorf("%w: targets %v must name one node other than the primary %s", ErrTarget, step.Targets, current.Name)
		}
		for _, n := range nodes {
			if n.Name == names[0] {
				return n, nil
			}
		}
	}
	for _, n := range serverNodes(nodes) {
		if n.Name == current.Name {
			continue
		}
		if role, err := redisRole(ctx, n.Addr); err == nil && role == "slave" {
			return n, nil
		}
	}
	return cluster.Node{}, fmt.Errorf("%w: no replica of %s answers", ErrFailover, current.Name)
}

// follow makes node a replica of primary, through the link node->primary
// when there is one.
func follow(ctx context.Context, env *Env, node, primary cluster.Node) error {
	if f, ok := env.Cluster.(Follower); ok {
		return f.Follow(ctx, node.Name, primary.Name)
	}
	link := linknet.Name(node.Name, primary.Name)
	addr := env.Network.Addr(link)
	if addr == "" {
		a, err := env.Network.Link(link, primary.Addr)
		if err != nil {
			return fmt.Errorf("nemesis: %w", err)
		}
		addr = a
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	if err := redisDo(ctx, node.Addr, "REPLICAOF", host, port).Err(); err != nil {
		return fmt.Errorf("%w: making %s a replica of %s: %w", ErrFailover, node.Name, primary.Name, err)
	}
	return nil
}

// DefaultSentinelTimeout bounds how long sentinel-failover waits for the
// sentinels to promote a replica.
const DefaultSentinelTimeout = 30 * time.Second

// SentinelFailover lets Redis Sentinel do the promotion: it pauses (option
// how: pause, the default) or kills (how: kill) the current primary, waits
// until the sentinels report another primary (asked through the cluster's
// cluster.Failoverer, or else directly with option master, the monitored
// name, default "mymaster"; option timeout, default 30s), and points the
// workers' links to the primary endpoint at the new one.
// Its heal resumes or starts the old primary, which the sentinels then turn
// into a replica of the new one. Injection blocks the schedule while the
// sentinels elect. The old primary is unavailable from just before it is
// paused or killed until the heal has resumed or started it.
type SentinelFailover struct{}

// Facts returns the sentinel failover's facts, declared in faultkind.SentinelFailover.
func (SentinelFailover) Facts() Facts {
	return faultkind.SentinelFailover()
}

// Name returns the fault's name.
func (f SentinelFailover) Name() string { return f.Facts().Name }

// Available reports whether the cluster is Redis with sentinels.
func (SentinelFailover) Available(env *Env) error {
	if err := redisPrimaryAvailable(env); err != nil {
		return err
	}
	if hasSentinels(env) {
		return nil
	}
	return fmt.Errorf("%w: sentinel-failover needs sentinels (topology sentinel)", cluster.ErrUnavailable)
}

// Check checks the options.
func (SentinelFailover) Check(step Step) error {
	if err := checkOptions(step, []string{"how", "master", "timeout"}, "timeout"); err != nil {
		return err
	}
	_, err := choiceOption(step, "how", "pause", "kill")
	return err
}

// Inject takes the primary down and waits for the sentinels.
func (SentinelFailover) Inject(ctx context.Context, env *Env, step Step) (Heal, any, error) {
	how, err := choiceOption(step, "how", "pause", "kill")
	if err != nil {
		return nil, nil, err
	}
	timeout, err := durationOption(step, "timeout", DefaultSentinelTimeout)
	if err != nil {
		return nil, nil, err
	}
	master := step.Options["master"]
	if master == "" {
		master = "mymaster"
	}
	old, err := currentPrimary(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	desc := map[string]any{"old": old.Name, "how": how}
	var down, up func(ctx context.Context, node string) error
	switch how {
	case "kill":
		k, ok := env.Cluster.(cluster.Killer)
		if !ok {
			return nil, desc, fmt.Errorf("%w: the cluster cannot kill nodes", cluster.ErrUnavailable)
		}
		down, up = k.Kill, k.Start
	default:
		p, ok := env.Cluster.(cluster.Pauser)
		if !ok {
			return nil, desc, fmt.Errorf("%w: the cluster cannot pause nodes", cluster.ErrUnavailable)
		}
		down, up = p.Pause, p.Resume
	}
	var downErr error
	out := env.takeDownWhile(SentinelFailover{}.Facts(), []string{old.Name}, false, func() []string {
		if downErr = down(ctx, old.Name); downErr != nil {
			return []string{old.Name} // never down
		}
		return nil
	})
	if downErr != nil {
		return nil, desc, downErr
	}
	heal := func(ctx context.Context) error {
		if err := up(context.WithoutCancel(ctx), old.Name); err != nil {
			return err
		}
		out.bringUpAll()
		return nil
	}
	began := time.Now()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	promoted, err := awaitNewPrimary(wctx, env, master, old)
	if err != nil {
		return heal, desc, fmt.Errorf("%w: sentinels did not promote a replica of %s: %w", ErrFailover, old.Name, err)
	}
	desc["new"] = promoted.Name
	desc["elected-after"] = time.Since(began).Round(time.Millisecond).String()
	switched := 0
	if r, ok := env.Cluster.(cluster.Router); !ok || !r.RoutesClients() {
		switched, err = switchWorkers(env, promoted)
	}
	desc["switched"] = switched
	return heal, desc, err
}

// hasSentinels reports whether the cluster has sentinel nodes.
func hasSentinels(env *Env) bool {
	for _, n := range env.Cluster.Nodes() {
		if n.Role == "sentinel" {
			return true
		}
	}
	return false
}

// awaitNewPrimary polls until the cluster or its sentinels report a primary
// other than old.
func awaitNewPrimary(ctx context.Context, env *Env, master string, old cluster.Node) (cluster.Node, error) {
	var last error
	for {
		n, err := reportedPrimary(ctx, env, master)
		if err == nil && n.Name != old.Name {
			return n, nil
		}
		if err != nil {
			last = err
		}
		if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
			return cluster.Node{}, errors.Join(err, last)
		}
	}
}

func reportedPrimary(ctx context.Context, env *Env, master string) (cluster.Node, error) {
	if _, ok := env.Cluster.(cluster.Failoverer); ok {
		return currentPrimary(ctx, env)
	}
	var errs []error
	for _, s := range env.Cluster.Nodes() {
		if s.Role != "sentinel" {
			continue
		}
		v, err := redisDo(ctx, s.Addr, "SENTINEL", "get-master-addr-by-name", master).StringSlice()
		if err != nil || len(v) != 2 {
			errs = append(errs, fmt.Errorf("nemesis: sentinel %s: %v %w", s.Name, v, err))
			continue
		}
		if n, ok := nodeByAddr(env, net.JoinHostPort(v[0], v[1])); ok {
			return n, nil
		}
		errs = append(errs, fmt.Errorf("nemesis: sentinel %s reports %s:%s, which is no node", s.Name, v[0], v[1]))
	}
	return cluster.Node{}, errors.Join(errs...)
}
