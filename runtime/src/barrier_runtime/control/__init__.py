"""The driver's control plane: the job seam and its HTTP API.

Architecture: docs/architecture.md, 'Control API'; every endpoint: docs/control-api.md.

* :mod:`~barrier_runtime.control.job`: :class:`JobControl`, what the API needs
  from a running job (the executors implement it), and its value types.
* :mod:`~barrier_runtime.control.server`: :class:`~.server.ControlServer`, the
  HTTP server (stdlib, one daemon thread per request) the driver starts.
* :mod:`~barrier_runtime.control.api`: the routes, independent of HTTP;
  :mod:`~.views` (the answers, as :mod:`barrier_runtime.control_document`
  bodies; requests are parsed by :mod:`barrier_runtime.control_requests`),
  :mod:`~.auth` (bearer token), :mod:`~.metrics` (Prometheus, ``cjob_`` prefix),
  :mod:`~.http` (the transport).

The server modules need ``prometheus-client``; import them from their modules
(``from barrier_runtime.control.server import ControlServer``) so that the job
seam stays importable without it.
"""

from barrier_runtime.control.job import (
    JobControl,
    JobInfo,
    JobState,
    RuntimeMetrics,
    SavepointFailedError,
)

__all__ = ["JobControl", "JobInfo", "JobState", "RuntimeMetrics", "SavepointFailedError"]
