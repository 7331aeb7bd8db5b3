"""The per-agent FIFO of schedule transactions (schedule §9)."""

from __future__ import annotations

from types import TracebackType


class ScheduleQueue:
    """Serialises every management transaction and drive step of one agent, first come first
    served: each waits for the previous one to finish, whether it succeeded or failed.

    Used as ``async with queue:``. Waiting is cancellable and leaves the queue untouched; a holder
    releases it however its body ends. Not reentrant.
    """

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        # trio is imported here, not with the module: importing schedule (its pure functions,
        # which the read-only log commands use) never loads it.
        import trio

        self._lock = trio.StrictFIFOLock()

    async def __aenter__(self) -> None:
        await self._lock.acquire()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.release()

    def locked(self) -> bool:
        """Whether a transaction holds the queue now."""
        return self._lock.locked()
