"""MySQL's and MariaDB's GET_LOCK through PyMySQL (Debian's python3-pymysql)
as a jepsen-lite lock client (docs/lock-protocol.md).

The lock is ``SELECT GET_LOCK(name, 0)`` on the client's one connection (1
= acquired, 0 = held by another session), given back by ``SELECT
RELEASE_LOCK(name)`` (1 = released; 0, held by another session, and NULL,
held by none, are not-held), as Python programs take a named lock on a
MySQL server that they already use. The lock belongs to the session: the
server frees it when the session ends, never on its own, so each grant is
reported ``never: true, session: true``, and its owner is the session's
CONNECTION_ID. GET_LOCK is re-entrant per session; the client never asks
twice for a name it holds, and closes its connection after an acquire of
unknown outcome (a network error, or GET_LOCK's NULL), which ends the
session and whatever it may have taken. A name longer than 64 characters
is locked under "sha256:" and the first 28 bytes of its SHA-256 in hex, as
mysql-get-lock does. No fencing token. Option "timeout" (a Go duration,
default 1s): PyMySQL's connect, read and write timeouts.

    python3 examples/anylang/pymysql_lock.py
"""

import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lockproto  # noqa: E402  (puts Debian's packages on sys.path)

lockproto.read_init()  # first: the clock starts when init is read

import pymysql  # noqa: E402


def lock_name(key):
    """Return the GET_LOCK name of key (at most 64 characters)."""
    if len(key) <= 64:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()[:56]


class PyMySQLLock:
    """The protocol's requests on one PyMySQL connection."""

    abilities = ["after-response"]

    def __init__(self):
        self.client = "PyMySQL %s GET_LOCK (python %d.%d)" % (
            pymysql.__version__, sys.version_info[0], sys.version_info[1])
        self.conn = None
        self.session = None  # CONNECTION_ID() of conn

    def start(self, init):
        ep = lockproto.pick_primary(init["endpoints"])
        self.host, self.port = lockproto.host_port(ep["addr"])
        self.timeout = lockproto.seconds(init.get("options", {}).get("timeout"), 1.0)
        lockproto.log.info("mysql %s (%s), timeout %.3fs", ep["addr"], ep.get("name"), self.timeout)

    def connect(self):
        """Open the connection when there is none and read its session's
        id; nothing that can take a lock is sent."""
        if self.conn is not None:
            return
        conn = pymysql.connect(host=self.host, port=self.port, user="root",
                               connect_timeout=self.timeout, read_timeout=self.timeout,
                               write_timeout=self.timeout, autocommit=True)
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            self.session = "conn-%d" % cur.fetchone()[0]
        self.conn = conn

    def drop(self):
        """Close the connection, ending the session and its locks."""
        if self.conn is not None:
            try:
                self.conn.close()
            except pymysql.Error:
                pass
        self.conn, self.session = None, None

    def query(self, sql, arg):
        """Run a statement that returns one value; a failure closes the
        connection."""
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql, (arg,))
                return cur.fetchone()[0]
        except (pymysql.Error, OSError):
            self.drop()
            raise

    def acquire(self, req):
        try:
            self.connect()
        except (pymysql.Error, OSError) as e:
            self.drop()
            return lockproto.refused("not-acquired", "connect: %s: nothing that can take the lock was sent" % e)
        try:
            got = self.query("SELECT GET_LOCK(%s, 0)", lock_name(req["key"]))
        except (pymysql.Error, OSError) as e:
            return lockproto.error("get_lock: %s (the connection is closed)" % e)
        lockproto.after_response(req["id"])
        if got is None:
            self.drop()
            return lockproto.error("GET_LOCK returned NULL (the connection is closed)")
        if got == 0:
            return lockproto.refused("not-acquired", "held by another session (GET_LOCK returned 0)")
        return lockproto.ok(owner=self.session, never=True, session=True)

    def release(self, req):
        if self.conn is None or self.session != req["owner"]:
            return lockproto.refused("not-held", "session %s ended, and its locks with it" % req["owner"])
        try:
            freed = self.query("SELECT RELEASE_LOCK(%s)", lock_name(req["key"]))
        except (pymysql.Error, OSError) as e:
            return lockproto.error("release_lock: %s (the connection is closed)" % e)
        if freed is None:
            return lockproto.refused("not-held", "no session holds it (RELEASE_LOCK returned NULL)")
        if freed != 1:
            return lockproto.refused("not-held", "another session holds it (RELEASE_LOCK returned 0)")
        return lockproto.ok()

    def close(self):
        self.drop()


if __name__ == "__main__":
    lockproto.serve(PyMySQLLock())
