"""Decoders, one per wire shape: what a message says about one tool call.

A wire shape is a message a front-end receives: an event line (``event_line``),
an MCP ``tools/call`` request (``mcp``), an agent's hook input (``agents/``).
The transcript adapters in ``formats/`` and the live front-ends (the hook, the
MCP proxy) decode through the same functions, so a replayed log and the live
path see the same call. The edge rules every decoder shares are in ``fields``.
Nothing here imports click, rich or the format registry: the hook imports it.
"""
