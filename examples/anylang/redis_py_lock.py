"""redis-py's redis.lock.Lock (Debian's python3-redis) as a jepsen-lite lock
client (docs/lock-protocol.md).

The lock is SET key token NX PX ttl on the primary, released by a Lua
compare-and-delete and extended by a Lua compare-and-pexpire; the token is a
uuid1 the library draws. On a Redis Cluster, whose node answers the
first command with MOVED (which it did not execute), the client becomes
redis-py's RedisCluster (redis.cluster) over every endpoint and sends the
command again: the lock's commands then go to the master of the key's
slot. The harness's Redis Cluster names its nodes by their node names
(MOVED, CLUSTER SLOTS), and a connection to a node so named dials the
worker's endpoint of that name. RedisCluster tries each command once
(cluster_error_retry_attempts=1): a retried SET NX could find its own key. Its lease is the PX it sets. redis-py keeps no
validity of its own: this client reports the one a user of the lock
assumes, the moment the SET was sent plus the ttl, with no allowance for
clock drift (the library has none). The lock has no fencing token.

    python3 examples/anylang/redis_py_lock.py
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lockproto  # noqa: E402  (puts Debian's packages on sys.path)

lockproto.read_init()  # first: the clock starts when init is read

import redis  # noqa: E402
import redis.cluster  # noqa: E402
import redis.connection  # noqa: E402
import redis.lock  # noqa: E402
from redis.exceptions import LockNotOwnedError, RedisError, ResponseError  # noqa: E402


class StampedLock(redis.lock.Lock):
    """redis-py's Lock, noting when each SET NX PX is sent: the lease a
    winning SET grants starts after that moment."""

    sent_ms = None

    def do_acquire(self, token):
        self.sent_ms = lockproto.now_ms()
        return super().do_acquire(token)


# ROUTES maps a node name, as the harness's Redis Cluster announces it, to
# the worker's endpoint of that name.
ROUTES = {}
_plain_connect = redis.connection.Connection._connect


def _routed_connect(self):
    """Connection._connect, dialling a node named by its node name at the
    worker's endpoint of that name and any other address as it is. redis-py
    4.3's RedisCluster takes no connection class of its own (its nodes'
    Redis refuses connection_class), so the method is replaced in this
    process."""
    route = ROUTES.get(self.host)
    if route is None:
        return _plain_connect(self)
    named = self.host, self.port
    self.host, self.port = route
    try:
        return _plain_connect(self)
    finally:
        self.host, self.port = named


redis.connection.Connection._connect = _routed_connect


def cluster_client(endpoints, timeout):
    """redis-py's RedisCluster over every endpoint that is not a sentinel."""
    ROUTES.update({ep["name"]: lockproto.host_port(ep["addr"]) for ep in endpoints})
    startup = [redis.cluster.ClusterNode(*lockproto.host_port(ep["addr"]))
               for ep in endpoints if ep.get("role") != "sentinel"]
    return redis.cluster.RedisCluster(
        startup_nodes=startup,
        socket_timeout=timeout, socket_connect_timeout=timeout,
        cluster_error_retry_attempts=1)


class RedisPyLock:
    """The protocol's requests on redis-py's Lock."""

    abilities = ["renew", "wait", "after-response"]

    def __init__(self):
        self.client = "redis-py %s redis.lock.Lock (python %d.%d)" % (
            redis.__version__, sys.version_info[0], sys.version_info[1])
        self.redis = None
        self.cluster = False
        self.endpoints, self.timeout = [], 0.5
        self.held = {}  # (key, owner) -> StampedLock

    def start(self, init):
        ep = lockproto.pick_primary(init["endpoints"])
        host, port = lockproto.host_port(ep["addr"])
        timeout = lockproto.seconds(init.get("options", {}).get("timeout"), 0.5)
        self.endpoints, self.timeout = init["endpoints"], timeout
        # No retries (the default): a retried SET NX could find its own key.
        self.redis = redis.Redis(host=host, port=port, socket_timeout=timeout,
                                 socket_connect_timeout=timeout)
        lockproto.log.info("redis %s (%s), timeout %.3fs", ep["addr"], ep.get("name"), timeout)

    def connect(self, key):
        """Open (or check) a pooled connection before the library's call,
        as the pool does before it sends a command (on a cluster, the pool
        of the node the client takes for the key's master). A failure here
        proves that nothing was sent; the library's call then takes this
        very connection from the pool."""
        if self.cluster:
            pool = self.redis.get_node_from_key(key).redis_connection.connection_pool
        else:
            pool = self.redis.connection_pool
        conn = pool.get_connection("SET")
        pool.release(conn)

    def following(self, call):
        """Run call(); a MOVED reply, which the node did not execute, says
        that the server is a Redis Cluster: the client becomes a
        RedisCluster and runs call once more."""
        try:
            return call()
        except ResponseError as e:
            if self.cluster or not str(e).startswith("MOVED "):
                raise
        lockproto.log.info("MOVED: a Redis Cluster of %d endpoints", len(self.endpoints))
        self.redis.close()
        self.redis = cluster_client(self.endpoints, self.timeout)
        self.cluster = True
        return call()

    def acquire(self, req):
        key, ttl_ms = req["key"], req["ttl_ms"]
        wait_ms = req.get("wait_ms") or 0
        locks = []

        def call():
            try:
                self.connect(key)
            except RedisError as e:
                return None, "connect: %s: nothing was sent" % e
            lock = StampedLock(self.redis, key, timeout=ttl_ms / 1000.0)
            locks.append(lock)
            if wait_ms > 0:
                return lock.acquire(blocking=True, blocking_timeout=wait_ms / 1000.0), None
            return lock.acquire(blocking=False), None

        got, unsent = self.following(call)
        if unsent is not None:
            return lockproto.refused("not-acquired", unsent)
        lock = locks[-1]
        if not got:
            return lockproto.refused("not-acquired", "held by another (SET NX returned nil)")
        lockproto.after_response(req["id"])
        px = int(lock.timeout * 1000)  # the PX do_acquire set
        owner = lock.local.token.decode()
        self.held[(key, owner)] = lock
        return lockproto.ok(owner=owner, until_ms=lock.sent_ms + px, lease_ms=px,
                            session=False)

    def lock_of(self, req):
        """Return the Lock object of the grant req names."""
        lock = self.held.get((req["key"], req["owner"]))
        if lock is None:
            # Not ours in this process: a Lock that knows the token.
            lock = StampedLock(self.redis, req["key"], timeout=req.get("ttl_ms", 1000) / 1000.0)
            lock.local.token = req["owner"].encode()
        return lock

    def release(self, req):
        lock = self.lock_of(req)
        self.held.pop((req["key"], req["owner"]), None)

        token = lock.local.token

        def call():
            # Lock.release forgets the token before it sends the script.
            lock.redis, lock.local.token = self.redis, token
            lock.release()

        try:
            self.following(call)
        except LockNotOwnedError:
            return lockproto.refused("not-held", "the key no longer holds our token")
        return lockproto.ok()

    def renew(self, req):
        # Lock.extend(t, replace_ttl=True) sets the key's expiry to exactly
        # the renewal's ttl_ms from when the script runs; extend without it
        # adds to what is left, and reacquire() can only restore the ttl the
        # Lock was made with, not the ttl_ms the renewal asks for.
        lock = self.lock_of(req)
        ttl_ms = req["ttl_ms"]
        sent = lockproto.now_ms()

        def call():
            lock.redis = self.redis
            lock.extend(ttl_ms / 1000.0, replace_ttl=True)

        try:
            self.following(call)
        except LockNotOwnedError:
            return lockproto.refused("not-held", "the key no longer holds our token")
        px = int(ttl_ms / 1000.0 * 1000)  # the PEXPIRE do_extend set
        return lockproto.ok(owner=req["owner"], until_ms=sent + px, lease_ms=px, session=False)

    def close(self):
        if self.redis is not None:
            self.redis.close()


if __name__ == "__main__":
    lockproto.serve(RedisPyLock())
