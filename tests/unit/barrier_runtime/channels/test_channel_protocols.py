"""The network endpoints fit the channel protocols a subtask uses (checked by mypy)."""

from __future__ import annotations

from barrier_runtime.channels import endpoints
from barrier_runtime.task import channel as local_channel


def check_protocols(
    remote_out: endpoints.RemoteOutputChannel, remote_in: endpoints.RemoteInputChannel
) -> None:
    """Never called: ``mypy --strict`` on this file checks the endpoints fit a subtask."""
    output: local_channel.OutputChannel = remote_out
    input_: local_channel.InputChannel = remote_in
    del output, input_
