"""Project-wide test setup."""

from __future__ import annotations

import zoneinfo

# Every zone comes from the tzdata package, as in the turnlog application (host.md §7), so
# results do not depend on the machine's system time-zone database.
zoneinfo.reset_tzpath(to=())
