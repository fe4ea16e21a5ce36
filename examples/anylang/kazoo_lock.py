"""kazoo's kazoo.recipe.lock.Lock (Debian's python3-kazoo) as a jepsen-lite
lock client (docs/lock-protocol.md).

The lock is ZooKeeper's recipe: an ephemeral sequential node under
/locks/<key>; the lowest sequence holds the lock; a waiter watches its
predecessor. The node lives as long as the session: the lock is a session
lock. As the built-in zk-recipe records it, its lease is the session timeout
the server negotiated (the session cannot expire sooner after the server last
heard from it, which is after the request arrived), with ``session: true``
and no ``until``. The fencing token is the node's creation zxid (czxid), read
with exists() on ``Lock.node``. kazoo's connection-state listener turns
SUSPENDED (the connection dropped: the session may be expiring) and LOST (it
expired) into ``lost`` notices, as kazoo's documentation advises.

    python3 examples/anylang/kazoo_lock.py
"""

import logging
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lockproto  # noqa: E402  (puts Debian's packages on sys.path)

lockproto.read_init()  # first: the clock starts when init is read

import kazoo  # noqa: E402
import kazoo.version  # noqa: E402
from kazoo.client import KazooClient, KazooState  # noqa: E402
from kazoo.exceptions import KazooException, LockTimeout, NoNodeError  # noqa: E402

# kazoo logs the session timeout the server granted at its BLATHER level,
# below DEBUG, and keeps it nowhere else.
BLATHER = 5


class SessionLog(logging.Handler):
    """Keeps the negotiated session timeout from kazoo's "Session created"
    log line and passes kazoo's INFO and louder lines on to stderr."""

    def __init__(self):
        super().__init__(level=BLATHER)
        self.negotiated_ms = None
        self.stderr = logging.StreamHandler(sys.stderr)
        self.stderr.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))

    def emit(self, record):
        if record.msg.startswith("Session created") and len(record.args) >= 3:
            self.negotiated_ms = float(record.args[2])
            return
        if record.levelno >= logging.INFO:
            self.stderr.emit(record)


class Hold:
    """A held lock: kazoo's Lock, its key, and the session it lives in."""

    def __init__(self, lock, key, session):
        self.lock, self.key, self.session = lock, key, session
        self.lost = False


class KazooLock:
    """The protocol's requests on kazoo's Lock."""

    abilities = ["wait", "lost"]

    def __init__(self):
        self.client = "kazoo %s kazoo.recipe.lock.Lock (python %d.%d)" % (
            kazoo.version.__version__, sys.version_info[0], sys.version_info[1])
        self.zk = None
        self.session_log = SessionLog()
        self.mu = threading.Lock()
        self.held = {}  # node path -> Hold
        self.identifier = ""

    def start(self, init):
        hosts = ",".join(ep["addr"] for ep in lockproto.peers(init["endpoints"]))
        opts = init.get("options", {})
        session_timeout = lockproto.seconds(opts.get("session-timeout"), 2.0)
        self.identifier = "w%s-p%s" % (init.get("worker"), init.get("process"))
        logger = logging.getLogger("kazoo.client.%s" % self.identifier)
        logger.setLevel(BLATHER)
        logger.propagate = False
        logger.addHandler(self.session_log)
        self.zk = KazooClient(hosts=hosts, timeout=session_timeout, logger=logger)
        self.zk.add_listener(self.on_state)
        self.zk.start(timeout=15)
        lockproto.log.info("zookeeper %s, session timeout asked %.3fs, granted %sms",
                           hosts, session_timeout, self.session_log.negotiated_ms)

    def on_state(self, state):
        """kazoo's connection-state listener (runs on kazoo's thread; must
        not call the client)."""
        lockproto.log.info("connection state %s", state)
        if state not in (KazooState.SUSPENDED, KazooState.LOST):
            return
        with self.mu:
            gone = [(p, h) for p, h in self.held.items() if not h.lost]
            for _, h in gone:
                h.lost = True
        for path, h in gone:
            lockproto.lost(h.key, path)

    def acquire(self, req):
        key = req["key"]
        wait_ms = req.get("wait_ms") or 0
        lock = self.zk.Lock("/locks/" + key, self.identifier)
        why = "held by another"
        try:
            if wait_ms > 0:
                got = lock.acquire(blocking=True, timeout=wait_ms / 1000.0)
            else:
                # The timeout bounds kazoo's retries of a lost connection.
                got = lock.acquire(blocking=False, timeout=max(req["ttl_ms"], 1000) / 2000.0)
        except LockTimeout as e:
            got, why = False, "LockTimeout: %s" % e
        except KazooException as e:
            got, why = False, "%s: %s" % (type(e).__name__, e)
        if not got:
            return self.refused(lock, why)
        path = lock.path + "/" + lock.node
        stat = self.zk.retry(self.zk.exists, path)
        if stat is None:
            return lockproto.error("kazoo says acquired, but our node %s is gone (session expired)" % path)
        session = self.zk.client_id[0]
        negotiated = self.session_log.negotiated_ms
        if stat.ephemeralOwner != session or negotiated is None:
            return lockproto.error("our node %s belongs to session %x, ours is %x" % (
                path, stat.ephemeralOwner, session or 0))
        with self.mu:
            self.held[path] = Hold(lock, key, session)
        return lockproto.ok(owner=path, token=stat.czxid, lease_ms=negotiated, session=True)

    def refused(self, lock, why):
        """Return not-acquired when kazoo's refusal left no node of ours
        behind (kazoo deletes it on a best-effort basis and swallows the
        errors of that delete), else an error."""
        if not lock.create_tried:
            return lockproto.refused("not-acquired", why + " (no node was created)")
        if lock.node is None:
            return lockproto.error(why + "; the create's outcome is unknown")
        path = lock.path + "/" + lock.node
        if self.zk.retry(self.zk.exists, path) is None:
            return lockproto.refused("not-acquired", why)
        try:
            self.zk.retry(self.zk.delete, path)
        except NoNodeError:
            pass
        return lockproto.refused("not-acquired", why + " (our node deleted)")

    def release(self, req):
        path = req["owner"]
        with self.mu:
            hold = self.held.pop(path, None)
        # kazoo's release swallows NoNodeError and says True for a node the
        # server already deleted: look first. Every call goes through
        # kazoo's retry, as the recipe's own calls do: a dropped connection
        # is retried until the session reconnects or expires.
        if self.zk.retry(self.zk.exists, path) is None:
            if hold is not None:
                hold.lock.release()  # resets the Lock; deletes nothing
            return lockproto.refused("not-held", "our node %s is gone" % path)
        if hold is None:
            try:
                self.zk.retry(self.zk.delete, path)
            except NoNodeError:
                return lockproto.refused("not-held", "our node %s is gone" % path)
        else:
            hold.lock.release()
        return lockproto.ok()

    def close(self):
        with self.mu:
            self.held.clear()  # closing ends the session: no lost notices
        if self.zk is not None:
            self.zk.stop()
            self.zk.close()


if __name__ == "__main__":
    lockproto.serve(KazooLock())
