"""The HTTP layer: routing, authentication, authorization, discovery and watches.

Paths follow the real API: ``/api/v1[/namespaces/<ns>]/<plural>[/<name>[/<sub>]]``
and ``/apis/<group>/<version>/...``. Each resource request is authenticated
(:mod:`kube_local.auth`), authorized (:mod:`kube_local.rbac`) and handed to
:mod:`kube_local.verbs`; lists and gets may be answered as Tables
(:mod:`kube_local.tables`); watches stream newline-delimited JSON events.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import json
import pathlib
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp.web
import yaml

from kube_local import (
    auth,
    controllers,
    errors,
    patches,
    protobuf,
    rbac,
    resources,
    scale,
    selectors,
    store,
    tables,
    verbs,
)
from kube_local.node import deployments
from kube_local.node import kubelet as kubelet_mod

OPEN_PATHS = ("/healthz", "/livez", "/readyz", "/version")
VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-kube-local",
    "gitCommit": "",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@dataclasses.dataclass(frozen=True, slots=True)
class Target:
    """A parsed resource path."""

    type: resources.ResourceType
    version: str
    namespace: str
    name: str
    subresource: str


Emit = Callable[[dict[str, Any]], Awaitable[None]]
"""Sends one watch event to a client (a JSON line, or a WebSocket message)."""


async def _close(response: aiohttp.web.StreamResponse) -> None:
    if isinstance(response, aiohttp.web.WebSocketResponse):
        with contextlib.suppress(ConnectionResetError):
            await response.close()


def _json(body: Any, status: int = 200) -> aiohttp.web.Response:
    return aiohttp.web.Response(
        text=json.dumps(body), status=status, content_type="application/json"
    )


class ApiServer:
    """The emulated API server; ``store.listeners`` is the seam for a kubelet."""

    def __init__(self, admin_token: str, ca_pem: str, history_size: int = 1000) -> None:
        self.store = store.Store(history_size)
        self.tokens = auth.Tokens(admin_token)
        self.store.listeners.append(controllers.Controllers(self.tokens, ca_pem))
        self.ca_pem = ca_pem
        self.kubelet: kubelet_mod.Kubelet | None = None
        self._bootstrap()

    def start_kubelet(
        self, state_dir: pathlib.Path, docker: str, api_host: str, api_port: int
    ) -> kubelet_mod.Kubelet:
        """Run pods as containers on the Docker engine (call on the running event loop)."""
        self.kubelet = kubelet_mod.Kubelet(
            self.store, self.tokens, self.ca_pem, state_dir, docker, api_host, api_port
        )
        self.kubelet.attach()
        deployments.DeploymentController(self.store).attach()
        return self.kubelet

    def _bootstrap(self) -> None:
        namespaces = self.store.type_of("", "namespaces")
        for name in ("default", "kube-system", "kube-public"):
            self.store.create(namespaces, "", {"metadata": {"name": name}})
        self.store.create(
            self.store.type_of(rbac.RBAC, "clusterroles"),
            "",
            {
                "metadata": {"name": "cluster-admin"},
                "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
            },
        )

    def app(self) -> aiohttp.web.Application:
        application = aiohttp.web.Application(client_max_size=64 * 1024 * 1024)
        application.router.add_route("*", "/{tail:.*}", self.handle)
        return application

    # -- request handling ----------------------------------------------------------

    async def handle(self, request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
        try:
            if request.path in OPEN_PATHS:
                return (
                    _json(VERSION)
                    if request.path == "/version"
                    else aiohttp.web.Response(text="ok")
                )
            user = self.tokens.authenticate(request.headers.get("Authorization"), self._sa_uid)
            discovery = self._discovery(request.path)
            if discovery is not None:
                return _json(discovery)
            target = self._parse(request.path)
            return await self._resource(request, user, target)
        except errors.ApiError as failure:
            return _json(failure.status(), failure.code)

    def _admit_pod(self, namespace: str, pod: Any) -> None:
        """The ServiceAccount admission plugin: a pod's account must exist."""
        if not isinstance(pod, dict):
            return
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        if self._sa_uid(namespace, account) is None:
            name = (pod.get("metadata") or {}).get("name") or ""
            raise errors.ApiError(
                403,
                "Forbidden",
                f'pods "{name}" is forbidden: error looking up service '
                f'account {namespace}/{account}: serviceaccount "{account}" not found',
            )

    async def _log(self, target: Target, query: Any) -> str:
        """``pods/log`` from the container engine, when a kubelet runs the pod."""
        pod = self.store.get(target.type, target.namespace, target.name)
        if self.kubelet is None:
            return ""
        tail = query.get("tailLines")
        return await self.kubelet.logs(
            pod, query.get("container"), None if tail is None else int(tail)
        )

    def _sa_uid(self, namespace: str, name: str) -> str | None:
        account = self.store.find(self.store.type_of("", "serviceaccounts"), namespace, name)
        return None if account is None else str(account["metadata"]["uid"])

    def _discovery(self, path: str) -> dict[str, Any] | None:
        parts = path.strip("/").split("/")
        types = list(self.store.types.values())
        if parts == ["api"]:
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if parts == ["api", "v1"]:
            return resources.resource_list("v1", [t for t in types if not t.group])
        if parts == ["apis"]:
            return resources.group_list(types)
        if len(parts) == 2 and parts[0] == "apis":
            versions = [v for t in types if t.group == parts[1] for v in t.versions]
            if not versions:
                raise errors.ApiError(
                    404, "NotFound", "the server could not find the requested resource"
                )
            return resources.group_doc(parts[1], list(dict.fromkeys(versions)))
        if len(parts) == 3 and parts[0] == "apis":
            served = [t for t in types if t.group == parts[1] and parts[2] in t.versions]
            if not served:
                raise errors.ApiError(
                    404, "NotFound", "the server could not find the requested resource"
                )
            return resources.resource_list(f"{parts[1]}/{parts[2]}", served)
        if parts[:2] == ["openapi", "v3"]:
            return self._openapi(parts[2:], types)
        if parts[0] == "openapi":
            raise errors.ApiError(404, "NotFound", "only /openapi/v3 is served")
        return None

    @staticmethod
    def _openapi(parts: list[str], types: list[resources.ResourceType]) -> dict[str, Any]:
        if not parts:
            return resources.openapi_root(types)
        group, version = (
            ("", parts[1])
            if parts[0] == "api" and len(parts) == 2
            else ((parts[1], parts[2]) if len(parts) == 3 else ("", ""))
        )
        served = [t for t in types if t.group == group and version in t.versions]
        if not served:
            raise errors.ApiError(404, "NotFound", "no OpenAPI document for this path")
        return resources.openapi_group_version(group, version, served)

    def _parse(self, path: str) -> Target:
        parts = [p for p in path.strip("/").split("/") if p]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        namespace = ""
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
            namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        t = self.store.find_type(group, version, rest[0])
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in t.subresources:
            raise errors.ApiError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return Target(t, version, namespace if t.namespaced else "", name, sub)

    @staticmethod
    def _verb(request: aiohttp.web.Request, target: Target) -> str:
        method = request.method
        if method == "GET":
            if target.name:
                return "get"
            return "watch" if request.query.get("watch") in ("true", "1") else "list"
        if method == "DELETE":
            return "delete" if target.name else "deletecollection"
        return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())

    async def _resource(
        self, request: aiohttp.web.Request, user: auth.User, target: Target
    ) -> aiohttp.web.StreamResponse:
        verb = self._verb(request, target)
        t = target.type
        if t.plural != "selfsubjectaccessreviews":  # every user may ask about themselves
            rbac.authorize(
                self.store,
                user,
                rbac.Attributes(
                    verb, t.group, t.plural, target.subresource, target.namespace, target.name
                ),
            )
        query = request.query
        selector = selectors.Selector.parse(query.get("labelSelector"), query.get("fieldSelector"))
        scope = target.namespace or None
        if verb == "watch":
            return await self._watch(request, target, selector)
        if verb == "list":
            return self._answer(
                request, target, self.store.select(t, scope, selector), listing=True
            )
        if target.subresource == "scale" and verb in ("get", "update", "patch"):
            return await self._scale(request, target, verb)
        if verb == "get":
            if target.subresource == "log":
                return aiohttp.web.Response(
                    text=await self._log(target, query), content_type="text/plain"
                )
            return self._answer(request, target, [self.store.get(t, target.namespace, target.name)])
        body = await self._body(request)
        if query.get("dryRun") or (
            verb.startswith("delete") and isinstance(body, dict) and body.get("dryRun")
        ):
            raise errors.bad_request("kube-local does not support dryRun: nothing was changed")
        if verb == "create" and t.plural == "selfsubjectaccessreviews":
            review = dict(
                body or {}, apiVersion="authorization.k8s.io/v1", kind="SelfSubjectAccessReview"
            )
            review["status"] = rbac.review(self.store, user, review.get("spec") or {})
            return _json(review, 201)
        if verb == "create" and target.subresource == "token":
            return _json(self._token(target, body), 201)
        if verb == "create" and t.plural == "pods" and not t.group:
            self._admit_pod(target.namespace, body)
        if verb == "create":
            return self._answer(
                request, target, [verbs.create(self.store, t, target.namespace, body)], status=201
            )
        if verb == "update":
            current = self.store.get(t, target.namespace, target.name)
            return self._answer(
                request, target, [verbs.write(self.store, t, current, body, target.subresource)]
            )
        if verb == "patch":
            return self._answer(
                request,
                target,
                [
                    verbs.patch(
                        self.store,
                        t,
                        target.namespace,
                        target.name,
                        request.content_type,
                        body,
                        target.subresource,
                    )
                ],
            )
        policy = query.get("propagationPolicy") or (body or {}).get("propagationPolicy")
        grace_given = query.get("gracePeriodSeconds", (body or {}).get("gracePeriodSeconds"))
        grace = None if grace_given is None else int(grace_given)
        if verb == "delete":
            return self._answer(
                request,
                target,
                [verbs.delete(self.store, t, target.namespace, target.name, policy, grace)],
            )
        gone = [
            verbs.delete(
                self.store,
                t,
                o["metadata"].get("namespace", ""),
                o["metadata"]["name"],
                policy,
                grace,
            )
            for o in self.store.select(t, scope, selector)
        ]
        return self._answer(request, target, gone, listing=True)

    @staticmethod
    async def _body(request: aiohttp.web.Request) -> Any:
        if "protobuf" in request.content_type:
            raw = await request.read()
            return protobuf.decode(raw) if raw else None
        text = await request.text()
        if not text.strip():
            return None
        try:
            if "yaml" in request.content_type:
                return yaml.safe_load(text)
            return json.loads(text)
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"the request body could not be decoded: {exc}") from exc

    def _answer(
        self,
        request: aiohttp.web.Request,
        target: Target,
        objs: list[store.Obj],
        listing: bool = False,
        status: int = 200,
    ) -> aiohttp.web.Response:
        t = target.type
        for obj in objs:
            obj["apiVersion"] = t.api_version(target.version)
        if "as=Table" in request.headers.get("Accept", ""):
            return _json(
                tables.table(
                    t, objs, str(self.store.version), request.query.get("includeObject", "Metadata")
                ),
                status,
            )
        if listing:
            return _json(verbs.list_kind(t, target.version, objs, self.store.version), status)
        return _json(objs[0], status)

    async def _scale(
        self, request: aiohttp.web.Request, target: Target, verb: str
    ) -> aiohttp.web.Response:
        """``…/scale``: the object's replicas as a Scale; writes change only those."""
        t = target.type
        current = self.store.get(t, target.namespace, target.name)
        if verb == "get":
            return _json(scale.view(current))
        body = await self._body(request)
        wanted = (
            body
            if verb == "update"
            else patches.apply(request.content_type, scale.view(current), body)
        )
        try:
            replicas = scale.replicas_of(wanted)
        except ValueError as exc:
            raise errors.bad_request(str(exc)) from exc
        stored = verbs.write(self.store, t, current, scale.scaled(current, replicas), "")
        return _json(scale.view(stored))

    def _token(self, target: Target, body: Any) -> dict[str, Any]:
        account = self.store.get(target.type, target.namespace, target.name)
        token = self.tokens.issue(target.namespace, target.name, account["metadata"]["uid"])
        expiry = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=24)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        spec = (body or {}).get("spec") or {}
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": target.name, "namespace": target.namespace},
            "spec": spec,
            "status": {"token": token, "expirationTimestamp": expiry},
        }

    # -- watches ------------------------------------------------------------------

    async def _watch(
        self, request: aiohttp.web.Request, target: Target, selector: selectors.Selector
    ) -> aiohttp.web.StreamResponse:
        """Stream events as newline-delimited JSON, or one per message over a WebSocket when
        the client asks to upgrade (fabric8, the Java client inside Spark, does)."""
        wanted = request.query.get("resourceVersion", "")
        initial = request.query.get("sendInitialEvents") == "true"
        since = None if wanted in ("", "0") or initial else int(wanted)
        timeout = float(request.query.get("timeoutSeconds", "1800"))
        response: aiohttp.web.StreamResponse
        if request.headers.get("Upgrade", "").lower() == "websocket":
            socket = aiohttp.web.WebSocketResponse(
                protocols=[
                    p.strip()
                    for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")
                    if p.strip()
                ]
            )
            response = socket

            async def emit(event: dict[str, Any]) -> None:
                await socket.send_str(json.dumps(event))
        else:
            stream = aiohttp.web.StreamResponse()
            stream.content_type = "application/json"
            response = stream

            async def emit(event: dict[str, Any]) -> None:
                await stream.write(json.dumps(event).encode() + b"\n")

        try:
            queue, backlog = self.store.subscribe(target.type, since)
        except errors.ApiError as failure:
            await response.prepare(request)
            await emit({"type": "ERROR", "object": failure.status()})
            await _close(response)
            return response
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            for event in backlog:
                await self._send(emit, target, selector, event)
            if initial:
                await self._bookmark(emit, target)
            while loop.time() < deadline:
                transport = request.transport
                if transport is None or transport.is_closing():
                    break
                try:
                    event = await asyncio.wait_for(queue.get(), min(1.0, deadline - loop.time()))
                except TimeoutError:
                    continue
                await self._send(emit, target, selector, event)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self.store.unsubscribe(target.type, queue)
        await _close(response)
        return response

    async def _bookmark(self, emit: Emit, target: Target) -> None:
        """The end of the initial events of a watch-list (``sendInitialEvents=true``)."""
        t = target.type
        marker = {
            "kind": t.kind,
            "apiVersion": t.api_version(target.version),
            "metadata": {
                "resourceVersion": str(self.store.version),
                "annotations": {"k8s.io/initial-events-end": "true"},
            },
        }
        await emit({"type": "BOOKMARK", "object": marker})

    @staticmethod
    async def _send(
        emit: Emit, target: Target, selector: selectors.Selector, event: store.Event
    ) -> None:
        obj, previous = event.object, event.previous
        if target.namespace and obj["metadata"].get("namespace") != target.namespace:
            return
        now_matches = selector.matches(obj)
        before = previous is not None and selector.matches(previous)
        kind = event.type
        if kind == "MODIFIED" and now_matches != before:
            kind = "ADDED" if now_matches else "DELETED"
        elif kind == "DELETED":
            now_matches = before or now_matches
        if not (now_matches or (kind == "DELETED" and before)):
            return
        obj = dict(obj, apiVersion=target.type.api_version(target.version))
        await emit({"type": kind, "object": obj})
