"""Live enforcement for coding agents: ``loop-brake hook`` and its state store.

An agent runs the hook as a new process before every tool call, so the streaks
live on disk (``store``), each vendor's stdin/stdout contract lives in
``dialects``, and the settings-file merge for ``hook install`` in ``install``.
None of these modules imports click or rich: the hook path must start fast.
"""
