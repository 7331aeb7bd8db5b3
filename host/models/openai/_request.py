"""The request an OpenAI-compatible endpoint is sent (host §6.4 Request). Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from host._process import package_version

from .._adapter import ModelRequest


def _texts(blocks: object) -> list[str]:
    if not isinstance(blocks, list):
        return []
    return [
        b["text"]
        for b in blocks
        if isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _blocks(message: Mapping[str, Any], block_type: str) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, Mapping) and b.get("type") == block_type]


def chat_messages(system: str | None, history: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Map the derived history (log shapes) to chat-completions messages.

    A tool call left without a result before the next non-tool message (or at the end) gets a
    ``(no result recorded)`` tool message, because endpoints reject unanswered calls.
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    unanswered: list[Any] = []  # call ids, as the log holds them

    def answer_the_rest() -> None:
        for call_id in unanswered:
            out.append({"role": "tool", "tool_call_id": call_id, "content": "(no result recorded)"})
        unanswered.clear()

    for message in history:
        results = _blocks(message, "tool-result")
        if results:
            for block in results:
                call_id = block.get("toolCallId")
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "content": "".join(_texts(block.get("content"))) or "(no output)",
                    }
                )
                if call_id in unanswered:
                    unanswered.remove(call_id)
            continue
        answer_the_rest()
        if message.get("role") == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": "".join(_texts(message.get("content")))}
            calls = _blocks(message, "tool-call")
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.get("id"),
                        "type": "function",
                        "function": {"name": c.get("name"), "arguments": c.get("arguments")},
                    }
                    for c in calls
                ]
                unanswered.extend(c.get("id") for c in calls)
            out.append(entry)
        else:
            texts = _texts(message.get("content"))
            if texts:
                out.append({"role": "user", "content": "".join(texts)})
    answer_the_rest()
    return out


def request_body(request: ModelRequest) -> dict[str, Any]:
    """The request body, keys in the order of host §6.4, absent ones omitted (never ``null``)."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": chat_messages(request.system, request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in request.tools
        ]
    if request.max_tokens is not None:
        body["max_tokens"] = request.max_tokens
    if request.reasoning_effort is not None:
        body["reasoning_effort"] = request.reasoning_effort
    return body


def request_headers(api_key: str | None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream",
        "user-agent": f"turnlog/{package_version()}",
    }
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers
