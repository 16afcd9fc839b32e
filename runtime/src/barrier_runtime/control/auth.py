"""Bearer-token authentication for the control API (RFC 6750, header form only).

Every endpoint except ``/healthz``, ``/readyz`` and ``/metrics`` (probes and
Prometheus scrapes; none of them reveals a secret or changes the job) needs
``Authorization: Bearer <token>`` with the job's token (a Kubernetes Secret
in production). Tokens are compared in constant time and never logged or
echoed. Without a token (``token=None``, a laptop run) every request passes.

>>> auth = BearerAuth("s3cret")
>>> auth.check("Bearer s3cret"), auth.check("bearer s3cret"), auth.check("Bearer nope")
(<AuthVerdict.OK: 'ok'>, <AuthVerdict.OK: 'ok'>, <AuthVerdict.INVALID_TOKEN: 'invalid-token'>)
>>> auth.check(None), auth.check("Basic czNjcmV0")
(<AuthVerdict.MISSING: 'missing'>, <AuthVerdict.WRONG_SCHEME: 'wrong-scheme'>)
"""

from __future__ import annotations

import enum
import hmac

REALM = "cjob"


class AuthVerdict(enum.Enum):
    OK = "ok"
    MISSING = "missing"
    """No ``Authorization`` header."""
    WRONG_SCHEME = "wrong-scheme"
    """An ``Authorization`` header, but not ``Bearer <token>``."""
    INVALID_TOKEN = "invalid-token"

    @property
    def message(self) -> str:
        return _MESSAGES[self]


_MESSAGES = {
    AuthVerdict.OK: "authorized",
    AuthVerdict.MISSING: "authentication required: send 'Authorization: Bearer <token>'",
    AuthVerdict.WRONG_SCHEME: "unsupported scheme: send 'Authorization: Bearer <token>'",
    AuthVerdict.INVALID_TOKEN: "invalid bearer token",
}


class BearerAuth:
    """Checks ``Authorization`` headers against one token (or lets everything pass)."""

    def __init__(self, token: str | None) -> None:
        if token is not None and not token.strip():
            raise ValueError("the control API token must not be empty; pass None to disable auth")
        self._token = None if token is None else token.encode("utf-8")

    @property
    def enabled(self) -> bool:
        return self._token is not None

    def check(self, header: str | None) -> AuthVerdict:
        if self._token is None:
            return AuthVerdict.OK
        if header is None or not header.strip():
            return AuthVerdict.MISSING
        scheme, _, credentials = header.strip().partition(" ")
        if scheme.lower() != "bearer" or not credentials.strip():
            return AuthVerdict.WRONG_SCHEME
        if hmac.compare_digest(credentials.strip().encode("utf-8"), self._token):
            return AuthVerdict.OK
        return AuthVerdict.INVALID_TOKEN

    def __repr__(self) -> str:  # never show the token
        return f"BearerAuth(enabled={self.enabled})"


def challenge(verdict: AuthVerdict) -> str:
    """The ``WWW-Authenticate`` header value for a refused request."""
    if verdict is AuthVerdict.INVALID_TOKEN:
        return f'Bearer realm="{REALM}", error="invalid_token"'
    if verdict is AuthVerdict.WRONG_SCHEME:
        return f'Bearer realm="{REALM}", error="invalid_request"'
    return f'Bearer realm="{REALM}"'
