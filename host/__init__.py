"""host — the assistant runtime of turnlog (docs/host.md): the only package that wires
``eventlog``, ``schedule`` and ``timecontext`` together, and the only one with a ``main``.

Its layers import downwards only: ``cli`` and ``web`` (the front doors) → ``rpc`` (the JSON-RPC
protocol) → ``runtime`` (agent loop, sessions, tools) → ``models`` (adapters). Each layer is a
public namespace of its own, with explicit re-exports; this module imports none of them, so
``turnlog --version`` and the log commands load no agent runtime:

- ``host.runtime``: ``open_host``, ``Host``, ``HostConfig``, ``LiveSession``, the notifications
  (``EventAppended``, ``StatusChanged``, ``StorageChanged``, ``Delta``, ``ChildCreated``), tools
  (``FunctionTool``, ``ToolContext``, ``ToolError``), ``resolve_root``;
- ``host.models``: ``ModelAdapters``, ``ScriptedAdapter``, ``OpenAIAdapter``, the ``ModelAdapter``
  Protocol, ``ModelRequest`` and the chunk union;
- ``host.rpc``: the JSON-RPC ``Server`` and ``Connection``;
- ``host.testing``: the restart harness (``open_harness``).
"""
