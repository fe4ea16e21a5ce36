"""python-etcd3's etcd3.Lock (Debian's python3-etcd3) as a jepsen-lite lock
client (docs/lock-protocol.md).

Each try of Lock.acquire grants a new lease of ttl whole seconds and puts
/locks/<key> on it in a transaction that succeeds only when the key does not
exist; release deletes the key in a transaction that compares its value with
the lock's uuid; Lock.refresh() sends one keep-alive for the lease. The lease
etcd granted (the TTL in its answer, which may be longer than asked: etcd
grants at least its minimum TTL) is the lease reported; the client's own
validity is the moment the grant was sent plus the ttl the lock asked for.
The lock is not a session lock: nothing renews it in the background, and
closing the client leaves it to its lease. The fencing token is the key's
create revision, read with a get after the acquire (Lock.acquire keeps no
revision). python-etcd3 talks to one endpoint only.

    python3 examples/anylang/etcd3_lock.py
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lockproto  # noqa: E402  (puts Debian's packages on sys.path)

lockproto.read_init()  # first: the clock starts when init is read

import etcd3  # noqa: E402


class StampedClient(etcd3.Etcd3Client):
    """python-etcd3's client, noting when each lease grant is sent: the
    lease a lock takes counts from after that moment."""

    grant_sent_ms = None

    def lease(self, ttl, lease_id=None):
        self.grant_sent_ms = lockproto.now_ms()
        return super().lease(ttl, lease_id)


class Etcd3Lock:
    """The protocol's requests on python-etcd3's Lock."""

    abilities = ["renew", "wait"]

    def __init__(self):
        self.client = "python-etcd3 %s etcd3.Lock (python %d.%d)" % (
            etcd3.__version__, sys.version_info[0], sys.version_info[1])
        self.etcd = None
        self.held = {}  # (key, owner) -> etcd3.Lock

    def start(self, init):
        ep = lockproto.pick_primary(init["endpoints"])
        host, port = lockproto.host_port(ep["addr"])
        timeout = lockproto.seconds(init.get("options", {}).get("timeout"), 1.0)
        self.etcd = StampedClient(host=host, port=port, timeout=timeout)
        lockproto.log.info("etcd %s (%s), timeout %.3fs", ep["addr"], ep.get("name"), timeout)

    def acquire(self, req):
        key, ttl_ms = req["key"], req["ttl_ms"]
        wait_ms = req.get("wait_ms") or 0
        # Lock's ttl is the lease's TTL in whole seconds: round up.
        ttl_s = max(1, math.ceil(ttl_ms / 1000.0))
        lock = self.etcd.lock(key, ttl=ttl_s)
        try:
            got = lock.acquire(timeout=wait_ms / 1000.0)
        except Exception as e:
            return self.failed(lock, e)
        if not got:
            return lockproto.refused("not-acquired", "held by another (the create-revision compare failed)")
        granted_s = lock.lease.ttl
        value, meta = self.etcd.get(lock.key)
        if value != lock.uuid:
            return lockproto.error("acquired, but %s no longer holds our uuid when its revision was read" % lock.key)
        owner = lock.uuid.hex()
        self.held[(key, owner)] = lock
        return lockproto.ok(owner=owner, token=meta.create_revision,
                            until_ms=self.etcd.grant_sent_ms + min(ttl_s, granted_s) * 1000.0,
                            lease_ms=granted_s * 1000.0, session=False)

    def failed(self, lock, e):
        """Map an exception from Lock.acquire onto a reply. A try sets
        lock.lease after its grant and clears it after its transaction found
        the key taken: with no lease set, no put can have happened (a lease
        granted behind a lost answer holds no key). With one set, the put's
        outcome is unknown unless revoking the lease, which deletes the key,
        succeeds."""
        what = "%s: %s" % (type(e).__name__, e)
        if isinstance(e, TypeError):
            # python-etcd3 0.12.0's wait callback has tenacity 7's
            # signature; tenacity 8 calls it with one argument
            # (kragniz/python-etcd3 issue 2149): raised after a try found
            # the lock held.
            what += " (python-etcd3 issue 2149: its wait callback does not fit tenacity 8)"
        if lock.lease is None:
            return lockproto.refused("not-acquired", what)
        try:
            lock.lease.revoke()
        except Exception as r:
            return lockproto.error("%s; revoke: %s: %s" % (what, type(r).__name__, r))
        return lockproto.refused("not-acquired", what + " (lease revoked)")

    def lock_of(self, req):
        """Return the Lock of the grant req names."""
        lock = self.held.get((req["key"], req["owner"]))
        if lock is None:
            lock = self.etcd.lock(req["key"])
            lock.uuid = bytes.fromhex(req["owner"])
        return lock

    def release(self, req):
        lock = self.lock_of(req)
        self.held.pop((req["key"], req["owner"]), None)
        if not lock.release():
            return lockproto.refused("not-held", "the key no longer holds our uuid")
        return lockproto.ok()

    def renew(self, req):
        lock = self.lock_of(req)
        if lock.lease is None:
            return lockproto.refused("not-held", "no lease of ours for this owner")
        sent = lockproto.now_ms()
        answers = lock.refresh()
        granted_s = answers[0].TTL if answers else 0
        if granted_s <= 0:
            # etcd answers a keep-alive of a lease it no longer has with
            # TTL 0; Lock.refresh() returns that answer and raises nothing.
            return lockproto.refused("not-held", "the lease expired (keep-alive answered TTL 0)")
        return lockproto.ok(owner=req["owner"], until_ms=sent + min(lock.ttl, granted_s) * 1000.0,
                            lease_ms=granted_s * 1000.0, session=False)

    def close(self):
        if self.etcd is not None:
            self.etcd.close()


if __name__ == "__main__":
    lockproto.serve(Etcd3Lock())
