"""Who is asking: bearer tokens of the admin and of ServiceAccounts.

The admin token (written into the kubeconfig by ``kube-local.sh up``) belongs to
``kube-admin`` in the group ``system:masters``, which RBAC lets do anything, as on a
cluster. ServiceAccount tokens are opaque random strings (not signed JWTs) issued by
the TokenRequest subresource (``kubectl create token``) or written into Secrets of
type ``kubernetes.io/service-account-token``; a token stops working when its
ServiceAccount is deleted (its uid is checked on every request).
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Callable

from kube_local import errors

SA_PREFIX = "system:serviceaccount:"


@dataclasses.dataclass(frozen=True, slots=True)
class User:
    name: str
    groups: tuple[str, ...]

    @classmethod
    def service_account(cls, namespace: str, name: str) -> User:
        return cls(
            f"{SA_PREFIX}{namespace}:{name}",
            (
                "system:serviceaccounts",
                f"system:serviceaccounts:{namespace}",
                "system:authenticated",
            ),
        )

    @property
    def is_admin(self) -> bool:
        return "system:masters" in self.groups


ADMIN = User("kube-admin", ("system:masters", "system:authenticated"))


@dataclasses.dataclass(frozen=True, slots=True)
class _Grant:
    namespace: str
    name: str
    uid: str


class Tokens:
    """Issued tokens and the users they stand for."""

    def __init__(self, admin_token: str) -> None:
        self.admin_token = admin_token
        self._grants: dict[str, _Grant] = {}

    def issue(self, namespace: str, name: str, uid: str) -> str:
        token = "kl-sa-" + secrets.token_urlsafe(32)
        self._grants[token] = _Grant(namespace, name, uid)
        return token

    def authenticate(self, header: str | None, sa_uid: Callable[[str, str], str | None]) -> User:
        """The user of an ``Authorization`` header.

        ``sa_uid(namespace, name)`` returns the current uid of a ServiceAccount (or None).
        """
        if not header or not header.lower().startswith("bearer "):
            raise errors.ApiError(401, "Unauthorized", "Unauthorized")
        token = header[7:].strip()
        if secrets.compare_digest(token, self.admin_token):
            return ADMIN
        grant = self._grants.get(token)
        if grant is None or sa_uid(grant.namespace, grant.name) != grant.uid:
            raise errors.ApiError(401, "Unauthorized", "Unauthorized")
        return User.service_account(grant.namespace, grant.name)
