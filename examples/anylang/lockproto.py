"""The jepsen-lite lock-client protocol (docs/lock-protocol.md, version 1)
for the Python lock clients of examples/anylang/.

A client program defines a class with the methods ``start(init)``,
``acquire(req)``, ``release(req)``, ``renew(req)`` and ``close()`` and the
attributes ``client`` and ``abilities``, and hands it to :func:`serve`, which
reads the requests from standard input, one JSON object a line, and writes
each reply as one line on standard output, flushed. A method returns the
reply (a dict with its ``type``); the loop adds the request's ``id``. An
exception that a method lets escape is an ``error`` reply: the outcome is
unknown. Standard error is the client's log.

Moments a client reports (``until_ms``) are read with :func:`now_ms`: the
monotonic clock, in ms from the moment the ``init`` line was read. Every
reply carries ``received_ms`` (when its request was read) and ``now_ms``
(when it was written), with which the harness maps the client's clock onto
its own to within the time a line spends in a pipe. Until the first reply the
bound is as long as the client's start-up: a client calls :func:`read_init`
before it imports its library (importing grpc alone takes a second).
"""

import json
import logging
import re
import sys
import threading
import time

# Debian's python3-* packages live here; an interpreter of the same version
# that is not Debian's (pyenv's python3, say) does not look there.
DEBIAN_DIST_PACKAGES = "/usr/lib/python3/dist-packages"


def _find_debian_packages():
    """Put Debian's dist-packages on sys.path, before the interpreter's own
    site-packages, so that the library versions the examples pin are the
    ones imported under any python3 3.11."""
    if DEBIAN_DIST_PACKAGES in sys.path or sys.version_info[:2] != (3, 11):
        return
    for i, p in enumerate(sys.path):
        if p.endswith("site-packages"):
            sys.path.insert(i, DEBIAN_DIST_PACKAGES)
            return
    sys.path.append(DEBIAN_DIST_PACKAGES)


_find_debian_packages()

log = logging.getLogger("lockproto")

_zero = None  # time.monotonic() when init was read
_out_lock = threading.Lock()


def now_ms():
    """Return the client's clock: monotonic ms since the init line was read."""
    return (time.monotonic() - _zero) * 1000.0


def send(msg):
    """Write one message as one line on standard output and flush it; safe
    to call from a library's own threads (``lost`` notices)."""
    line = json.dumps(msg, separators=(",", ":")) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def lost(key, owner):
    """Send a ``lost`` notice: the library says the lock on key is gone."""
    log.info("lost %s (%s)", key, owner)
    send({"type": "lost", "key": key, "owner": owner})


class ProtocolError(Exception):
    """The harness sent something this protocol does not allow."""


def _read():
    """Return the next request as a dict, or None at the end of input."""
    line = sys.stdin.readline()
    if not line:
        return None
    try:
        msg = json.loads(line)
    except ValueError as e:
        raise ProtocolError("not JSON: %r (%s)" % (line.rstrip("\n"), e))
    if not isinstance(msg, dict) or "type" not in msg:
        raise ProtocolError("not a message: %r" % line.rstrip("\n"))
    return msg


class EndOfInput(Exception):
    """Standard input ended while the client waited for a line."""


def after_response(req_id):
    """The after-response handshake: announce that the library's reply has
    arrived and block until the harness says ``continue``."""
    send({"type": "after-response", "id": req_id})
    msg = _read()
    if msg is None:
        raise EndOfInput()
    if msg.get("type") != "continue" or msg.get("id") != req_id:
        raise ProtocolError("expected continue for id %s, got %r" % (req_id, msg))


def ok(**fields):
    """Return an ``ok`` reply with fields, leaving out those that are None."""
    reply = {"type": "ok"}
    reply.update({k: v for k, v in fields.items() if v is not None})
    return reply


def refused(kind, message):
    """Return a definite refusal: ``not-acquired``, ``not-held`` or ``no-op``."""
    return {"type": kind, "message": message}


def error(message):
    """Return an ``error`` reply: the outcome is unknown."""
    return {"type": "error", "message": message}


_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def seconds(value, default):
    """Return a Go duration string ("500ms", "1.5s", "1m30s") in seconds, or
    default when value is None or empty."""
    if value is None or value == "":
        return default
    parts = re.findall(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)", value)
    if not parts or "".join(n + u for n, u in parts) != value:
        raise ValueError("not a duration: %r" % value)
    return sum(float(n) * _UNITS[u] for n, u in parts)


def pick_primary(endpoints):
    """Return the endpoint whose role is primary, else the first."""
    for ep in endpoints:
        if ep.get("role") == "primary":
            return ep
    return endpoints[0]


def peers(endpoints):
    """Return the endpoints that are servers of the system (not replicas or
    sentinels)."""
    return [ep for ep in endpoints if ep.get("role") not in ("replica", "sentinel")]


def host_port(addr):
    """Split "host:port" into (host, int(port))."""
    host, _, port = addr.rpartition(":")
    return host, int(port)


_init = None


def read_init():
    """Read the init line and start the client's clock; return init, or
    None at the end of input. Call it before importing the library."""
    global _zero, _init
    if _zero is not None:
        return _init
    first = sys.stdin.readline()
    _zero = time.monotonic()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not first:
        return None
    _init = json.loads(first)
    if _init.get("type") != "init":
        raise ProtocolError("the first message is not init: %r" % first)
    return _init


def serve(client):
    """Run the protocol on standard input and output with client until the
    end of input, then close the client and exit 0."""
    init = read_init()
    if init is None:
        return
    client.start(init)
    send({"type": "init_ok", "now_ms": now_ms(), "wall_ms": time.time() * 1000.0,
          "client": client.client, "abilities": list(client.abilities)})
    log.info("init_ok: %s, abilities %s", client.client, ",".join(client.abilities))
    handlers = {"acquire": client.acquire, "release": client.release}
    if "renew" in client.abilities:
        handlers["renew"] = client.renew
    try:
        while True:
            req = _read()
            received = now_ms()
            if req is None:
                break
            handler = handlers.get(req["type"])
            if handler is None:
                reply = error("unknown request type %r" % req["type"])
            else:
                try:
                    reply = handler(req)
                except (EndOfInput, ProtocolError):
                    raise
                except Exception as e:  # the outcome is unknown
                    log.exception("%s %s", req["type"], req.get("key"))
                    reply = error("%s: %s" % (type(e).__name__, e))
            reply["id"] = req.get("id")
            # When the request was read and the reply written, on the
            # client's clock: the harness narrows its clock mapping with
            # them (docs/lock-protocol.md §3).
            reply["received_ms"] = received
            reply["now_ms"] = now_ms()
            send(reply)
    except EndOfInput:
        pass
    except BrokenPipeError:
        pass
    finally:
        log.info("end of input: closing")
        client.close()
