"""What the control plane does after a write, run synchronously as a store listener.

* Garbage collection by ``ownerReferences``: when an owner is gone, dependents none of
  whose owners remain are deleted (background propagation); an owner deleted with
  ``propagationPolicy=Foreground`` carries the ``foregroundDeletion`` finalizer, its
  dependents are deleted, and it goes once none is left. ``Orphan`` is handled by the
  delete handler (it strips the references first). Real GC runs asynchronously and
  only waits for dependents with ``blockOwnerDeletion``; here every dependent counts.
* Namespaces: a new one is ``Active`` and gets the ``default`` ServiceAccount and the
  ``kube-root-ca.crt`` ConfigMap; deleting one deletes what is in it.
* CustomResourceDefinitions: creating one serves its resource and marks it
  ``Established``; deleting one stops serving it and drops its objects.
* ServiceAccount token Secrets get ``token``, ``ca.crt`` and ``namespace``.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from kube_local import auth, resources, store

FOREGROUND = "foregroundDeletion"
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class Controllers:
    """The listener; ``ca_pem`` is what pods must trust to reach the API."""

    def __init__(self, tokens: auth.Tokens, ca_pem: str) -> None:
        self.tokens, self.ca_pem = tokens, ca_pem

    def __call__(self, data: store.Store, t: resources.ResourceType, event: store.Event) -> None:
        obj = event.object
        m = obj.get("metadata", {})
        if t.key == ("", "namespaces"):
            self._namespace(data, event)
        elif t.key == CRD_KEY:
            self._crd(data, event)
        elif t.key == ("", "secrets") and event.type == "ADDED":
            self._token_secret(data, obj)
        if event.type == "DELETED":
            self._collect(data, m.get("uid", ""))
            for ref in m.get("ownerReferences") or []:
                self._settle_foreground(data, ref.get("uid", ""))
        elif m.get("deletionTimestamp") and FOREGROUND in (m.get("finalizers") or []):
            for dt, dependent in self._dependents(data, m.get("uid", "")):
                dm = dependent["metadata"]
                data.remove(dt, dm.get("namespace", ""), dm["name"])
            self._settle_foreground(data, m.get("uid", ""))

    # -- garbage collection --------------------------------------------------------

    @staticmethod
    def _dependents(
        data: store.Store, uid: str
    ) -> list[tuple[resources.ResourceType, dict[str, Any]]]:
        return [
            (t, copy.deepcopy(o))
            for t, o in data.everything()
            if any(r.get("uid") == uid for r in o["metadata"].get("ownerReferences") or [])
        ]

    def _collect(self, data: store.Store, uid: str) -> None:
        live = {o["metadata"].get("uid") for _, o in data.everything()}
        for t, dependent in self._dependents(data, uid):
            refs = dependent["metadata"].get("ownerReferences") or []
            if not any(r.get("uid") in live for r in refs):
                data.remove(
                    t, dependent["metadata"].get("namespace", ""), dependent["metadata"]["name"]
                )

    def _settle_foreground(self, data: store.Store, uid: str) -> None:
        for t, owner in list(data.everything()):
            om = owner["metadata"]
            if om.get("uid") != uid or FOREGROUND not in (om.get("finalizers") or []):
                continue
            if not om.get("deletionTimestamp") or self._dependents(data, uid):
                return
            updated = copy.deepcopy(owner)
            updated["metadata"]["finalizers"] = [f for f in om["finalizers"] if f != FOREGROUND]
            data.replace(t, updated)
            return

    # -- namespaces, CRDs, tokens ------------------------------------------------

    def _namespace(self, data: store.Store, event: store.Event) -> None:
        name = event.object["metadata"]["name"]
        if event.type == "ADDED":
            active = copy.deepcopy(event.object)
            active["status"] = {"phase": "Active"}
            data.replace(data.type_of("", "namespaces"), active)
            data.create(
                data.type_of("", "serviceaccounts"), name, {"metadata": {"name": "default"}}
            )
            data.create(
                data.type_of("", "configmaps"),
                name,
                {"metadata": {"name": "kube-root-ca.crt"}, "data": {"ca.crt": self.ca_pem}},
            )
        elif event.type == "DELETED":
            for t, obj in list(data.everything()):
                if t.namespaced and obj["metadata"].get("namespace") == name:
                    data.remove(t, name, obj["metadata"]["name"])

    @staticmethod
    def _crd(data: store.Store, event: store.Event) -> None:
        served = resources.from_crd(event.object)
        if event.type == "DELETED":
            data.types.pop(served.key, None)
            return
        data.types[served.key] = served
        names = event.object.get("spec", {}).get("names", {})
        status = {
            "acceptedNames": names,
            "storedVersions": [served.versions[0]],
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "reason": r,
                    "message": "",
                    "lastTransitionTime": store.now(),
                }
                for t, r in (
                    ("NamesAccepted", "NoConflicts"),
                    ("Established", "InitialNamesAccepted"),
                )
            ],
        }
        current = event.object.get("status") or {}
        if current.get("acceptedNames") != names or not current.get("conditions"):
            updated = copy.deepcopy(event.object)
            updated["status"] = status
            data.replace(data.type_of(*CRD_KEY), updated)

    def _token_secret(self, data: store.Store, secret: dict[str, Any]) -> None:
        m = secret["metadata"]
        sa_name = (m.get("annotations") or {}).get("kubernetes.io/service-account.name")
        if secret.get("type") != "kubernetes.io/service-account-token" or not sa_name:
            return
        if (secret.get("data") or {}).get("token"):
            return
        account = data.find(data.type_of("", "serviceaccounts"), m["namespace"], sa_name)
        if account is None:
            return
        token = self.tokens.issue(m["namespace"], sa_name, account["metadata"]["uid"])
        filled = copy.deepcopy(secret)
        filled.setdefault("data", {}).update(
            token=_b64(token), namespace=_b64(m["namespace"]), **{"ca.crt": _b64(self.ca_pem)}
        )
        data.replace(data.type_of("", "secrets"), filled)
