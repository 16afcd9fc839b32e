"""The examples in the channels package's docstrings run, and the endpoints fit the protocols."""

from __future__ import annotations

import doctest
import types

import pytest

from barrier_runtime.channels import codec, endpoints, frames, network, testing
from barrier_runtime.local import channel as local_channel

MODULES = [codec, frames, network, testing]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[1])
def test_docstring_examples(module: types.ModuleType) -> None:
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def check_protocols(
    remote_out: endpoints.RemoteOutputChannel, remote_in: endpoints.RemoteInputChannel
) -> None:
    """Never called: ``mypy --strict`` on this file checks the endpoints fit a subtask."""
    output: local_channel.OutputChannel = remote_out
    input_: local_channel.InputChannel = remote_in
    del output, input_
