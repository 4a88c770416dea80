"""The brake in front of a remote MCP server that many agents share: ``loop-brake mcp-gateway``.

Modules, by responsibility:

* ``keys``: which session a call counts in, and where that key came from;
* ``decide``: the decision for one POSTed body (decoded by ``wire.mcp``, judged
  by ``pipeline.judge``, answered with the stdio proxy's deny answer);
* ``metrics``: what ``GET /metrics`` counts (``--metrics``), written in the
  Prometheus text format by ``mcp_shared.prometheus``;
* ``tenants``: per-tenant policies (``--tenants FILE``): which policy a caller's
  calls are judged under, and the namespace of its sessions;
* ``app``: the ASGI application (Starlette in, ``upstream`` out, streaming both
  ways, limits, header allow-lists);
* ``upstream``: the HTTP/1.1 client to the upstream (keep-alive connections, the
  answer's bytes as they come; failures as ``httpx2``'s classes);
* ``serve``: uvicorn, the listening socket, quiet logging;
* ``store_calls``: a shared store's round trips off the event loop (a bounded pool
  of threads, a deadline per decision);
* ``limits``: the bounds on clients (connections, slow requests, keep-alive),
  memory given back after a flood, and the writes of one loop turn sent as one;
* ``counters``: what the gateway counts about itself (fail-opens, store latency,
  evictions, connections refused or cut).

Needs the ``mcp`` extra (the SDK brings Starlette, uvicorn and httpx2).
"""
