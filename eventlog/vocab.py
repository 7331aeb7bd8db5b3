"""The core event vocabulary the agent loop writes (log-format §9).

Type constants and msgspec Structs (camelCase on disk, unknown keys refused, optional keys
omitted when unset, tagged unions on ``type``/``kind``) whose encodings have exactly the key
orders of log-format §9. Build event data from them and it is valid by construction::

    Message(id="m-1", role="user", source=UserSource(rpc_id="7"),
            content=[TextBlock(text="Café at 9?")])

``decode(event)`` decodes a core event strictly and checks its invariants (log-format §9.1,
log-format §9.2); ``check_structure(events)`` checks the order rules of log-format §9.3.
``eventlog`` itself never enforces either at append; ``turnlog validate`` runs both.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, TypeAlias

import msgspec
from msgspec import UNSET, UnsetType

from .errors import InvalidEvent
from .format import Event
from .values import is_safe_int

__all__ = [
    "AGENT_INBOX_SPLICED",
    "ASSISTANT_MESSAGE",
    "CORE_TYPES",
    "REQUEST_HEADER",
    "SESSION_END_SEED",
    "STEP_END",
    "STEP_START",
    "TOOL_CALL",
    "TOOL_RESULT",
    "TURN_END",
    "TURN_START",
    "USER_MESSAGE",
    "AbortByHook",
    "AbortByParent",
    "AbortByUser",
    "AbortDisposed",
    "AbortReason",
    "Aborted",
    "AdapterDefaults",
    "AgentInboxSpliced",
    "AssistantMessage",
    "Blocked",
    "Completed",
    "ContentBlock",
    "ErrorInfo",
    "Failed",
    "ForeignInboxSpliced",
    "ForeignMessage",
    "ImageBlock",
    "Interrupted",
    "MaxTokens",
    "Message",
    "ModelSource",
    "PluginSource",
    "ReasoningBlock",
    "RequestConfig",
    "RequestHeader",
    "RequestSnapshot",
    "Section",
    "SessionEndSeed",
    "Source",
    "StepEnd",
    "StepStart",
    "TextBlock",
    "ToolCall",
    "ToolCallBlock",
    "ToolError",
    "ToolResult",
    "ToolResultBlock",
    "ToolResultContent",
    "ToolSource",
    "ToolSpec",
    "TurnEnd",
    "TurnEndReason",
    "TurnStart",
    "Usage",
    "UserSource",
    "check_structure",
    "decode",
]

TURN_START = "turn/start"
TURN_END = "turn/end"
STEP_START = "step/start"
STEP_END = "step/end"
USER_MESSAGE = "user/message"
ASSISTANT_MESSAGE = "assistant/message"
TOOL_CALL = "tool/call"
TOOL_RESULT = "tool/result"
REQUEST_HEADER = "request/header"
AGENT_INBOX_SPLICED = "agent/inbox/spliced"
SESSION_END_SEED = "session/end-seed"


class _Data(msgspec.Struct, rename="camel", forbid_unknown_fields=True, omit_defaults=True):
    """Shared configuration of every vocabulary Struct (each also sets ``kw_only``, which msgspec
    does not inherit, so every field is passed by keyword)."""


# --------------------------------------------------------------------------- log-format §9.1 messages


class TextBlock(_Data, tag_field="type", tag="text", kw_only=True):
    text: str


class ReasoningBlock(_Data, tag_field="type", tag="reasoning", kw_only=True):
    """Assistant messages only."""

    text: str


class ImageBlock(_Data, tag_field="type", tag="image", kw_only=True):
    attachment: dict[str, Any]  # opaque


class ToolCallBlock(_Data, tag_field="type", tag="tool-call", kw_only=True):
    """Assistant messages only. ``arguments`` is the raw JSON string from the model."""

    id: str
    name: str
    arguments: str


ToolResultContent: TypeAlias = TextBlock | ImageBlock


class ToolResultBlock(_Data, tag_field="type", tag="tool-result", kw_only=True):
    """Tool-result messages only; writers put ``is_error`` on every result."""

    tool_call_id: str
    is_error: bool | UnsetType = UNSET
    content: list[ToolResultContent]


ContentBlock: TypeAlias = TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock


class Section(_Data, kw_only=True):
    name: str
    text: str


class UserSource(_Data, tag_field="kind", tag="user", kw_only=True):
    """A prompt; ``rpc_id`` (and then optionally ``client_time_zone``) when admitted by JSON-RPC."""

    rpc_id: str | UnsetType = UNSET
    client_time_zone: str | UnsetType = UNSET


class PluginSource(_Data, tag_field="kind", tag="plugin", kw_only=True):
    plugin: str
    form: Literal["instructions", "catalog", "snapshot", "notice", "relay", "recall"] | UnsetType = UNSET
    sections: list[Section] | UnsetType = UNSET  # with form "snapshot"
    summary: str | UnsetType = UNSET  # with form "notice"


class ModelSource(_Data, tag_field="kind", tag="model", kw_only=True):
    provider: str
    model: str
    replay_state: Any = UNSET  # any JSON value


class ToolSource(_Data, tag_field="kind", tag="tool", kw_only=True):
    call_id: str


Source: TypeAlias = UserSource | PluginSource | ModelSource | ToolSource


class Message(_Data, kw_only=True):
    """``{"id","role","source","content"}``; ``id`` non-empty and unique per session."""

    id: str
    role: Literal["user", "assistant"]
    source: Source
    content: list[ContentBlock]


class ForeignMessage(_Data, kw_only=True):
    """A user message whose source kind is not one of turnlog's four (deepseek-harness writes
    e.g. ``{"kind":"goal",…}``): read as an opaque object with a non-empty string ``kind``.
    ``decode`` returns it; turnlog never writes it."""

    id: str
    role: Literal["user"]
    source: dict[str, Any]
    content: list[ContentBlock]


# --------------------------------------------------------------------------- log-format §9.2 event data


class TurnStart(_Data, kw_only=True):
    turn: int


class StepStart(_Data, kw_only=True):
    turn: int
    step: int


class StepEnd(_Data, kw_only=True):
    turn: int
    step: int


class RequestConfig(_Data, kw_only=True):
    provider: str
    model: str
    reasoning_effort: str | UnsetType = UNSET
    temperature: float | UnsetType = UNSET
    max_tokens: int | UnsetType = UNSET
    stop: list[str] | UnsetType = UNSET


class AdapterDefaults(_Data, kw_only=True):
    """Config fields the adapter filled in by default (each requires the config field)."""

    reasoning_effort: Literal[True] | UnsetType = UNSET
    max_tokens: Literal[True] | UnsetType = UNSET


class ToolSpec(_Data):
    """Positional arguments too (the only such Struct here): host's tool API is written
    ``ToolSpec(name, description, parameters)``, and host uses this type as its own."""

    name: str
    description: str
    parameters: dict[str, Any]


class RequestSnapshot(_Data, kw_only=True):
    config: RequestConfig
    adapter_defaults: AdapterDefaults | UnsetType = UNSET
    system: str | UnsetType = UNSET  # writers omit an empty system prompt
    tools: list[ToolSpec] | UnsetType = UNSET  # writers omit an empty list


class RequestHeader(_Data, kw_only=True):
    header: RequestSnapshot
    reason: Literal["initial", "resume", "change"]


class Usage(_Data, kw_only=True):
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | UnsetType = UNSET
    cache_write_tokens: int | UnsetType = UNSET
    reasoning_tokens: int | UnsetType = UNSET


class AssistantMessage(_Data, kw_only=True):
    turn: int
    step: int
    message: Message
    usage: Usage | UnsetType = UNSET
    interrupted: Literal[True] | UnsetType = UNSET  # a reply cut short by a live cancel


class ToolCall(_Data, kw_only=True):
    turn: int
    step: int
    call_id: str
    name: str
    arguments: str


class ToolError(_Data, kw_only=True):
    name: str
    code: str


class ToolResult(_Data, kw_only=True):
    turn: int
    step: int
    message: Message
    error: ToolError | UnsetType = UNSET
    meta: Any = UNSET  # tool-private JSON
    mutations: list[Any] | UnsetType = UNSET  # deepseek-harness file-change receipts, preserved


class AbortByUser(_Data, tag_field="kind", tag="user", kw_only=True):
    pass


class AbortByParent(_Data, tag_field="kind", tag="parent", kw_only=True):
    pass


class AbortDisposed(_Data, tag_field="kind", tag="disposed", kw_only=True):
    pass


class AbortByHook(_Data, tag_field="kind", tag="hook", kw_only=True):
    reason: str


AbortReason: TypeAlias = AbortByUser | AbortByParent | AbortDisposed | AbortByHook


class ErrorInfo(_Data, kw_only=True):
    message: str
    code: str
    status: int | UnsetType = UNSET
    provider_retry_after_ms: int | UnsetType = UNSET
    request_id: str | UnsetType = UNSET


class Completed(_Data, tag_field="kind", tag="completed", kw_only=True):
    pass


class Aborted(_Data, tag_field="kind", tag="aborted", kw_only=True):
    """A live cancel."""

    reason: AbortReason


class Blocked(_Data, tag_field="kind", tag="blocked", kw_only=True):
    pass


class Failed(_Data, tag_field="kind", tag="error", kw_only=True):
    error: ErrorInfo


class MaxTokens(_Data, tag_field="kind", tag="max-tokens", kw_only=True):
    pass


class Interrupted(_Data, tag_field="kind", tag="interrupted", kw_only=True):
    """Written only by crash repair."""


TurnEndReason: TypeAlias = Completed | Aborted | Blocked | Failed | MaxTokens | Interrupted


class TurnEnd(_Data, kw_only=True):
    turn: int
    reason: TurnEndReason


class AgentInboxSpliced(_Data, kw_only=True):
    """Queued prompts entering or leaving the inbox (log-only)."""

    target: Literal["next-turn", "next-step"]
    start: int
    removed_count: int | UnsetType = UNSET
    inserted: list[Message]
    outcome: Literal["canceled"] | UnsetType = UNSET


class ForeignInboxSpliced(_Data, kw_only=True):
    """``agent/inbox/spliced`` whose inserted messages include a foreign source kind."""

    target: Literal["next-turn", "next-step"]
    start: int
    removed_count: int | UnsetType = UNSET
    inserted: list[ForeignMessage]
    outcome: Literal["canceled"] | UnsetType = UNSET


class SessionEndSeed(_Data, kw_only=True):
    """``{}``: the end of a fork seed, written only by fork."""


CORE_TYPES: dict[str, type[_Data]] = {
    TURN_START: TurnStart,
    USER_MESSAGE: Message,
    STEP_START: StepStart,
    REQUEST_HEADER: RequestHeader,
    ASSISTANT_MESSAGE: AssistantMessage,
    TOOL_CALL: ToolCall,
    TOOL_RESULT: ToolResult,
    STEP_END: StepEnd,
    TURN_END: TurnEnd,
    AGENT_INBOX_SPLICED: AgentInboxSpliced,
    SESSION_END_SEED: SessionEndSeed,
}

# --------------------------------------------------------------------------- decode

_KNOWN_SOURCE_KINDS = frozenset({"user", "plugin", "model", "tool"})
_USER_BLOCKS = frozenset({"text", "image"})
_ASSISTANT_BLOCKS = frozenset({"text", "reasoning", "image", "tool-call"})
_TOOL_RESULT_BLOCKS = frozenset({"text", "image", "tool-result"})


class _Bad(Exception):
    """An invariant broken; ``str(self)`` is the message fragment (plus detail)."""


def _check_source(source: object, context: str) -> None:
    # Strict decode of a known source kind (raises _Bad "invalid source").
    try:
        msgspec.convert(source, Source)
    except msgspec.ValidationError as exc:
        raise _Bad(f"{context}invalid source: {exc}") from None
    assert isinstance(source, dict)
    if source["kind"] == "user":
        if "clientTimeZone" in source and "rpcId" not in source:
            raise _Bad(f"{context}invalid source: clientTimeZone requires rpcId")
        if source.get("clientTimeZone") == "":
            raise _Bad(f"{context}invalid source: clientTimeZone must not be empty")
    elif source["kind"] == "plugin":
        if not source["plugin"]:
            raise _Bad(f"{context}invalid source: plugin must not be empty")
        if source.get("form") == "snapshot" and "sections" not in source:
            raise _Bad(f"{context}invalid source: a snapshot needs sections")
        if source.get("form") == "notice" and "summary" not in source:
            raise _Bad(f"{context}invalid source: a notice needs summary")


def _check_message(message: object, expect: Literal["user", "assistant", "tool"], context: str = "") -> None:
    """Check one message value against log-format §9.1 with its message fragments."""
    if not isinstance(message, dict) or not isinstance(message.get("id"), str) or not message["id"]:
        raise _Bad(f"{context}lacks an identified message")
    role = "assistant" if expect == "assistant" else "user"
    if message.get("role") != role:
        raise _Bad(f'{context}must have role "{role}"')
    source = message.get("source")
    fields: dict[str, Any] = source if isinstance(source, dict) else {}
    kind = fields.get("kind")
    if expect == "assistant":
        if kind != "model" or not fields.get("provider") or not fields.get("model"):
            raise _Bad(f"{context}must have model source")
    elif expect == "tool":
        if kind != "tool":
            raise _Bad(f"{context}must have tool source")
    elif not isinstance(kind, str) or not kind or kind in ("model", "tool"):
        raise _Bad(f"{context}invalid source")
    if kind in _KNOWN_SOURCE_KINDS:
        _check_source(source, context)
    content = message.get("content")
    if not isinstance(content, list):
        raise _Bad(f"{context}invalid content: content must be an array of blocks")
    allowed = {"user": _USER_BLOCKS, "assistant": _ASSISTANT_BLOCKS, "tool": _TOOL_RESULT_BLOCKS}[expect]
    for index, block in enumerate(content):
        try:
            msgspec.convert(block, ContentBlock)
        except msgspec.ValidationError as exc:
            raise _Bad(f"{context}invalid content: block {index}: {exc}") from None
        if block["type"] not in allowed:
            raise _Bad(f'{context}invalid content: a {block["type"]} block cannot appear here')
    if expect == "tool":
        results = [block for block in content if block["type"] == "tool-result"]
        if len(results) != 1:
            raise _Bad(f"{context}must contain one tool-result block")
        if results[0]["toolCallId"] != fields["callId"]:
            raise _Bad(f"{context}mismatched tool call ids")


def _check_turn_step(value: dict[str, Any], *, step: bool = True) -> None:
    keys = ("turn", "step") if step else ("turn",)
    for key in keys:
        number = value.get(key)
        if not (is_safe_int(number) and number >= 1):
            raise _Bad(f"{key} must be a safe integer >= 1, got {number!r}")


def _check_request_header(value: dict[str, Any]) -> None:
    header = value.get("header")
    config = header.get("config") if isinstance(header, dict) else None
    if not isinstance(header, dict) or not isinstance(config, dict):
        return  # the strict decode reports the shape
    for key in ("provider", "model", "reasoningEffort"):
        if config.get(key) == "":
            raise _Bad(f"config {key} must not be empty")
    defaults = header.get("adapterDefaults")
    if isinstance(defaults, dict):
        for key in defaults:
            if key not in config:
                raise _Bad(f"adapterDefaults {key} requires config {key}")


def _invariants(type_: str, value: Any) -> bool:
    """Check log-format §9 invariants beyond the Struct shapes; True if a foreign source was met."""
    if type_ == USER_MESSAGE:
        _check_message(value, "user")
        kind: object = value["source"]["kind"]
        return kind not in _KNOWN_SOURCE_KINDS
    if not isinstance(value, dict):
        return False  # the strict decode reports the shape
    if type_ in (TURN_START, TURN_END):
        _check_turn_step(value, step=False)
    elif type_ in (STEP_START, STEP_END, ASSISTANT_MESSAGE, TOOL_CALL, TOOL_RESULT):
        _check_turn_step(value)
    if type_ == ASSISTANT_MESSAGE:
        _check_message(value.get("message"), "assistant")
    elif type_ == TOOL_RESULT:
        _check_message(value.get("message"), "tool")
    elif type_ == TOOL_CALL:
        if value.get("callId") == "":
            raise _Bad("callId must not be empty")
    elif type_ == REQUEST_HEADER:
        _check_request_header(value)
    elif type_ == AGENT_INBOX_SPLICED:
        inserted = value.get("inserted")
        foreign = False
        for index, message in enumerate(inserted if isinstance(inserted, list) else ()):
            _check_message(message, "user", f"inserted message {index} ")
            foreign |= message["source"]["kind"] not in _KNOWN_SOURCE_KINDS
        return foreign
    return False


def decode(event: Event) -> Any:
    """Decode a core event's data strictly and check its invariants (log-format §9.1, log-format §9.2).

    Returns the vocabulary Struct for the type (``ForeignMessage``/``ForeignInboxSpliced`` when
    a user message carries a foreign source kind), or ``None`` for a type outside the core
    vocabulary (never an error: event types are open). Raises ``InvalidEvent`` naming the type
    and seq, with the log-format §9.1 fragments (``lacks an identified message``, ``must have role "user"``,
    ``invalid source``, ``invalid content``, ``must have model source``, ``must have tool
    source``, ``must contain one tool-result block``, ``mismatched tool call ids``).
    """
    cls = CORE_TYPES.get(event.type)
    if cls is None:
        return None
    try:
        foreign = _invariants(event.type, event.value())
        if foreign:
            cls = ForeignMessage if event.type == USER_MESSAGE else ForeignInboxSpliced
        return event.decode(cls)
    except _Bad as exc:
        raise InvalidEvent(f"invalid {event.type} at seq {event.seq}: {exc}") from None
    except msgspec.ValidationError as exc:
        raise InvalidEvent(f"invalid {event.type} at seq {event.seq}: {exc}") from None


# --------------------------------------------------------------------------- log-format §9.3 structure


class _Scope(msgspec.Struct):
    # Lenient view of the fields the structure rules read (unknown keys ignored).
    turn: int | None = None
    step: int | None = None
    call_id: str | None = msgspec.field(default=None, name="callId")


class _Block(msgspec.Struct):
    type: object = None
    id: object = None  # a call id only when it is a string


class _ToolSourceView(msgspec.Struct):
    call_id: object = msgspec.field(default=None, name="callId")  # read only when a string


class _MessageView(msgspec.Struct):
    source: _ToolSourceView | None = None
    content: list[_Block] | None = None


class _MessageScope(msgspec.Struct):
    turn: int | None = None
    step: int | None = None
    message: _MessageView | None = None


_STEP_SCOPED = frozenset({ASSISTANT_MESSAGE, TOOL_CALL, TOOL_RESULT})


def check_structure(events: Iterable[Event]) -> list[str]:
    """Messages for every break of the log-format §9.3 order rules, in log order (empty when
    fine).

    Turns and steps nest (``turn/start``…``turn/end``, ``step/start``…``step/end``);
    ``assistant/message``, ``tool/call`` and ``tool/result`` name the open turn and step; a
    ``tool/result`` answers a ``tool/call`` or a tool-call block of an ``assistant/message`` of
    the same step; steps count up from 1 in each turn; each turn number is the previous plus 1
    (the first is 1). Data the rules cannot read (a field of the wrong type, a call id that is
    not a string) is skipped here; ``decode`` reports it.
    """
    structure = _Structure()
    for event in events:
        structure.feed(event)
    return structure.problems


class _Structure:
    """The state of ``check_structure``: the open turn and step and the step's call ids."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.open_turn: int | None = None
        self.last_turn: int | None = None
        self.open_step: int | None = None
        self.last_step = 0
        self.step_calls: set[str] = set()

    def feed(self, event: Event) -> None:
        kind = event.type
        if kind not in CORE_TYPES:
            return
        where = f"{kind} at seq {event.seq}"
        try:
            scope: _Scope | _MessageScope = (
                event.decode(_MessageScope) if kind in (ASSISTANT_MESSAGE, TOOL_RESULT) else event.decode(_Scope)
            )
        except msgspec.DecodeError:
            return
        if kind == TURN_START:
            self._turn_start(where, scope.turn)
        elif kind == TURN_END:
            self._turn_end(where, scope.turn)
        elif kind == STEP_START:
            self._step_start(where, scope.turn, scope.step)
        elif kind == STEP_END:
            self._step_end(where, scope.turn, scope.step)
        elif kind in _STEP_SCOPED:
            self._in_step(where, scope.turn, scope.step)
            if isinstance(scope, _Scope):  # a tool/call
                if scope.call_id is not None:
                    self.step_calls.add(scope.call_id)
            elif scope.message is not None:
                self._message(where, kind, scope.message)

    def _turn_start(self, where: str, turn: int | None) -> None:
        if self.open_turn is not None:
            self.problems.append(f"{where} opens turn {turn} while turn {self.open_turn} is still open")
        expected = 1 if self.last_turn is None else self.last_turn + 1
        if turn != expected:
            self.problems.append(f"{where} has turn {turn}, expected {expected}")
        self.open_turn = self.last_turn = turn
        self.open_step = None
        self.last_step = 0
        self.step_calls = set()

    def _turn_end(self, where: str, turn: int | None) -> None:
        if self.open_turn is None:
            self.problems.append(f"{where} ends turn {turn}, but no turn is open")
        elif turn != self.open_turn:
            self.problems.append(f"{where} ends turn {turn}, but turn {self.open_turn} is open")
        if self.open_step is not None:
            self.problems.append(f"{where} ends turn {turn} while step {self.open_step} is still open")
        self.open_turn = self.open_step = None

    def _step_start(self, where: str, turn: int | None, step: int | None) -> None:
        if self.open_turn is None:
            self.problems.append(f"{where} starts step {step} outside a turn")
        elif turn != self.open_turn:
            self.problems.append(f"{where} names turn {turn}, but turn {self.open_turn} is open")
        if self.open_step is not None:
            self.problems.append(f"{where} starts step {step} while step {self.open_step} is still open")
        if step != self.last_step + 1:
            self.problems.append(f"{where} has step {step}, expected {self.last_step + 1}")
        self.open_step = self.last_step = step if step is not None else self.last_step + 1
        self.step_calls = set()

    def _step_end(self, where: str, turn: int | None, step: int | None) -> None:
        if self.open_step is None:
            self.problems.append(f"{where} ends step {step}, but no step is open")
        elif (turn, step) != (self.open_turn, self.open_step):
            self.problems.append(
                f"{where} ends turn {turn} step {step}, but turn {self.open_turn} step {self.open_step} is open"
            )
        self.open_step = None

    def _in_step(self, where: str, turn: int | None, step: int | None) -> None:
        if self.open_step is None:
            self.problems.append(f"{where} is outside an open step")
        elif (turn, step) != (self.open_turn, self.open_step):
            self.problems.append(
                f"{where} names turn {turn} step {step}, but turn {self.open_turn} step {self.open_step} is open"
            )

    def _message(self, where: str, kind: str, message: _MessageView) -> None:
        if kind == ASSISTANT_MESSAGE:
            for block in message.content or ():
                if block.type == "tool-call" and isinstance(block.id, str):
                    self.step_calls.add(block.id)
        elif message.source is not None:
            call_id = message.source.call_id
            if isinstance(call_id, str) and call_id not in self.step_calls:
                self.problems.append(
                    f"{where} answers call {call_id!r}, which no tool/call or tool-call block of the same step made"
                )
