"""The HTTP layer: routing, authentication, authorization, discovery and watches.

Paths follow the real API: ``/api/v1[/namespaces/<ns>]/<plural>[/<name>[/<sub>]]``
and ``/apis/<group>/<version>/...``. Each resource request is authenticated
(:mod:`kube_local.auth`), authorized (:mod:`kube_local.rbac`) and handed to
:mod:`kube_local.verbs`; lists and gets may be answered as Tables
(:mod:`kube_local.tables`); watches stream newline-delimited JSON events.
"""

from __future__ import annotations

import datetime
import json
import pathlib
from typing import Any

import aiohttp.web
import yaml

from kube_local import (
    auth,
    controllers,
    errors,
    patches,
    paths,
    protobuf,
    rbac,
    scale,
    selectors,
    store,
    tables,
    verbs,
    watches,
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
            discovery = paths.discovery(self.store, request.path)
            if discovery is not None:
                return _json(discovery)
            target = paths.parse(self.store, request.path)
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

    async def _log(self, target: paths.Target, query: Any) -> str:
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

    @staticmethod
    def _verb(request: aiohttp.web.Request, target: paths.Target) -> str:
        method = request.method
        if method == "GET":
            if target.name:
                return "get"
            return "watch" if request.query.get("watch") in ("true", "1") else "list"
        if method == "DELETE":
            return "delete" if target.name else "deletecollection"
        return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())

    async def _resource(
        self, request: aiohttp.web.Request, user: auth.User, target: paths.Target
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
            return await watches.watch(self.store, request, target, selector)
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
        target: paths.Target,
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
        self, request: aiohttp.web.Request, target: paths.Target, verb: str
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

    def _token(self, target: paths.Target, body: Any) -> dict[str, Any]:
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
