"""Errors of the Spark host that a user can act on."""

from __future__ import annotations

import re

_K8S_FAILURE = re.compile(
    r"KubernetesClientException: Failure executing: (?P<verb>[A-Z]+) at: (?P<url>\S+)\. "
    r"Message: (?P<message>.*?)\. Received status: Status\(.*?code=(?P<code>\d+)",
    re.DOTALL,
)


class SparkUnavailableError(RuntimeError):
    """Spark cannot start here (no pyspark, no Java, too few slots); the message says what to do."""


class SparkMasterUnreachableError(SparkUnavailableError):
    """The Spark master cannot be reached (its host does not resolve, its port is closed)."""


class KubernetesAccessError(SparkUnavailableError):
    """The Kubernetes API refused what Spark asked of it (typically RBAC: 403)."""


def kubernetes_access_error(java_error: str) -> KubernetesAccessError | None:
    """One sentence for a Kubernetes API refusal inside a Java exception text, else ``None``.

    >>> text = ('...KubernetesClientException: Failure executing: POST at: '
    ...         'https://kubernetes.default.svc/api/v1/namespaces/ns/configmaps. '
    ...         'Message: configmaps is forbidden: User "system:serviceaccount:ns:default" '
    ...         'cannot create resource "configmaps". Received status: Status(code=403, x=y)')
    >>> print(kubernetes_access_error(text))  # doctest: +NORMALIZE_WHITESPACE
    the Kubernetes API refused Spark's POST .../api/v1/namespaces/ns/configmaps (403):
    configmaps is forbidden: User "system:serviceaccount:ns:default" cannot create resource
    "configmaps"; the driver's service account needs the driver Role in its namespace
    (spec.driver.serviceAccount, or the chart's driver.namespaces listing that namespace)
    """
    match = _K8S_FAILURE.search(java_error)
    if match is None:
        return None
    path = match["url"].split("://", 1)[-1]
    path = "..." + path[path.find("/") :] if "/" in path else path
    hint = ""
    if match["code"] == "403":
        hint = (
            "; the driver's service account needs the driver Role in its namespace "
            "(spec.driver.serviceAccount, or the chart's driver.namespaces listing that "
            "namespace)"
        )
    return KubernetesAccessError(
        f"the Kubernetes API refused Spark's {match['verb']} {path} ({match['code']}): "
        f"{' '.join(match['message'].split())}{hint}"
    )
