"""redis-py's redis.lock.Lock (Debian's python3-redis) as a jepsen-lite lock
client (docs/lock-protocol.md).

The lock is SET key token NX PX ttl on the primary, released by a Lua
compare-and-delete and extended by a Lua compare-and-pexpire; the token is a
uuid1 the library draws. Its lease is the PX it sets. redis-py keeps no
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
import redis.lock  # noqa: E402
from redis.exceptions import LockNotOwnedError, RedisError  # noqa: E402


class StampedLock(redis.lock.Lock):
    """redis-py's Lock, noting when each SET NX PX is sent: the lease a
    winning SET grants starts after that moment."""

    sent_ms = None

    def do_acquire(self, token):
        self.sent_ms = lockproto.now_ms()
        return super().do_acquire(token)


class RedisPyLock:
    """The protocol's requests on redis-py's Lock."""

    abilities = ["renew", "wait", "after-response"]

    def __init__(self):
        self.client = "redis-py %s redis.lock.Lock (python %d.%d)" % (
            redis.__version__, sys.version_info[0], sys.version_info[1])
        self.redis = None
        self.held = {}  # (key, owner) -> StampedLock

    def start(self, init):
        ep = lockproto.pick_primary(init["endpoints"])
        host, port = lockproto.host_port(ep["addr"])
        timeout = lockproto.seconds(init.get("options", {}).get("timeout"), 0.5)
        # No retries (the default): a retried SET NX could find its own key.
        self.redis = redis.Redis(host=host, port=port, socket_timeout=timeout,
                                 socket_connect_timeout=timeout)
        lockproto.log.info("redis %s (%s), timeout %.3fs", ep["addr"], ep.get("name"), timeout)

    def connect(self):
        """Open (or check) a pooled connection before the library's call,
        as the pool does before it sends a command. A failure here proves
        that nothing was sent; the library's call then takes this very
        connection from the pool."""
        pool = self.redis.connection_pool
        conn = pool.get_connection("SET")
        pool.release(conn)

    def acquire(self, req):
        key, ttl_ms = req["key"], req["ttl_ms"]
        wait_ms = req.get("wait_ms") or 0
        try:
            self.connect()
        except RedisError as e:
            return lockproto.refused("not-acquired", "connect: %s: nothing was sent" % e)
        lock = StampedLock(self.redis, key, timeout=ttl_ms / 1000.0)
        if wait_ms > 0:
            got = lock.acquire(blocking=True, blocking_timeout=wait_ms / 1000.0)
        else:
            got = lock.acquire(blocking=False)
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
        try:
            lock.release()
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
        try:
            lock.extend(ttl_ms / 1000.0, replace_ttl=True)
        except LockNotOwnedError:
            return lockproto.refused("not-held", "the key no longer holds our token")
        px = int(ttl_ms / 1000.0 * 1000)  # the PEXPIRE do_extend set
        return lockproto.ok(owner=req["owner"], until_ms=sent + px, lease_ms=px, session=False)

    def close(self):
        if self.redis is not None:
            self.redis.close()


if __name__ == "__main__":
    lockproto.serve(RedisPyLock())
