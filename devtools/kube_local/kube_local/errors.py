"""The API server's failures as Kubernetes ``Status`` objects.

Every refusal (404, 409, 410, 403, 422, …) is an :class:`ApiError`; the HTTP layer
turns it into the JSON body a real API server sends, so clients parse it as usual.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A request the API refuses: HTTP ``code``, Kubernetes ``reason`` and a message."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def not_found(plural: str, group: str, name: str) -> ApiError:
    resource = f"{plural}.{group}" if group else plural
    return ApiError(
        404,
        "NotFound",
        f'{resource} "{name}" not found',
        {"name": name, "group": group, "kind": plural},
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    resource = f"{plural}.{group}" if group else plural
    return ApiError(
        409,
        "AlreadyExists",
        f'{resource} "{name}" already exists',
        {"name": name, "group": group, "kind": plural},
    )


def conflict(plural: str, group: str, name: str) -> ApiError:
    resource = f"{plural}.{group}" if group else plural
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {resource} "{name}": the object has '
        "been modified; please apply your changes to the latest version and try "
        "again",
        {"name": name, "group": group, "kind": plural},
    )


def gone(resource_version: str, oldest: int) -> ApiError:
    return ApiError(410, "Expired", f"too old resource version: {resource_version} ({oldest})")


def invalid(message: str) -> ApiError:
    return ApiError(422, "Invalid", message)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)
