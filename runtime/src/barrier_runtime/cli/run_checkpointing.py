"""``cjob run``'s options for checkpoints and keyed state, and the configuration they make."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from barrier_runtime.core import types


def add_options(opt: Callable[..., Any]) -> None:
    """Add the options with ``opt`` (the parser's ``add_argument``)."""
    opt(
        "--checkpoint-interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="time between two checkpoints (default %(default)g)",
    )
    opt(
        "--checkpoint-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="abort a checkpoint not completed by then (default %(default)g)",
    )
    opt(
        "--mode",
        choices=[m.value for m in types.CheckpointingMode],
        default="exactly-once",
        help="exactly-once (barriers aligned) or at-least-once (never blocks; records may be "
        "replayed after a restore) (default %(default)s)",
    )
    opt(
        "--unaligned",
        action="store_true",
        help="unaligned checkpoints: barriers overtake in-flight records, which are stored "
        "with the checkpoint (fast under back-pressure; exactly-once only)",
    )
    opt(
        "--incremental",
        action="store_true",
        help="incremental checkpoints: each uploads only the keyed state that changed since "
        "the previous one (savepoints stay whole)",
    )
    opt(
        "--local-recovery",
        action="store_true",
        help="with --incremental: workers keep local copies of what they upload (in "
        "$CJOB_LOCAL_STATE_DIR, else the temporary directory) and a restart on the same host "
        "reads them instead of the store",
    )
    opt(
        "--state-backend",
        choices=[k.value for k in types.StateBackendKind],
        default="memory",
        help="where keyed state lives: memory, or disk (RocksDB per subtask, in the local "
        "state directory, for state larger than memory) (default %(default)s)",
    )
    opt(
        "--state-memory",
        type=int,
        metavar="MIB",
        default=types.DEFAULT_STATE_MEMORY >> 20,
        help="with --state-backend disk: the memory each subtask's keyed state may use, in "
        "MiB (default %(default)s)",
    )


def from_args(args: argparse.Namespace) -> types.CheckpointConfig:
    return types.CheckpointConfig(
        interval=args.checkpoint_interval,
        timeout=args.checkpoint_timeout,
        mode=types.CheckpointingMode(args.mode),
        unaligned=args.unaligned,
        incremental=args.incremental,
        local_recovery=args.local_recovery,
        state_backend=types.StateBackend(
            types.StateBackendKind(args.state_backend), args.state_memory << 20
        ),
    )
