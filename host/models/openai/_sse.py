"""Server-sent events, decoded incrementally (host §6.4 Streaming). Pure."""

from __future__ import annotations


class SSEDecoder:
    """Incremental SSE decoding: lines end with LF or CRLF, ``:`` comments are skipped, ``data:``
    values (one leading space stripped) are joined with LF until a blank line. Other fields are
    ignored, and events without data are dropped."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[str] = []

    def feed(self, data: bytes) -> list[str]:
        self._buffer += data
        events: list[str] = []
        while (end := self._buffer.find(b"\n")) >= 0:
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._line(line, events)
        return events

    def close(self) -> list[str]:
        """End of input: a final unterminated line and a pending event are delivered."""
        events: list[str] = []
        if self._buffer:
            line = bytes(self._buffer)
            self._buffer.clear()
            self._line(line, events)
        self._line(b"", events)
        return events

    def _line(self, raw: bytes, events: list[str]) -> None:
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw:
            data = "\n".join(self._data)
            self._data.clear()
            if data:
                events.append(data)
            return
        line = raw.decode("utf-8", errors="replace")
        if line.startswith(":"):
            return
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value.removeprefix(" "))
