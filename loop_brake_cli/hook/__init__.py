"""Live enforcement for coding agents: ``loop-brake hook`` and its state store.

An agent runs the hook as a new process before every tool call, so the streaks
live in a store (``stores/``, counted with ``streak.step``), the runner (``runner``)
reads the input with the agent's decoder from ``agents/`` (each vendor's
stdin/stdout contract), and ``install`` merges the hook entry into a settings
file. None of these modules imports click or rich: the hook path must start fast.
"""
