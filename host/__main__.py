"""``python -m host``: the ``turnlog`` command line."""

from __future__ import annotations

import sys

from host.cli import main

sys.exit(main())
