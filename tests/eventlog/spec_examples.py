"""Worked examples of log-format §12, copied from docs/log-format.md (records without LF).

Tests derive their expectations from these literals, never from the code under test.
"""

from __future__ import annotations

NOT_STARTED_TEXT = 'The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed.'
OUTCOME_UNKNOWN_TEXT = 'The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly.'

# E1: a fresh session (887 bytes; records start at 0, 109, 178, 256, 452, 714, 790).
E1_LINES: list[bytes] = [
    b'{"type":"session","version":0,"id":"demo-1","createdAt":1767261600000,"cwd":"/home/ana","delegationDepth":0}',
    b'{"type":"turn/start","seq":0,"time":1767261600100,"data":{"turn":1}}',
    b'{"type":"step/start","seq":1,"time":1767261600101,"data":{"turn":1,"step":1}}',
    b'{"type":"user/message","seq":2,"time":1767261600102,"data":{"id":"msg-1","role":"user","source":{"kind":"user","rpcId":"7"},"content":[{"type":"text","text":"Caf\xc3\xa9 at 9?"}]},"surfaceOp":"append"}',
    b'{"type":"assistant/message","seq":3,"time":1767261601500,"data":{"turn":1,"step":1,"message":{"id":"msg-2","role":"assistant","source":{"kind":"model","provider":"scripted","model":"demo"},"content":[{"type":"text","text":"Sure, 9:00."}]}},"surfaceOp":"append"}',
    b'{"type":"step/end","seq":4,"time":1767261601501,"data":{"turn":1,"step":1}}',
    b'{"type":"turn/end","seq":5,"time":1767261601502,"data":{"turn":1,"reason":{"kind":"completed"}}}',
]

# E4: the closers after the damaged line 4 (kept: seq 0 turn/start, seq 1 step/start).
E4_CLOSERS: list[bytes] = [
    b'{"type":"step/end","seq":2,"time":1767261600101,"data":{"turn":1,"step":1}}',
    b'{"type":"turn/end","seq":3,"time":1767261600101,"data":{"turn":1,"reason":{"kind":"interrupted"}}}',
]

# E5: turn 2 after E1, killed after the first tool/call.
E5_LINES: list[bytes] = [
    b'{"type":"turn/start","seq":6,"time":1767265200000,"data":{"turn":2}}',
    b'{"type":"step/start","seq":7,"time":1767265200001,"data":{"turn":2,"step":1}}',
    b'{"type":"user/message","seq":8,"time":1767265200002,"data":{"id":"msg-3","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"Read notes.txt and todo.txt"}]},"surfaceOp":"append"}',
    b'{"type":"assistant/message","seq":9,"time":1767265201200,"data":{"turn":2,"step":1,"message":{"id":"msg-4","role":"assistant","source":{"kind":"model","provider":"scripted","model":"demo"},"content":[{"type":"tool-call","id":"call-a","name":"read_file","arguments":"{\\"path\\":\\"notes.txt\\"}"},{"type":"tool-call","id":"call-b","name":"read_file","arguments":"{\\"path\\":\\"todo.txt\\"}"}]}},"surfaceOp":"append"}',
    b'{"type":"tool/call","seq":10,"time":1767265201201,"data":{"turn":2,"step":1,"callId":"call-a","name":"read_file","arguments":"{\\"path\\":\\"notes.txt\\"}"}}',
]

# E5: the closers open-for-write appends.
E5_CLOSERS: list[bytes] = [
    b'{"type":"tool/result","seq":11,"time":1767265201201,"data":{"turn":2,"step":1,"message":{"id":"interrupted-tool-result-call-a-11","role":"user","source":{"kind":"tool","callId":"call-a"},"content":[{"type":"tool-result","toolCallId":"call-a","isError":true,"content":[{"type":"text","text":"The tool call was interrupted after it was recorded, but no result was durably recorded. Its outcome is unknown. Decide whether to retry from the tool semantics: retry only if the operation is read-only or idempotent; if it may have side effects, first verify external state or ask the user. Do not retry blindly."}]}]},"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},"surfaceOp":"append","sourceEventSeqs":[10]}',
    b'{"type":"tool/result","seq":12,"time":1767265201201,"data":{"turn":2,"step":1,"message":{"id":"interrupted-tool-result-call-b-12","role":"user","source":{"kind":"tool","callId":"call-b"},"content":[{"type":"tool-result","toolCallId":"call-b","isError":true,"content":[{"type":"text","text":"The tool call was interrupted before the Harness recorded it as started. Retry it if it is still needed."}]}]},"error":{"name":"ToolNotStartedError","code":"TOOL_NOT_STARTED"}},"surfaceOp":"append"}',
    b'{"type":"step/end","seq":13,"time":1767265201201,"data":{"turn":2,"step":1}}',
    b'{"type":"turn/end","seq":14,"time":1767265201201,"data":{"turn":2,"reason":{"kind":"interrupted"}}}',
]

# E9: the expansion of the packed row.
E9_ROW = b'{"type":"text-chunks","seq0":4,"time0":1000,"data":{"turn":1,"step":1,"index":0,"dt":[12,-3],"texts":["Hel","lo","!"]}}'
E9_EVENTS: list[bytes] = [
    b'{"type":"assistant/chunk","seq":4,"time":1000,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"Hel"}}}',
    b'{"type":"assistant/chunk","seq":5,"time":1012,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"lo"}}}',
    b'{"type":"assistant/chunk","seq":6,"time":1009,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"!"}}}',
]


def log_bytes(lines: list[bytes]) -> bytes:
    """The file holding ``lines``, each followed by LF."""
    return b"".join(line + b"\n" for line in lines)
