"""``python -m barrier_runtime.cli`` is ``cjob``."""

import sys

from barrier_runtime.cli import main

sys.exit(main())
