"""The chart installed as the README does, for the tests beside the scenario."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from e2e_k8s_testing.cluster import Cluster
from e2e_k8s_testing.k8s_job import Settings, say
from e2e_k8s_testing.scenario import Scenario


def chart_values(images: Mapping[str, str], **more: str) -> dict[str, str]:
    """``--set`` values for the operator image of ``images`` (``name:tag``)."""
    repository, tag = images["operator"].rsplit(":", 1)
    return {
        "image.repository": repository,
        "image.tag": tag,
        "image.pullPolicy": images["pull_policy"],
        **more,
    }


@contextlib.contextmanager
def chart_installed(
    cluster: Cluster, images: Mapping[str, str], s3_server: Any, release: str
) -> Iterator[Scenario]:
    """The chart installed as the README does (cluster-wide, the driver account in the
    job namespace) with the operator image of this checkout; removed again afterwards."""
    settings = Settings(
        runtime_image=images["runtime"],
        release=release,
        image_pull_policy=images["pull_policy"],
        storage_endpoint=s3_server.cluster_endpoint,
    )
    s3_server.create_bucket("checkpoints")
    scenario = Scenario(cluster, killer=None, s=settings, log=say)
    scenario.install(chart_values(images))
    try:
        yield scenario
    finally:
        scenario.cleanup()
