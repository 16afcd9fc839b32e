"""From a Pod's spec to what the container engine is told: env, mounts, limits, user.

Pure functions over the pod and the objects it references (looked up through a
:class:`Lookup`); no I/O. A reference that cannot be satisfied (a missing Secret or
key that is not ``optional``) raises :class:`ConfigError` with the kubelet's message,
which becomes the container's ``CreateContainerConfigError``.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

Obj = dict[str, Any]
Lookup = Callable[[str, str, str], Obj | None]
"""``(plural, namespace, name)`` → the stored object or ``None``."""

_VAR = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_MEMORY = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


class ConfigError(Exception):
    """The container cannot be configured yet (the kubelet retries)."""


@dataclasses.dataclass(frozen=True, slots=True)
class PodFacts:
    """What the kubelet knows of a pod beyond its spec."""

    ip: str
    host_ip: str
    api_host: str
    api_port: int


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: unknown references stay as written, ``$$`` is ``$``.

    >>> expand("$(A)-$(B)-$$(A)", {"A": "1"})
    '1-$(B)-$(A)'
    """

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _VAR.sub(one, text)


def memory_bytes(quantity: str | int) -> int:
    """``512Mi`` → 536870912.

    >>> memory_bytes("1Gi"), memory_bytes("500M"), memory_bytes(1024)
    (1073741824, 500000000, 1024)
    """
    text = str(quantity)
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", text)
    if match is None or match.group(2) not in _MEMORY:
        raise ConfigError(f"cannot parse memory quantity {text!r}")
    return int(float(match.group(1)) * _MEMORY[match.group(2)])


def cpus(quantity: str | int | float) -> float:
    """``500m`` → 0.5.

    >>> cpus("500m"), cpus(2)
    (0.5, 2.0)
    """
    text = str(quantity)
    return float(text[:-1]) / 1000 if text.endswith("m") else float(text)


def _field(pod: Obj, path: str, facts: PodFacts) -> str:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    label = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
    if label:
        return str((meta.get(label.group(1)) or {}).get(label.group(2), ""))
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": facts.ip,
        "status.podIPs": facts.ip,
        "status.hostIP": facts.host_ip,
    }
    if path not in simple:
        raise ConfigError(f"unsupported fieldRef {path!r}")
    return str(simple[path] or "")


def _data(obj: Obj, plural: str) -> dict[str, str]:
    if plural == "secrets":
        out = {
            k: base64.b64decode(v).decode(errors="replace")
            for k, v in (obj.get("data") or {}).items()
        }
        out.update(obj.get("stringData") or {})
        return out
    return dict(obj.get("data") or {})


def _key_ref(ref: Obj, plural: str, namespace: str, lookup: Lookup) -> str | None:
    kind = "secret" if plural == "secrets" else "configmap"
    found = lookup(plural, namespace, ref["name"])
    if found is None:
        if ref.get("optional"):
            return None
        raise ConfigError(f'{kind} "{ref["name"]}" not found')
    data = _data(found, plural)
    if ref["key"] not in data:
        if ref.get("optional"):
            return None
        raise ConfigError(
            f"couldn't find key {ref['key']} in {kind.capitalize()} {namespace}/{ref['name']}"
        )
    return data[ref["key"]]


def _resource(container: Obj, ref: Obj) -> str:
    resource = ref["resource"]
    section, name = resource.split(".", 1)
    value = ((container.get("resources") or {}).get(section) or {}).get(name)
    if value is None:
        return "0"
    if name == "memory":
        return str(memory_bytes(value))
    return str(max(1, int(cpus(value) + 0.999)))


def environment(pod: Obj, container: Obj, facts: PodFacts, lookup: Lookup) -> dict[str, str]:
    """The container's environment, in Kubernetes' order (service variables, envFrom,
    env with ``$(VAR)`` expansion over what came before)."""
    namespace = pod["metadata"]["namespace"]
    env: dict[str, str] = {
        "KUBERNETES_SERVICE_HOST": facts.api_host,
        "KUBERNETES_SERVICE_PORT": str(facts.api_port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(facts.api_port),
        "KUBERNETES_PORT": f"tcp://{facts.api_host}:{facts.api_port}",
        "HOSTNAME": pod["metadata"]["name"],
    }
    for source in container.get("envFrom") or ():
        prefix = source.get("prefix", "")
        for plural, key in (("configmaps", "configMapRef"), ("secrets", "secretRef")):
            ref = source.get(key)
            if ref is None:
                continue
            found = lookup(plural, namespace, ref["name"])
            if found is None:
                if ref.get("optional"):
                    continue
                kind = "secret" if plural == "secrets" else "configmap"
                raise ConfigError(f'{kind} "{ref["name"]}" not found')
            env.update({prefix + k: v for k, v in _data(found, plural).items()})
    for var in container.get("env") or ():
        value_from = var.get("valueFrom")
        if value_from is None:
            env[var["name"]] = expand(str(var.get("value", "")), env)
            continue
        value: str | None
        if "fieldRef" in value_from:
            value = _field(pod, value_from["fieldRef"]["fieldPath"], facts)
        elif "secretKeyRef" in value_from:
            value = _key_ref(value_from["secretKeyRef"], "secrets", namespace, lookup)
        elif "configMapKeyRef" in value_from:
            value = _key_ref(value_from["configMapKeyRef"], "configmaps", namespace, lookup)
        elif "resourceFieldRef" in value_from:
            value = _resource(container, value_from["resourceFieldRef"])
        else:
            raise ConfigError(f"unsupported valueFrom in env {var['name']}")
        if value is not None:
            env[var["name"]] = value
    return env


def security(pod: Obj, container: Obj) -> Obj:
    """The container's security context over the pod's (the fields both have)."""
    merged = {
        k: v
        for k, v in ((pod.get("spec") or {}).get("securityContext") or {}).items()
        if k in ("runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile")
    }
    merged.update(container.get("securityContext") or {})
    return merged


def run_options(container: Obj, sec: Obj, image_user: str) -> list[str]:
    """``docker run`` options for limits, user and hardening (not mounts or env)."""
    options: list[str] = []
    user, group = sec.get("runAsUser"), sec.get("runAsGroup")
    effective = str(user) if user is not None else (image_user.split(":", maxsplit=1)[0] or "0")
    if sec.get("runAsNonRoot") and effective in ("0", "root"):
        raise ConfigError("container has runAsNonRoot and image will run as root")
    if user is not None:
        options += ["--user", f"{user}:{group}" if group is not None else str(user)]
    if sec.get("readOnlyRootFilesystem"):
        options.append("--read-only")
    if "ALL" in ((sec.get("capabilities") or {}).get("drop") or ()):
        options += ["--cap-drop", "ALL"]
    if sec.get("allowPrivilegeEscalation") is False:
        options += ["--security-opt", "no-new-privileges"]
    limits = (container.get("resources") or {}).get("limits") or {}
    if "memory" in limits:
        options += ["--memory", str(memory_bytes(limits["memory"]))]
    if "cpu" in limits:
        # the engine refuses more CPUs than the machine has; the node advertises more
        options += ["--cpus", f"{min(cpus(limits['cpu']), float(os.cpu_count() or 1)):g}"]
    if container.get("workingDir"):
        options += ["--workdir", container["workingDir"]]
    return options


def command_line(container: Obj, env: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(``--entrypoint`` options, arguments after the image), ``$(VAR)`` expanded."""
    command = [expand(c, env) for c in container.get("command") or ()]
    args = [expand(a, env) for a in container.get("args") or ()]
    if not command:
        return [], args
    return ["--entrypoint", command[0]], command[1:] + args


def volume_sources(pod: Obj) -> dict[str, Obj]:
    return {v["name"]: v for v in (pod.get("spec") or {}).get("volumes") or ()}


def references(pod: Obj) -> set[tuple[str, str]]:
    """``(plural, name)`` of every ConfigMap and Secret the pod names, and its
    ServiceAccount: what the Node authorizer lets the node read for it."""
    spec = pod.get("spec") or {}
    out = {("serviceaccounts", spec.get("serviceAccountName") or "default")}
    for c in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        for source in c.get("envFrom") or ():
            for plural, key in (("configmaps", "configMapRef"), ("secrets", "secretRef")):
                if key in source:
                    out.add((plural, source[key]["name"]))
        for var in c.get("env") or ():
            value_from = var.get("valueFrom") or {}
            for plural, key in (("configmaps", "configMapKeyRef"), ("secrets", "secretKeyRef")):
                if key in value_from:
                    out.add((plural, value_from[key]["name"]))
    for volume in spec.get("volumes") or ():
        if "configMap" in volume:
            out.add(("configmaps", volume["configMap"]["name"]))
        if "secret" in volume:
            out.add(("secrets", volume["secret"]["secretName"]))
        for part in (volume.get("projected") or {}).get("sources") or ():
            for plural, key in (("configmaps", "configMap"), ("secrets", "secret")):
                if key in part:
                    out.add((plural, part[key]["name"]))
    return out


def token_projections(pod: Obj) -> list[Obj]:
    """The ``serviceAccountToken`` projections of the pod's volumes."""
    return [
        part["serviceAccountToken"]
        for volume in (pod.get("spec") or {}).get("volumes") or ()
        for part in (volume.get("projected") or {}).get("sources") or ()
        if "serviceAccountToken" in part
    ]


def files_of(
    volume: Obj,
    pod: Obj,
    lookup: Lookup,
    facts: PodFacts,
    token: Callable[[Obj], str],
) -> dict[str, tuple[str, int]] | None:
    """A volume's files (relative path → (content, mode)); ``None`` for an emptyDir.
    ``token`` gives the token of a ``serviceAccountToken`` projection."""
    namespace = pod["metadata"]["namespace"]
    if "emptyDir" in volume:
        return None
    for plural, key in (("configmaps", "configMap"), ("secrets", "secret")):
        if key in volume:
            src = volume[key]
            return _object_files(
                src,
                plural,
                src.get("name") or src.get("secretName", ""),
                namespace,
                lookup,
                src.get("defaultMode", 0o644),
            )
    if "downwardAPI" in volume:
        src = volume["downwardAPI"]
        return {
            i["path"]: (
                _field(pod, i["fieldRef"]["fieldPath"], facts),
                i.get("mode", src.get("defaultMode", 0o644)),
            )
            for i in src.get("items") or ()
            if "fieldRef" in i
        }
    if "projected" in volume:
        src = volume["projected"]
        mode = src.get("defaultMode", 0o644)
        out: dict[str, tuple[str, int]] = {}
        for part in src.get("sources") or ():
            if "serviceAccountToken" in part:
                out[part["serviceAccountToken"]["path"]] = (
                    token(part["serviceAccountToken"]),
                    mode,
                )
            for plural, key in (("configmaps", "configMap"), ("secrets", "secret")):
                if key in part:
                    sub = part[key]
                    out |= _object_files(sub, plural, sub["name"], namespace, lookup, mode) or {}
            if "downwardAPI" in part:
                out |= {
                    i["path"]: (_field(pod, i["fieldRef"]["fieldPath"], facts), mode)
                    for i in part["downwardAPI"].get("items") or ()
                    if "fieldRef" in i
                }
        return out
    raise ConfigError(
        f"volume {volume.get('name')!r}: only emptyDir, configMap, secret, "
        "downwardAPI and projected volumes are supported"
    )


def _object_files(
    src: Obj, plural: str, name: str, namespace: str, lookup: Lookup, mode: int
) -> dict[str, tuple[str, int]] | None:
    found = lookup(plural, namespace, name)
    if found is None:
        if src.get("optional"):
            return {}
        kind = "secret" if plural == "secrets" else "configmap"
        raise ConfigError(f'{kind} "{name}" not found')
    data = _data(found, plural)
    items: Sequence[Obj] = src.get("items") or [{"key": k, "path": k} for k in data]
    out = {}
    for item in items:
        if item["key"] not in data:
            if src.get("optional"):
                continue
            raise ConfigError(f"configmap references non-existent config key: {item['key']}")
        out[item["path"]] = (data[item["key"]], item.get("mode", mode))
    return out
