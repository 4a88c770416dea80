"""What the MCP front-ends share, below them (the MCP SDK's ``mcp/shared/`` is the model).

``mcp_proxy/`` (stdio and ``--url``) and ``mcp_gateway/`` (HTTP, many clients) face
clients differently but write the same things; each is written once here, and a
front-end never imports a sibling (``tests/test_layers.py``):

* ``spans``: byte offsets of JSON values, so forwarded bytes and echoed ids stay
  the client's;
* ``answers``: the JSON-RPC answers a front-end writes itself (the denial, errors,
  the warning spliced into a response);
* ``denials``: the denial as a stderr note (id, tool, prefix, rule; no argument;
  escaped), and repeats summed up rather than said one by one;
* ``headers``: ``--header`` values (``env:NAME``) and ``safe_url``;
* ``verdict_log``: the ``--log`` file (0600, never through a symlink);
* ``pipes``: lines in and whole lines out over raw file descriptors;
* ``transport``: an HTTP failure in words (needs the ``mcp`` extra; imported only
  by the HTTP front-ends).

The MCP wire decoding itself (which message is a call, its session, its result) is
``readers/wire/mcp.py``, shared with ``formats/mcp.py``.
"""
