"""The inbox of one live session (host §3.2): two FIFO queues whose every change is logged.

``next-turn`` holds follow-ups (prompts, reminders), ``next-step`` steering for the running turn.
Each change is appended as one ``agent/inbox/spliced`` event before the queues change, so the
queues are always what a replay of the log gives (:func:`~host.runtime._history.replay_inbox`).
A splice that changes nothing is never written.

Queued messages are plain mappings in eventlog's key order ``id, role, source, content``: they are
what the pre-step hooks receive (timecontext's ``Message``), a prompt's content blocks are stored
verbatim, and a resumed deepseek-harness inbox may hold sources of kinds turnlog does not know. So
an insertion splice is written as a mapping too; removals are ``vocab.AgentInboxSpliced``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from msgspec import UNSET

from eventlog import Session, vocab

Target = Literal["next-turn", "next-step"]
_CANCEL_ORDER: tuple[Target, ...] = ("next-step", "next-turn")
UserMessage = Mapping[str, Any]
"""A user-role message, ``{"id","role","source","content"}`` (timecontext's ``Message``)."""


def new_id() -> str:
    """A fresh message or retry id (UUID4)."""
    return str(uuid.uuid4())


def user_message(content: Sequence[Any], source: Mapping[str, Any]) -> dict[str, Any]:
    """A user-role message with a fresh id, in eventlog's key order ``id, role, source, content``."""
    return {"id": new_id(), "role": "user", "source": dict(source), "content": list(content)}


class Inbox:
    """The two queues of one session, every change appended to ``session`` first.

    Appends are synchronous and may raise eventlog's errors (a refused or failed session); the
    queues change only once the append succeeded.
    """

    def __init__(
        self, session: Session, queued: Mapping[Target, Sequence[UserMessage]] | None = None
    ) -> None:
        self._session = session
        queued = queued or {}
        self._queues: dict[Target, list[UserMessage]] = {
            "next-turn": list(queued.get("next-turn", ())),
            "next-step": list(queued.get("next-step", ())),
        }

    def __bool__(self) -> bool:
        """Whether either queue holds a message."""
        return bool(self._queues["next-turn"] or self._queues["next-step"])

    @property
    def steering(self) -> bool:
        """Whether ``next-step`` holds a message."""
        return bool(self._queues["next-step"])

    def insert(self, target: Target, message: UserMessage) -> None:
        """Append ``message`` to ``target``; its splice is the message's receipt."""
        queue = self._queues[target]
        self._session.append(
            vocab.AGENT_INBOX_SPLICED, {"target": target, "start": len(queue), "inserted": [message]}
        )
        queue.append(message)

    def claim_turn_input(self) -> tuple[list[UserMessage], list[UserMessage]]:
        """At a turn boundary: all of ``next-step``, then one ``next-turn`` message, each
        non-empty claim its own splice. Returns the two claims, ``(steering, followups)``; the
        turn's batch is their concatenation."""
        steering = self._claim("next-step", len(self._queues["next-step"]))
        return steering, self._claim("next-turn", min(1, len(self._queues["next-turn"])))

    def requeue(self, steering: Sequence[UserMessage], followups: Sequence[UserMessage]) -> None:
        """Put a turn's claims back at the front of their queues, the same messages (ids and
        sources included), so that the next turn boundary claims them again: one insertion
        splice at ``start`` 0 per non-empty claim, ``next-step`` first, as they were claimed
        (host §3.3, recovery after a storage failure)."""
        claims: tuple[tuple[Target, Sequence[UserMessage]], ...] = (
            ("next-step", steering),
            ("next-turn", followups),
        )
        for target, messages in claims:
            if messages:
                self._session.append(
                    vocab.AGENT_INBOX_SPLICED, {"target": target, "start": 0, "inserted": list(messages)}
                )
                self._queues[target][:0] = messages

    def claim_steering(self) -> list[UserMessage]:
        """Between steps: all of ``next-step``."""
        return self._claim("next-step", len(self._queues["next-step"]))

    def cancel(self) -> None:
        """Clear ``next-step``, then ``next-turn``, each non-empty one with a ``canceled`` splice."""
        for target in _CANCEL_ORDER:
            self._remove(target, len(self._queues[target]), canceled=True)

    def _claim(self, target: Target, count: int) -> list[UserMessage]:
        claimed = self._queues[target][:count]
        self._remove(target, count, canceled=False)
        return claimed

    def _remove(self, target: Target, count: int, *, canceled: bool) -> None:
        if count == 0:
            return
        self._session.append(
            vocab.AGENT_INBOX_SPLICED,
            vocab.AgentInboxSpliced(
                target=target,
                start=0,
                removed_count=count,
                inserted=[],
                outcome="canceled" if canceled else UNSET,
            ),
        )
        del self._queues[target][:count]
