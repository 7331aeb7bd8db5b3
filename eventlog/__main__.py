"""``python -m eventlog <command>``: the log commands of log-format §10 with ``eventlog.default_root()``."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
