"""The log commands of turnlog (log-format §10): ``ls``, ``inspect``, ``validate``, ``tail [-f]``
and ``fork``.

``main(argv, *, checks=(), root=None, prog="turnlog")`` is the whole contract: the host's
``turnlog`` script mounts it with its own root (host §5.1) and package checks, and
``python -m eventlog`` runs it with ``eventlog.default_root()``.

Guarantees:

- None of these commands writes to an existing session file, takes its lock or repairs it;
  only ``fork`` writes, and only a new file.
- ``--json`` output has exactly the keys, in the order, of log-format §10.1–10.5; human output
  may change.
- Exit status: 0 success, 1 failure (one line ``turnlog: <message>`` on stderr), 2 usage error.

Layout: ``_render`` (pure: times, data cutting, the human lines and JSON documents),
``_validate`` (the statuses and the checks of one log), ``_commands`` (the effects: reading,
following, forking, printing), ``_parser`` (the argument parser), ``_main`` (``main``).
"""

from __future__ import annotations

from ._main import main as main
from ._parser import UsageError as UsageError
from ._validate import Check as Check
from ._validate import rule_messages as rule_messages

__all__ = ["Check", "UsageError", "main", "rule_messages"]
