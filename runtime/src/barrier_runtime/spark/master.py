"""Whether the Spark master a job names can be reached, checked before Spark's JVM starts.

A standalone master that cannot be reached costs a minute: Spark starts its JVM
(seconds), tries to register three times twenty seconds, gives up ("All masters
are unresponsive"), stops its context, and the next call fails with "Cannot call
methods on a stopped SparkContext" and a Java stack. :func:`check_reachable`
finds the same in a second by resolving the master's host and opening a TCP
connection to its port; :func:`stopped_context_error` turns Spark's own failure
into the same sentence when it still happens later (the master went away after
the check).

Masters and what is checked (this module never imports pyspark):

* ``local``, ``local[N]``, ``local[*]``, ``local-cluster[…]``: nothing to reach;
* ``spark://host:port`` and ``spark://h1:p1,h2:p2`` (standalone, with standby
  masters): at least one of them answers;
* ``k8s://https://host:port`` (``k8s://host:port`` means https): the Kubernetes
  API server answers;
* anything else (``yarn``: its address is in Hadoop's configuration): not checked.

>>> endpoints("spark://m1:7077,m2:7078"), endpoints("k8s://https://kube.local"), endpoints("yarn")
((('m1', 7077), ('m2', 7078)), (('kube.local', 443),), ())
"""

from __future__ import annotations

import socket
import urllib.parse

from barrier_runtime.spark import errors

CONNECT_TIMEOUT = 3.0
"""Seconds to wait for the master's port (Spark itself would wait a minute)."""
_STANDALONE_PORT = 7077
_STOPPED = ("Cannot call methods on a stopped SparkContext", "All masters are unresponsive")


def endpoints(master: str) -> tuple[tuple[str, int], ...]:
    """The ``(host, port)`` pairs ``master`` names (empty when nothing is to be reached)."""
    text = master.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        return ()
    scheme = scheme.lower()
    if scheme == "spark":
        return tuple(_host_port(part, _STANDALONE_PORT) for part in rest.split(",") if part)
    if scheme == "k8s":
        api = rest if "://" in rest else f"https://{rest}"
        parsed = urllib.parse.urlsplit(api)
        default = 443 if parsed.scheme == "https" else 80
        return (_host_port(parsed.netloc, default),) if parsed.netloc else ()
    return ()


def check_reachable(
    master: str, option: str = "--master", timeout: float = CONNECT_TIMEOUT
) -> None:
    """Raise :class:`~errors.SparkMasterUnreachableError` unless one endpoint of ``master``
    accepts a TCP connection within ``timeout`` seconds."""
    reasons = []
    for host, port in endpoints(master):
        reason = _unreachable(host, port, timeout)
        if reason is None:
            return
        reasons.append(reason)
    if reasons:
        raise errors.SparkMasterUnreachableError(
            f"cannot reach the Spark master {master} ({'; '.join(dict.fromkeys(reasons))}): "
            f"check {option} and that the master is running"
        )


def stopped_context_error(
    java_error: str, master: str
) -> errors.SparkMasterUnreachableError | None:
    """One sentence for Spark giving up on its master inside a Java error text, else ``None``.

    >>> print(stopped_context_error("java.lang.IllegalStateException: Cannot call methods on "
    ...     "a stopped SparkContext.\\nThis stopped SparkContext was created at: ...",
    ...     "spark://nohost:7077"))  # doctest: +NORMALIZE_WHITESPACE
    Spark could not register with the master spark://nohost:7077 and stopped: check --master
    and that the master is running (Spark's own output is in the log file)
    """
    if not any(marker in java_error for marker in _STOPPED):
        return None
    return errors.SparkMasterUnreachableError(
        f"Spark could not register with the master {master} and stopped: check --master and "
        "that the master is running (Spark's own output is in the log file)"
    )


def _host_port(netloc: str, default: int) -> tuple[str, int]:
    parsed = urllib.parse.urlsplit(f"//{netloc.strip()}")
    try:
        port = parsed.port
    except ValueError:
        port = None
    return parsed.hostname or netloc.strip(), port or default


def _unreachable(host: str, port: int, timeout: float) -> str | None:
    """Why ``host:port`` cannot be reached (``None``: it accepted a connection)."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return f"the host name {host} does not resolve"
    last = "cannot connect"
    for family, kind, proto, _name, address in addresses:
        with socket.socket(family, kind, proto) as sock:
            sock.settimeout(timeout)
            try:
                sock.connect(address)
            except ConnectionRefusedError:
                last = f"connection to {host}:{port} refused"
            except TimeoutError:
                last = f"connecting to {host}:{port} timed out after {timeout:g}s"
            except OSError as exc:
                last = f"cannot connect to {host}:{port}: {exc.strerror or exc}"
            else:
                return None
    return last
