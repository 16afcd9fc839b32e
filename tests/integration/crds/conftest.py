"""Puts this folder on ``sys.path`` so that the tests can ``import crd_cases`` (the table)
under ``--import-mode=importlib``."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
