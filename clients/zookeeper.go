package clients

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// Defaults of the zk-recipe options.
const (
	// DefaultZKSessionTimeout is the session timeout the client asks for
	// (option "session-timeout"); the server clamps it to between 2 and 20
	// of its ticks.
	DefaultZKSessionTimeout = 2 * time.Second
	// DefaultZKWait is how long one Acquire waits for its predecessor to go
	// away before giving up (option "wait"; 0 gives up at once).
	DefaultZKWait = time.Second
)

// zkLocksRoot is the parent of every lock's directory: /locks/<key>.
const zkLocksRoot = "/locks"

// zkSeqDigits is the width of ZooKeeper's sequence suffix.
const zkSeqDigits = 10

// ZKRecipe is ZooKeeper's lock recipe with ephemeral sequential nodes, via
// go-zookeeper/zk: Acquire creates a protected ephemeral sequential node
// /locks/<key>/_c_<guid>-lock-<seq>; the lowest sequence holds the lock; any
// other node watches only its predecessor (ExistsW) and re-reads the children
// when the predecessor goes. One Acquire waits at most the "wait" option (and
// never past ctx's deadline); if it still is not lowest it deletes its node
// and returns ErrNotAcquired (an indeterminate error if that delete failed:
// the node is then deleted at the next Acquire, as is any node of the
// session that a failed create may have left). ZooKeeper calls cannot be
// cancelled: a call on a broken connection returns when the client gives up
// on the connection, within about the session timeout.
//
// The token is the node's creation zxid (Stat.Czxid), ensemble-wide
// monotonic. Leases have no Until: the lock lasts as long as the session.
// The service frees it when the session expires, at the earliest the
// negotiated session timeout (the server's answer to the connect request, not
// the timeout asked for) after the create was sent: Lease.Expires, with
// Session set (Close ends the session and deletes the node). As a
// LeaseWatcher, a lease is lost as soon as the client cannot be sure its
// session lives: at the first Disconnected event (Curator's advice on
// SUSPENDED; by then the server may have used two thirds of the timeout, the
// client's read timeout, without hearing from us), when the session expires,
// or when a new session replaced it. Release deletes the node; ErrNotHeld when it was gone;
// a node whose delete failed is deleted again at the next Acquire.
// Options: "session-timeout" (default DefaultZKSessionTimeout), "wait"
// (default DefaultZKWait).
type ZKRecipe struct {
	stepHook
	conn    *zk.Conn
	wait    time.Duration
	parents map[string]bool
	orphans []string        // our nodes whose delete failed
	unsure  map[string]bool // lock directories where a create failed: a node of ours may be there, its path unknown

	// negotiated is the session timeout the server granted, in ns, as
	// the client logs it after each handshake (0 until the first).
	negotiated atomic.Int64

	mu      sync.Mutex
	session int64              // the current session's id, 0 while there is none
	leases  map[string]zkLease // by node path
}

// zkLease is a held lease and the session it belongs to.
type zkLease struct {
	session int64
	lost    chan struct{}
}

var (
	_ Locker       = (*ZKRecipe)(nil)
	_ Renewer      = (*ZKRecipe)(nil)
	_ LeaseWatcher = (*ZKRecipe)(nil)
)

// zkAuthenticated is the format of go-zookeeper's log line after a
// handshake; its second argument is the session timeout the server granted,
// in milliseconds, which the client keeps unexported.
const zkAuthenticated = "authenticated: id=%d, timeout=%d"

// zkLogger drops go-zookeeper's log lines and keeps the negotiated session
// timeout from the handshake line.
type zkLogger struct{ negotiated *atomic.Int64 }

func (l zkLogger) Printf(format string, args ...any) {
	if format != zkAuthenticated || len(args) != 2 {
		return
	}
	if ms, ok := args[1].(int32); ok && ms > 0 {
		l.negotiated.Store(int64(time.Duration(ms) * time.Millisecond))
	}
}

// NewZKRecipe is the zk-recipe Factory; the client connects to every
// endpoint that is not a replica or sentinel.
func NewZKRecipe(ctx context.Context, t Target) (Locker, error) {
	const name = "zk-recipe"
	opts, err := readOptions(name, t.Options, zkRecipeOptions, false)
	if err != nil {
		return nil, err
	}
	sessionTimeout, wait := opts.duration(optZKSessionTimeout), opts.duration(optZKWait)
	z := &ZKRecipe{
		wait:    wait,
		parents: map[string]bool{},
		unsure:  map[string]bool{},
		leases:  map[string]zkLease{},
	}
	// Events wait on z.mu until z.conn is set.
	z.mu.Lock()
	defer z.mu.Unlock()
	conn, err := zkConnect(name, t, sessionTimeout, &z.negotiated, z.onEvent)
	if err != nil {
		return nil, err
	}
	z.conn = conn
	return z, nil
}

// zkConnect connects to every endpoint of t that is not a replica or
// sentinel, asking for sessionTimeout, with t's TCP timeouts; the client's handshake log line
// stores the negotiated timeout in negotiated, and onEvent follows the
// session's events.
func zkConnect(name string, t Target, sessionTimeout time.Duration, negotiated *atomic.Int64, onEvent func(zk.Event)) (*zk.Conn, error) {
	peers, err := peerEndpoints(name, t.Endpoints)
	if err != nil {
		return nil, err
	}
	var servers []string
	for _, p := range peers {
		servers = append(servers, p.Addr)
	}
	conn, _, err := zk.Connect(servers, sessionTimeout, zk.WithDialer(zkDialer(t.TCP)),
		zk.WithLogger(zkLogger{negotiated}), zk.WithLogInfo(true), zk.WithEventCallback(onEvent))
	if err != nil {
		return nil, fmt.Errorf("clients: %s: connect: %w", name, err)
	}
	return conn, nil
}

// onEvent follows the session's state; it runs on the client's own goroutine
// and must not call the client.
func (z *ZKRecipe) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if lost := zkFollow(ev, z.conn, &z.session); lost != nil {
		z.loseLeasesLocked(func(l zkLease) bool { return lost(l.session) })
	}
}

// zkFollow applies a session event to *session (the current session's id, 0
// while there is none) and returns which leases it loses, by the session
// they were granted in, or nil when it loses none: a new session loses the
// leases of every other one; an expiry or a disconnect loses them all (the
// client cannot be sure its session lives).
func zkFollow(ev zk.Event, conn *zk.Conn, session *int64) func(leaseSession int64) bool {
	switch ev.State {
	case zk.StateHasSession:
		*session = conn.SessionID()
		current := *session
		return func(s int64) bool { return s != current }
	case zk.StateExpired:
		*session = 0
		return func(int64) bool { return true }
	case zk.StateDisconnected:
		return func(int64) bool { return true }
	}
	return nil
}

// loseLeasesLocked closes the Lost channel of every lease that match selects
// and forgets it. z.mu is held.
func (z *ZKRecipe) loseLeasesLocked(match func(zkLease) bool) {
	for path, l := range z.leases {
		if match(l) {
			close(l.lost)
			delete(z.leases, path)
		}
	}
}

// Lost returns a channel closed when the lease's session ended; for a lease
// that is not held (released, lost, never ours) it is already closed.
func (z *ZKRecipe) Lost(l Lease) <-chan struct{} {
	z.mu.Lock()
	defer z.mu.Unlock()
	if held, ok := z.leases[l.Owner]; ok {
		return held.lost
	}
	closed := make(chan struct{})
	close(closed)
	return closed
}

// zkSequence returns the sequence number a sequential node's name ends with.
func zkSequence(name string) (int64, error) {
	if len(name) < zkSeqDigits {
		return 0, fmt.Errorf("clients: zk-recipe: %q has no sequence", name)
	}
	seq, err := strconv.ParseInt(name[len(name)-zkSeqDigits:], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("clients: zk-recipe: %q has no sequence: %w", name, err)
	}
	return seq, nil
}

// zkPredecessor returns the child just below ours in sequence order, or ""
// when ours is the lowest. Children that are not lock nodes are ignored.
func zkPredecessor(children []string, ours string) (string, error) {
	mySeq, err := zkSequence(ours)
	if err != nil {
		return "", err
	}
	type node struct {
		name string
		seq  int64
	}
	var lower []node
	for _, c := range children {
		if !strings.Contains(c, "lock-") {
			continue
		}
		seq, err := zkSequence(c)
		if err != nil {
			continue
		}
		if seq < mySeq {
			lower = append(lower, node{c, seq})
		}
	}
	if len(lower) == 0 {
		return "", nil
	}
	best := slices.MaxFunc(lower, func(a, b node) int { return int(a.seq - b.seq) })
	return best.name, nil
}

func (z *ZKRecipe) ensureParent(key string) (string, error) {
	if key == "" || strings.Contains(key, "/") {
		return "", fmt.Errorf("clients: zk-recipe: key %q must be a non-empty node name without '/'", key)
	}
	dir := zkLocksRoot + "/" + key
	if z.parents[dir] {
		return dir, nil
	}
	z.step("parent")
	for _, p := range []string{zkLocksRoot, dir} {
		if _, err := z.conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return "", fmt.Errorf("clients: zk-recipe: %s: %w", p, beforeGrant("parent", err))
		}
	}
	z.parents[dir] = true
	return dir, nil
}

// deleteOrphans deletes the nodes earlier Acquires could not delete, and,
// in a directory where a create failed, every node of the current session
// that holds no lease of ours: the create may have made one whose path the
// client never learned (go-zookeeper finds a protected node again only when
// its own retry can list the children).
func (z *ZKRecipe) deleteOrphans() {
	var left []string
	for _, p := range z.orphans {
		if err := z.conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			left = append(left, p)
		}
	}
	z.orphans = left
	for dir := range z.unsure {
		if z.deleteStrays(dir) == nil {
			delete(z.unsure, dir)
		}
	}
}

// deleteStrays deletes the nodes in dir owned by the current session that
// are not held leases.
func (z *ZKRecipe) deleteStrays(dir string) error {
	children, _, err := z.conn.Children(dir)
	if err != nil {
		return err
	}
	z.mu.Lock()
	session := z.session
	held := make(map[string]bool, len(z.leases))
	for p := range z.leases {
		held[p] = true
	}
	z.mu.Unlock()
	if session == 0 {
		return errors.New("no session")
	}
	for _, c := range children {
		p := dir + "/" + c
		if held[p] {
			continue
		}
		ok, stat, err := z.conn.Exists(p)
		if err != nil {
			return err
		}
		if ok && stat.EphemeralOwner == session {
			if err := z.conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
	}
	return nil
}

// Acquire runs the recipe once, waiting for its predecessor up to the "wait"
// option; ttl is not used (the session is the lease).
func (z *ZKRecipe) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	return z.acquire(ctx, key, z.wait)
}

// AcquireWait runs the recipe once, waiting for its predecessor up to wait:
// the recipe's own way of blocking.
func (z *ZKRecipe) AcquireWait(ctx context.Context, key string, ttl, wait time.Duration) (Lease, error) {
	return z.acquire(ctx, key, wait)
}

// acquire runs the recipe once. Its steps (zkRecipeSteps): parent creates
// the lock's persistent directory (once per key and client), which holds no
// lock: a failure there, a network error included, is ErrNotAcquired
// (recorded fail). create makes our ephemeral sequential node, which holds
// the lock at once when it is the lowest: a failure there is indeterminate
// (the node may exist; it is looked for and deleted at the next acquire).
// wait reads the children, watches the predecessor and reads our node: the
// lock may be ours by then, so a failure gives the node up, and the acquire
// is ErrNotAcquired only when that delete succeeded. The deletes of nodes
// that earlier acquires left behind come first; they free, never take.
func (z *ZKRecipe) acquire(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	z.deleteOrphans()
	dir, err := z.ensureParent(key)
	if err != nil {
		return Lease{}, err
	}
	start := time.Now()
	z.step("create")
	path, err := z.conn.CreateProtectedEphemeralSequential(dir+"/lock-", nil, zk.WorldACL(zk.PermAll))
	if err != nil {
		z.unsure[dir] = true
		return Lease{}, fmt.Errorf("clients: zk-recipe: create node under %s: %w", dir, err)
	}
	name := path[strings.LastIndex(path, "/")+1:]

	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	giveUp := func(cause error) (Lease, error) { return z.giveUp(path, cause) }
	z.step("wait")
	if err := z.waitTurn(ctx, key, dir, name, deadline); err != nil {
		return giveUp(err)
	}
	exists, stat, err := z.conn.Exists(path)
	if err != nil {
		return giveUp(fmt.Errorf("stat %s: %w", path, err))
	}
	if !exists {
		return Lease{}, fmt.Errorf("clients: zk-recipe: our node %s vanished (session expired): %w", path, ErrOutcomeUnknown)
	}
	negotiated := time.Duration(z.negotiated.Load())
	if negotiated <= 0 {
		// Unreachable: the client logs the handshake before it sends a
		// request.
		return giveUp(errors.New("no session timeout was logged by the client"))
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.session == 0 || stat.EphemeralOwner != z.session {
		// The node belongs to a session that is gone or going.
		return Lease{}, fmt.Errorf("clients: zk-recipe: session changed during acquire of %s: %w", key, ErrOutcomeUnknown)
	}
	z.leases[path] = zkLease{session: z.session, lost: make(chan struct{})}
	return Lease{Key: key, Token: uint64(stat.Czxid), Owner: path, Expires: start.Add(negotiated), Session: true}, nil
}

// giveUp deletes our node at path after a failure (cause) that left the lock
// possibly ours, and returns the acquire's error: ErrNotAcquired once the
// node is gone, ErrOutcomeUnknown (the node kept as an orphan, to be deleted
// at the next acquire) when the delete failed.
func (z *ZKRecipe) giveUp(path string, cause error) (Lease, error) {
	if err := z.conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		z.orphans = append(z.orphans, path)
		return Lease{}, fmt.Errorf("clients: zk-recipe: %v; delete %s: %w: %w", cause, path, err, ErrOutcomeUnknown)
	}
	if errors.Is(cause, ErrNotAcquired) {
		return Lease{}, cause
	}
	// Our node is gone again: nothing is left to undo.
	return Lease{}, fmt.Errorf("clients: zk-recipe: %w: %w", cause, ErrNotAcquired)
}

// waitTurn waits until our node name is the lowest of dir's children, up to
// deadline: it returns nil then, and else why not, for giveUp.
func (z *ZKRecipe) waitTurn(ctx context.Context, key, dir, name string, deadline time.Time) error {
	for {
		children, _, err := z.conn.Children(dir)
		if err != nil {
			return fmt.Errorf("children of %s: %w", dir, err)
		}
		pred, err := zkPredecessor(children, name)
		if err != nil {
			return err
		}
		if pred == "" {
			return nil
		}
		exists, _, watch, err := z.conn.ExistsW(dir + "/" + pred)
		if err != nil {
			return fmt.Errorf("watch %s: %w", pred, err)
		}
		if !exists {
			continue
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("clients: zk-recipe: %s is held by %s: %w", key, pred, ErrNotAcquired)
		}
		timer := time.NewTimer(left)
		select {
		case <-watch:
			timer.Stop()
		case <-timer.C:
			return fmt.Errorf("clients: zk-recipe: %s is held by %s: %w", key, pred, ErrNotAcquired)
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("clients: zk-recipe: %s is held by %s: %w: %w", key, pred, ctx.Err(), ErrNotAcquired)
		}
	}
}

// Renew proves the lease's session alive by reading the lease's node: the
// server heard from the session when it answered, so the session lasts at
// least the negotiated timeout from before the request (Expires). The
// session's own heartbeats go on as well; ttl is not used. ErrNotHeld when
// the lease was lost or its node is gone.
func (z *ZKRecipe) Renew(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	z.mu.Lock()
	_, held := z.leases[l.Owner]
	z.mu.Unlock()
	if !held {
		return Lease{}, fmt.Errorf("clients: zk-recipe: renew %s: the lease was lost: %w", l.Owner, ErrNotHeld)
	}
	start := time.Now()
	exists, stat, err := z.conn.Exists(l.Owner)
	switch {
	case err != nil:
		return Lease{}, fmt.Errorf("clients: zk-recipe: renew %s: %w", l.Owner, err)
	case !exists:
		return Lease{}, fmt.Errorf("clients: zk-recipe: renew %s: the node is gone: %w", l.Owner, ErrNotHeld)
	}
	z.mu.Lock()
	lease, held := z.leases[l.Owner]
	z.mu.Unlock()
	if !held || stat.EphemeralOwner != lease.session {
		// Lost while we asked: the answer may come from a new session.
		return Lease{}, fmt.Errorf("clients: zk-recipe: renew %s: the lease was lost: %w", l.Owner, ErrNotHeld)
	}
	l.Expires = start.Add(time.Duration(z.negotiated.Load()))
	return l, nil
}

// Release deletes the lease's node.
func (z *ZKRecipe) Release(ctx context.Context, l Lease) error {
	z.mu.Lock()
	if held, ok := z.leases[l.Owner]; ok {
		delete(z.leases, l.Owner)
		close(held.lost)
	}
	z.mu.Unlock()
	err := z.conn.Delete(l.Owner, -1)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, zk.ErrNoNode):
		return fmt.Errorf("clients: zk-recipe: release %s: %w", l.Owner, ErrNotHeld)
	default:
		// Deleted at the next Acquire, so the node cannot outlive the
		// release for long while the session lives.
		z.orphans = append(z.orphans, l.Owner)
		return fmt.Errorf("clients: zk-recipe: release %s: %w", l.Owner, err)
	}
}

// Close closes the session, which deletes its ephemeral nodes.
func (z *ZKRecipe) Close() error {
	z.conn.Close()
	return nil
}
