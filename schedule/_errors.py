"""Errors of the schedule package (schedule §4, schedule §8, schedule §10.3)."""

from __future__ import annotations


class ScheduleInputError(Exception):
    """An argument that cannot become a record; tools turn it into ``{"code","message"}``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_value(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


class ScheduleLogError(Exception):
    """Durable ``schedule/change`` data violates the v1 protocol (for logs and guards only)."""

    code = "corrupt_schedule_log"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AgentBusy(Exception):
    """Raised by the host's ``run_maintenance`` when a turn or another task owns the agent."""


class InvalidToolArguments(Exception):
    """Tool arguments that fail the tool's JSON schema; the host reports INVALID_ARGS."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
