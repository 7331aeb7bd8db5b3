"""The ``turnlog`` command line (host §7), also ``python -m host``: ``demo``, ``chat``, ``serve`` and
eventlog's log commands mounted with the host's root rules. ``main`` only picks the command; the
module that runs it is imported then, so ``--help``, ``--version`` and the log commands load
neither the JSON-RPC server nor chat nor the demo."""

from ._errors import StartupError as StartupError
from ._errors import UsageError as UsageError
from ._main import main as main
from ._main import split_command as split_command
