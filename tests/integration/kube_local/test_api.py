"""CRUD, selectors, watches, deletecollection and garbage collection, via the official client."""

from __future__ import annotations

import json
from typing import Any

import kubernetes as _kubernetes
import pytest
import waiting
from kubernetes.client.exceptions import ApiException
from tests.integration.kube_local.conftest import Kube

kubernetes: Any = _kubernetes  # its partial annotations are not worth fighting in tests


def _cm(name: str, labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}, **meta}, "data": {"k": "v"}}


def _names(items: Any) -> list[str]:
    return sorted(i.metadata.name for i in items.items)


def test_create_get_list_patch_delete(core: Any, ns: str) -> None:
    created = core.create_namespaced_config_map(ns, _cm("one"))
    assert created.metadata.uid and created.metadata.resource_version
    assert core.read_namespaced_config_map("one", ns).data == {"k": "v"}
    patched = core.patch_namespaced_config_map("one", ns, {"data": {"k": "w"}})
    assert patched.data == {"k": "w"}
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)
    assert _names(core.list_namespaced_config_map(ns)) == ["kube-root-ca.crt", "one"]
    core.delete_namespaced_config_map("one", ns)
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("one", ns)
    assert missing.value.status == 404


def test_duplicate_name_is_409(core: Any, ns: str) -> None:
    core.create_namespaced_config_map(ns, _cm("dup"))
    with pytest.raises(ApiException) as conflict:
        core.create_namespaced_config_map(ns, _cm("dup"))
    assert conflict.value.status == 409
    assert json.loads(str(conflict.value.body))["message"] == 'configmaps "dup" already exists'


def test_stale_resource_version_on_update_is_409(core: Any, ns: str) -> None:
    old = core.create_namespaced_config_map(ns, _cm("cas"))
    core.patch_namespaced_config_map("cas", ns, {"data": {"k": "new"}})
    old.data = {"k": "lost"}
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_config_map("cas", ns, old)
    assert conflict.value.status == 409


def test_label_and_field_selectors_on_list(core: Any, ns: str) -> None:
    core.create_namespaced_config_map(ns, _cm("a", {"app": "a", "tier": "web"}))
    core.create_namespaced_config_map(ns, _cm("b", {"app": "b"}))
    core.create_namespaced_config_map(ns, _cm("c"))
    lst = core.list_namespaced_config_map
    assert _names(lst(ns, label_selector="app=a")) == ["a"]
    assert _names(lst(ns, label_selector="app in (a,b)")) == ["a", "b"]
    assert _names(lst(ns, label_selector="app,!tier")) == ["b"]
    assert _names(lst(ns, label_selector="app!=a")) == ["b", "c", "kube-root-ca.crt"]
    assert _names(lst(ns, label_selector="app notin (a),app")) == ["b"]
    assert _names(lst(ns, field_selector="metadata.name=c")) == ["c"]
    assert _names(lst(ns, field_selector="metadata.name!=c,metadata.name!=a")) == [
        "b",
        "kube-root-ca.crt",
    ]
    with pytest.raises(ApiException) as bad:
        lst(ns, label_selector="app in a")
    assert bad.value.status == 400


def _events(core: Any, ns: str, count: int, **kwargs: Any) -> list[tuple[str, str, int]]:
    seen: list[tuple[str, str, int]] = []
    watch = kubernetes.watch.Watch()
    for event in watch.stream(core.list_namespaced_config_map, ns, timeout_seconds=10, **kwargs):
        obj = event["object"]
        seen.append((event["type"], obj.metadata.name, int(obj.metadata.resource_version)))
        if len(seen) == count:
            watch.stop()
    return seen


def test_watch_from_a_resource_version_gets_later_events_in_order(core: Any, ns: str) -> None:
    start = core.create_namespaced_config_map(ns, _cm("w1")).metadata.resource_version
    core.patch_namespaced_config_map("w1", ns, {"data": {"k": "2"}})
    core.create_namespaced_config_map(ns, _cm("w2"))
    core.delete_namespaced_config_map("w1", ns)
    events = _events(core, ns, 3, resource_version=start)
    assert [(t, n) for t, n, _ in events] == [
        ("MODIFIED", "w1"),
        ("ADDED", "w2"),
        ("DELETED", "w1"),
    ]
    versions = [v for _, _, v in events]
    assert versions == sorted(versions) and versions[0] > int(start)


def test_watch_with_a_label_selector_sees_objects_enter_and_leave(core: Any, ns: str) -> None:
    start = core.create_namespaced_config_map(ns, _cm("in", {"w": "yes"})).metadata
    core.create_namespaced_config_map(ns, _cm("out", {"w": "no"}))
    core.patch_namespaced_config_map("out", ns, {"metadata": {"labels": {"w": "yes"}}})
    core.patch_namespaced_config_map("in", ns, {"metadata": {"labels": {"w": "no"}}})
    events = _events(core, ns, 2, resource_version=start.resource_version, label_selector="w=yes")
    assert [(t, n) for t, n, _ in events] == [("ADDED", "out"), ("DELETED", "in")]
    initial = _events(core, ns, 1, label_selector="w=yes")
    assert [(t, n) for t, n, _ in initial] == [("ADDED", "out")]


def test_watch_from_an_expired_resource_version_is_410(core: Any, ns: str) -> None:
    from tests.integration.kube_local.conftest import HISTORY

    first = core.create_namespaced_config_map(ns, _cm("busy")).metadata.resource_version
    for n in range(HISTORY + 5):
        core.patch_namespaced_config_map("busy", ns, {"data": {"n": str(n)}})
    with pytest.raises(ApiException) as gone:
        _events(core, ns, 1, resource_version=first)
    assert gone.value.status == 410


def test_deletecollection_with_a_selector(core: Any, ns: str) -> None:
    for name, group in (("x1", "x"), ("x2", "x"), ("y1", "y")):
        core.create_namespaced_config_map(ns, _cm(name, {"group": group}))
    core.delete_collection_namespaced_config_map(ns, label_selector="group=x")
    assert _names(core.list_namespaced_config_map(ns, label_selector="group")) == ["y1"]


def _owned(core: Any, ns: str, owner: Any, name: str, **meta: Any) -> None:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner.metadata.name,
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": True,
    }
    core.create_namespaced_config_map(ns, _cm(name, ownerReferences=[ref], **meta))


def _exists(core: Any, ns: str, name: str) -> bool:
    try:
        core.read_namespaced_config_map(name, ns)
    except ApiException as missing:
        assert missing.status == 404
        return False
    return True


def test_background_gc_deletes_dependents(core: Any, ns: str) -> None:
    owner = core.create_namespaced_config_map(ns, _cm("owner"))
    _owned(core, ns, owner, "child")
    _owned(core, ns, core.read_namespaced_config_map("child", ns), "grandchild")
    core.delete_namespaced_config_map("owner", ns, propagation_policy="Background")
    waiting.wait_until(lambda: not _exists(core, ns, "grandchild"), 10, "the grandchild to go")
    assert not _exists(core, ns, "child")


def test_foreground_gc_keeps_the_owner_until_dependents_are_gone(core: Any, ns: str) -> None:
    owner = core.create_namespaced_config_map(ns, _cm("owner"))
    _owned(core, ns, owner, "held", finalizers=["test.dev/hold"])
    core.delete_namespaced_config_map("owner", ns, propagation_policy="Foreground")
    deleting = core.read_namespaced_config_map("owner", ns)
    assert deleting.metadata.deletion_timestamp
    assert "foregroundDeletion" in deleting.metadata.finalizers
    assert core.read_namespaced_config_map("held", ns).metadata.deletion_timestamp
    core.patch_namespaced_config_map("held", ns, {"metadata": {"finalizers": None}})
    waiting.wait_until(lambda: not _exists(core, ns, "owner"), 10, "the owner to go")
    assert not _exists(core, ns, "held")


def test_orphan_keeps_dependents(core: Any, ns: str) -> None:
    owner = core.create_namespaced_config_map(ns, _cm("owner"))
    _owned(core, ns, owner, "orphan")
    core.delete_namespaced_config_map("owner", ns, propagation_policy="Orphan")
    assert not core.read_namespaced_config_map("orphan", ns).metadata.owner_references


def test_deleting_a_namespace_deletes_its_objects(kube: Kube, core: Any, ns: str) -> None:
    core.create_namespaced_config_map(ns, _cm("inside"))
    core.delete_namespace(ns)
    with pytest.raises(ApiException) as missing:
        core.read_namespace(ns)
    assert missing.value.status == 404
    assert not [
        c for c in core.list_config_map_for_all_namespaces().items if c.metadata.namespace == ns
    ]


def test_a_websocket_watch_gets_one_event_per_message(kube: Any, core: Any, ns: str) -> None:
    """fabric8 (the Java client inside Spark) watches over a WebSocket, not a JSON stream."""
    import asyncio
    import json
    import ssl

    import aiohttp

    start = core.create_namespaced_config_map(ns, _cm("ws1")).metadata.resource_version
    core.create_namespaced_config_map(ns, _cm("ws2"))
    core.delete_namespaced_config_map("ws1", ns)

    async def watch() -> list[tuple[str, str]]:
        context = ssl.create_default_context(cafile=str(kube.ca))
        url = f"{kube.url}/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={start}"
        headers = {"Authorization": f"Bearer {kube.admin_token}"}
        seen: list[tuple[str, str]] = []
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(url, headers=headers, ssl=context) as socket,
        ):
            while len(seen) < 2:
                message = await asyncio.wait_for(socket.receive(), 10)
                event = json.loads(message.data)
                seen.append((event["type"], event["object"]["metadata"]["name"]))
        return seen

    assert asyncio.run(watch()) == [("ADDED", "ws2"), ("DELETED", "ws1")]
